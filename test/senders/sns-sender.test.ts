/**
 * The SNS sender against an SNS-compatible server this project did not write (fauxqs, in
 * process, speaking the query protocol the real @aws-sdk/client-sns uses), through real drains
 * over PostgreSQL: standard and FIFO topics, 1,000 messages each, read back from an SQS queue
 * subscribed to each topic with raw message delivery, and a publish to a topic that does not
 * exist. fauxqs refuses no entry this sender would send (its only per-entry refusal, a message
 * over 256 KiB, the sender sets aside itself), so SNS's partial refusals and throttling are
 * played back by a loopback server.
 */
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, type Message } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { isPermanentDeliveryError, isRetryableDeliveryError } from '../../src/core/errors.js';
import type { BatchSender } from '../../src/core/sender.js';
import {
  SNS_BLOCKED_RETRY_AFTER_MS,
  SNS_MESSAGE_KEY_ATTRIBUTE,
  SNS_THROTTLED_RETRY_AFTER_MS,
  type SnsSenderConfig,
  snsSender,
} from '../../src/senders/sns/index.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { TEST_AWS_CREDENTIALS, TEST_AWS_REGION, useFauxqs } from '../support/fauxqs.js';
import { type ReceivedRequest, startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const database = useTestDatabase();
const fauxqs = useFauxqs();
/** The account fauxqs puts every topic in, and a topic ARN's for the played-back answers. */
const ACCOUNT = '000000000000';
const SNS_XMLNS = 'http://sns.amazonaws.com/doc/2010-03-31/';

let sns: SNSClient;
let topics = 0;

beforeAll(() => {
  sns = new SNSClient(fauxqs.client);
});
afterAll(() => {
  sns?.destroy();
});

/**
 * A new topic on the server (FIFO when `fifo`) and a queue of the same kind subscribed to it
 * with raw message delivery, so the queue holds each message as published: its body, its
 * attributes and, from a FIFO topic, its group and deduplication ids.
 */
async function newTopic(fifo = false): Promise<{ topicArn: string; queueUrl: string }> {
  topics += 1;
  const suffix = fifo ? '.fifo' : '';
  const { TopicArn } = await sns.send(
    new CreateTopicCommand({
      Name: `outbox-${topics}${suffix}`,
      Attributes: fifo ? { FifoTopic: 'true' } : {},
    }),
  );
  const { QueueUrl } = await fauxqs.sqs.send(
    new CreateQueueCommand({
      QueueName: `outbox-${topics}-subscriber${suffix}`,
      Attributes: fifo ? { FifoQueue: 'true' } : {},
    }),
  );
  const { Attributes } = await fauxqs.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  await sns.send(
    new SubscribeCommand({
      TopicArn,
      Protocol: 'sqs',
      Endpoint: Attributes?.QueueArn,
      Attributes: { RawMessageDelivery: 'true' },
    }),
  );
  return { topicArn: TopicArn!, queueUrl: QueueUrl! };
}

function senderFor(topicArn: string, overrides: Partial<SnsSenderConfig> = {}): BatchSender {
  return snsSender({
    topicArn,
    region: TEST_AWS_REGION,
    credentials: TEST_AWS_CREDENTIALS,
    endpoint: fauxqs.server.address,
    ...overrides,
  });
}

const keyOf = (message: Message) =>
  message.MessageAttributes?.[SNS_MESSAGE_KEY_ATTRIBUTE]?.StringValue;

describe('the SNS sender through drains, through node-pg', () => {
  const driver = useDriver('node-pg', database);

  it('publishes 1,000 messages to a standard topic ten a call, each reaching a subscribed queue once with its key beside its payload', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 1000 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const { topicArn, queueUrl } = await newTopic();
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(topicArn) } });
    expect(report).toMatchObject({ delivered: 1000, released: 0, retried: 0, dead: 0 });
    expect(report.sends).toBeLessThanOrEqual(110);
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received.map(keyOf).sort()).toEqual([...keys].sort());
    const index = new Map(keys.map((key, at) => [key, at]));
    for (const message of received) {
      expect(JSON.parse(message.Body!)).toEqual({ index: index.get(keyOf(message)!) });
    }
  });

  it('keeps each ordering key in order on a FIFO topic, its key the group and the message key the deduplication id', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 1000 }, (_, index) => ({
        kind: 'test.kind',
        payload: { index },
        orderingKey: `customer/${index % 10}`,
      })),
    );
    const { topicArn, queueUrl } = await newTopic(true);
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(topicArn) } });
    expect(report).toMatchObject({ delivered: 1000, released: 0 });
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received).toHaveLength(1000);
    for (const message of received) {
      const key = keyOf(message)!;
      expect(message.Attributes).toMatchObject({
        MessageGroupId: `customer/${keys.indexOf(key) % 10}`,
        MessageDeduplicationId: key,
      });
    }
    for (let group = 0; group < 10; group++) {
      const ofGroup = received.filter(
        (message) => message.Attributes?.MessageGroupId === `customer/${group}`,
      );
      expect(ofGroup.map(keyOf)).toEqual(keys.filter((_, index) => index % 10 === group));
    }
  });

  it('retries every message of a call to a topic that does not exist an hour later, for an operator to fix', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { n: 1 } },
      { kind: 'test.kind', payload: { n: 2 } },
    ]);
    const missing = `arn:aws:sns:${TEST_AWS_REGION}:${ACCOUNT}:no-such-topic`;
    const before = Date.now();
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(missing) } });
    expect(report).toMatchObject({ delivered: 0, retried: 2, sends: 1 });
    const message = await store.getByKey(keys[0]!);
    expect(message?.state).toBe('pending');
    expect(message?.dueAt.getTime()).toBeGreaterThanOrEqual(before + SNS_BLOCKED_RETRY_AFTER_MS);
    expect(message?.lastError).toMatch(/NotFound.*An operator must act/);
  });

  it("settles a batch SNS partly refused message by message: the sender's fault set aside, SNS's own retried, the rest delivered", async () => {
    const refusing = await startPlayback((entries) => ({
      failed: entries
        .filter(({ payload }) => payload.index % 5 < 2)
        .map(({ id, payload }) =>
          payload.index % 5 === 0
            ? { id, code: 'InvalidParameter', message: 'Invalid parameter', senderFault: true }
            : { id, code: 'ServiceFailure', message: 'Try again', senderFault: false },
        ),
    }));
    try {
      const { outbox, store } = await freshOutbox(driver);
      const keys = await outbox.enqueue(
        driver.db,
        Array.from({ length: 30 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
      );
      const sender = snsSender({
        topicArn: `arn:aws:sns:${TEST_AWS_REGION}:${ACCOUNT}:orders`,
        region: TEST_AWS_REGION,
        credentials: TEST_AWS_CREDENTIALS,
        endpoint: refusing.url,
      });
      const report = await drainOnce({ store, senders: { 'test.kind': sender } });
      expect(report).toMatchObject({ delivered: 18, dead: 6, retried: 6 });
      const states = await Promise.all(keys.map((key) => store.getByKey(key)));
      expect(states.map((message) => message?.state)).toEqual(
        keys.map(
          (_, index) => ['dead', 'pending', 'delivered', 'delivered', 'delivered'][index % 5],
        ),
      );
      expect(states[0]?.lastError).toContain('SNS InvalidParameter: Invalid parameter');
      expect(states[1]?.lastError).toContain('SNS ServiceFailure: Try again');
      // Every entry carried its message key as the attribute a subscriber deduplicates on.
      const sent = refusing.received().map(({ key }) => key);
      expect(sent.sort()).toEqual([...keys].sort());
      expect(refusing.published().map(({ key }) => key)).toHaveLength(18);
    } finally {
      await refusing.close();
    }
  });
});

describe('the SNS sender called directly', () => {
  /** A send context that counts what the sender spends. */
  function countingContext() {
    const spent: string[] = [];
    return { spent, context: { run: {}, spend: (_n: number, what: string) => spent.push(what) } };
  }

  it('publishes a batch over 256 KiB in two calls, spending a subrequest on the second', async () => {
    const { topicArn, queueUrl } = await newTopic();
    const messages = Array.from({ length: 10 }, (_, index) =>
      outboundMessage('order.placed', { index, note: 'x'.repeat(30_000) }),
    );
    const { spent, context } = countingContext();
    const results = await senderFor(topicArn).send(messages, openSignal(), context);
    expect(results.every((result) => result.delivered)).toBe(true);
    expect(spent).toEqual(['SNS PublishBatch for the rest of a batch over 256 KiB']);
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received.map(keyOf).sort()).toEqual(messages.map((message) => message.key).sort());
  });

  it('sets a message over 256 KiB aside as dead without a call, and publishes the rest of its batch', async () => {
    const playback = await startPlayback(() => ({ failed: [] }));
    try {
      const sender = snsSender({
        topicArn: `arn:aws:sns:${TEST_AWS_REGION}:${ACCOUNT}:orders`,
        region: TEST_AWS_REGION,
        credentials: TEST_AWS_CREDENTIALS,
        endpoint: playback.url,
      });
      const tooLong = outboundMessage('order.placed', { note: 'x'.repeat(256 * 1024) });
      const [alone] = await sender.send([tooLong], openSignal());
      expect(playback.requests).toHaveLength(0);
      const error = alone?.delivered ? undefined : alone?.error;
      expect(isPermanentDeliveryError(error)).toBe(true);
      expect(String(error)).toMatch(/over SNS's limit of 262144 bytes a message/);

      const short = outboundMessage('order.placed', { note: 'short' });
      const results = await sender.send([tooLong, short], openSignal());
      expect(results.map((result) => result.delivered)).toEqual([false, true]);
      expect(playback.published().map(({ key }) => key)).toEqual([short.key]);
    } finally {
      await playback.close();
    }
  });

  it('lets a FIFO topic drop a message published again under the same key (a resend after a crash)', async () => {
    const { topicArn, queueUrl } = await newTopic(true);
    const message = outboundMessage('order.placed', { n: 1 }, { orderingKey: 'customer/1' });
    const sender = senderFor(topicArn);
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [result] = await sender.send([{ ...message, attempt }], openSignal());
      expect(result?.delivered).toBe(true);
    }
    expect((await fauxqs.receiveAll(queueUrl)).map(keyOf)).toEqual([message.key]);
  });

  it('groups an ordering key SNS would not take under its hash, the same key always the same group', async () => {
    const { topicArn, queueUrl } = await newTopic(true);
    const orderingKey = `customer/${'é'.repeat(200)}`;
    const messages = [1, 2].map((n) => outboundMessage('order.placed', { n }, { orderingKey }));
    const sender = senderFor(topicArn);
    for (const message of messages) {
      expect((await sender.send([message], openSignal()))[0]?.delivered).toBe(true);
    }
    const groups = (await fauxqs.receiveAll(queueUrl)).map(
      (message) => message.Attributes?.MessageGroupId,
    );
    expect(groups).toHaveLength(2);
    expect(groups[0]).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(groups[1]).toBe(groups[0]);
  });
});

describe('the SNS sender on SNS error answers', () => {
  it('retries a throttled call after a pause, every message of it alike', async () => {
    // SNS's own `Throttled` (HTTP 429) and the `Throttling` code of AWS's common errors.
    for (const [status, code] of [
      [429, 'Throttled'],
      [400, 'Throttling'],
    ] as const) {
      const throttling = await startLoopbackServer((_request, response) => {
        response.writeHead(status, { 'content-type': 'text/xml' });
        response.end(errorResponse(code, 'Rate exceeded'));
      });
      try {
        const sender = snsSender({
          topicArn: `arn:aws:sns:${TEST_AWS_REGION}:${ACCOUNT}:orders`,
          region: TEST_AWS_REGION,
          credentials: TEST_AWS_CREDENTIALS,
          endpoint: throttling.url,
        });
        const results = await sender.send(
          [outboundMessage('order.placed', { n: 1 }), outboundMessage('order.placed', { n: 2 })],
          openSignal(),
        );
        expect(results, code).toHaveLength(2);
        for (const result of results) {
          expect(result.delivered, code).toBe(false);
          const error = result.delivered ? undefined : result.error;
          expect(isRetryableDeliveryError(error), code).toBe(true);
          expect(error, code).toMatchObject({
            retryAfterMs: SNS_THROTTLED_RETRY_AFTER_MS,
            status,
          });
          expect(String(error), code).toContain(`(HTTP ${status}): Rate exceeded`);
        }
        expect(throttling.requests, code).toHaveLength(1);
      } finally {
        await throttling.close();
      }
    }
  });

  it('refuses a configuration it could never send with, before any send', () => {
    const base = { topicArn: 'arn:aws:sns:eu-west-1:123456789012:orders', region: 'eu-west-1' };
    for (const config of [
      { ...base, topicArn: 'orders' },
      { ...base, topicArn: 'https://sns.eu-west-1.amazonaws.com/orders' },
      { ...base, topicArn: 'arn:aws:sqs:eu-west-1:123456789012:orders' },
      { ...base, region: '' },
      { ...base, region: 'us-east-1' },
      { ...base, credentials: { accessKeyId: 'AKID', secretAccessKey: '' } },
      { ...base, endpoint: 'not a url' },
      { ...base, unorderedGroupId: 'x'.repeat(129) },
    ]) {
      expect(() => snsSender(config), JSON.stringify(config)).toThrow(/SNS sender/);
    }
    expect(() => snsSender(base)).not.toThrow();
    expect(() =>
      snsSender({
        ...base,
        topicArn: 'arn:aws-cn:sns:cn-north-1:123456789012:orders.fifo',
        region: 'cn-north-1',
      }),
    ).not.toThrow();
  });
});

/** One entry of a `PublishBatch` request, as the played-back server read it. */
interface PublishedEntry {
  id: string;
  payload: { index: number };
  key: string | undefined;
}

interface EntryFailure {
  id: string;
  code: string;
  message: string;
  senderFault: boolean;
}

/**
 * A loopback server answering `PublishBatch` as SNS does, with the entries `refuse` picks in the
 * `Failed` list and the rest in `Successful`; `received()` lists every entry it read, and
 * `published()` those it took.
 */
async function startPlayback(refuse: (entries: PublishedEntry[]) => { failed: EntryFailure[] }) {
  const read: PublishedEntry[] = [];
  const taken: PublishedEntry[] = [];
  const loopback = await startLoopbackServer((request, response) => {
    const entries = publishedEntries(request);
    read.push(...entries);
    const { failed } = refuse(entries);
    const refused = new Set(failed.map(({ id }) => id));
    const successful = entries.filter(({ id }) => !refused.has(id));
    taken.push(...successful);
    response.writeHead(200, { 'content-type': 'text/xml' });
    response.end(
      [
        `<PublishBatchResponse xmlns="${SNS_XMLNS}"><PublishBatchResult>`,
        '<Successful>',
        ...successful.map(
          ({ id }) =>
            `<member><Id>${id}</Id><MessageId>${crypto.randomUUID()}</MessageId></member>`,
        ),
        '</Successful><Failed>',
        ...failed.map(
          ({ id, code, message, senderFault }) =>
            `<member><Id>${id}</Id><Code>${code}</Code><Message>${message}</Message><SenderFault>${senderFault}</SenderFault></member>`,
        ),
        '</Failed></PublishBatchResult>',
        `<ResponseMetadata><RequestId>${crypto.randomUUID()}</RequestId></ResponseMetadata>`,
        '</PublishBatchResponse>',
      ].join(''),
    );
  });
  return { ...loopback, received: () => read, published: () => taken };
}

/** The entries of a query-protocol `PublishBatch` request body. */
function publishedEntries(request: ReceivedRequest): PublishedEntry[] {
  const form = new URLSearchParams(request.body);
  expect(form.get('Action')).toBe('PublishBatch');
  const entries: PublishedEntry[] = [];
  for (let member = 1; form.has(`PublishBatchRequestEntries.member.${member}.Id`); member++) {
    const prefix = `PublishBatchRequestEntries.member.${member}`;
    const attribute = `${prefix}.MessageAttributes.entry.1`;
    entries.push({
      id: form.get(`${prefix}.Id`)!,
      payload: JSON.parse(form.get(`${prefix}.Message`)!),
      key:
        form.get(`${attribute}.Name`) === SNS_MESSAGE_KEY_ATTRIBUTE
          ? (form.get(`${attribute}.Value.StringValue`) ?? undefined)
          : undefined,
    });
  }
  return entries;
}

/** An SNS query-protocol error answer. */
function errorResponse(code: string, message: string): string {
  return `<ErrorResponse xmlns="${SNS_XMLNS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${crypto.randomUUID()}</RequestId></ErrorResponse>`;
}
