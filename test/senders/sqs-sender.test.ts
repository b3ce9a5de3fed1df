/**
 * The SQS sender against an SQS-compatible server this project did not write (fauxqs, in
 * process, speaking the JSON protocol the real @aws-sdk/client-sqs uses), through real drains
 * over PostgreSQL: standard and FIFO queues, 1,000 messages each, a batch that SQS partly
 * refuses, and a whole call refused; and SQS's error answers played back by a loopback server.
 */
import { CreateQueueCommand, type Message } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { isRetryableDeliveryError } from '../../src/core/errors.js';
import type { BatchSender } from '../../src/core/sender.js';
import {
  SQS_BLOCKED_RETRY_AFTER_MS,
  SQS_MESSAGE_KEY_ATTRIBUTE,
  SQS_THROTTLED_RETRY_AFTER_MS,
  type SqsSenderConfig,
  sqsSender,
} from '../../src/senders/sqs/index.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { TEST_AWS_CREDENTIALS, TEST_AWS_REGION, useFauxqs } from '../support/fauxqs.js';
import { startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const database = useTestDatabase();
const fauxqs = useFauxqs();
let queues = 0;

/** A new queue on the server; FIFO when `fifo`. */
async function newQueue(fifo = false, attributes: Record<string, string> = {}): Promise<string> {
  queues += 1;
  const { QueueUrl } = await fauxqs.sqs.send(
    new CreateQueueCommand({
      QueueName: `outbox-${queues}${fifo ? '.fifo' : ''}`,
      Attributes: fifo ? { FifoQueue: 'true', ...attributes } : attributes,
    }),
  );
  return QueueUrl!;
}

function senderFor(queueUrl: string, overrides: Partial<SqsSenderConfig> = {}): BatchSender {
  return sqsSender({
    queueUrl,
    region: TEST_AWS_REGION,
    credentials: TEST_AWS_CREDENTIALS,
    endpoint: fauxqs.server.address,
    ...overrides,
  });
}

const keyOf = (message: Message) =>
  message.MessageAttributes?.[SQS_MESSAGE_KEY_ATTRIBUTE]?.StringValue;

describe('the SQS sender through drains, through node-pg', () => {
  const driver = useDriver('node-pg', database);

  it('delivers 1,000 messages to a standard queue ten a call, each once, with its key beside its payload', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 1000 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const queueUrl = await newQueue();
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(queueUrl) } });
    expect(report).toMatchObject({ delivered: 1000, released: 0, retried: 0, dead: 0 });
    expect(report.sends).toBeLessThanOrEqual(110);
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received.map(keyOf).sort()).toEqual([...keys].sort());
    const index = new Map(keys.map((key, at) => [key, at]));
    for (const message of received) {
      expect(JSON.parse(message.Body!)).toEqual({ index: index.get(keyOf(message)!) });
    }
  });

  it('keeps each ordering key in order on a FIFO queue, its key the group and the message key the deduplication id', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 1000 }, (_, index) => ({
        kind: 'test.kind',
        payload: { index },
        orderingKey: `customer/${index % 10}`,
      })),
    );
    const queueUrl = await newQueue(true);
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(queueUrl) } });
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

  it('settles a batch SQS partly refused message by message: the ones too long for the queue set aside, the rest delivered', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 30 }, (_, index) => ({
        kind: 'test.kind',
        payload: { index, note: index % 5 === 0 ? 'x'.repeat(2000) : 'short' },
      })),
    );
    const queueUrl = await newQueue(false, { MaximumMessageSize: '1024' });
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(queueUrl) } });
    expect(report).toMatchObject({ delivered: 24, dead: 6, retried: 0 });
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received.map(keyOf).sort()).toEqual(keys.filter((_, index) => index % 5 !== 0).sort());
    const refused = await store.getByKey(keys[0]!);
    expect(refused).toMatchObject({ state: 'dead' });
    expect(refused?.lastError).toContain('InvalidParameterValue');
  });

  it('retries every message of a call to a queue that does not exist an hour later, for an operator to fix', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { n: 1 } },
      { kind: 'test.kind', payload: { n: 2 } },
    ]);
    const missing = `${new URL('/000000000000/no-such-queue', fauxqs.server.address)}`;
    const before = Date.now();
    const report = await drainOnce({ store, senders: { 'test.kind': senderFor(missing) } });
    expect(report).toMatchObject({ delivered: 0, retried: 2, sends: 1 });
    const message = await store.getByKey(keys[0]!);
    expect(message?.state).toBe('pending');
    expect(message?.dueAt.getTime()).toBeGreaterThanOrEqual(before + SQS_BLOCKED_RETRY_AFTER_MS);
    expect(message?.lastError).toMatch(/QueueDoesNotExist|NonExistentQueue/);
  });
});

describe('the SQS sender called directly', () => {
  /** A send context that counts what the sender spends. */
  function countingContext() {
    const spent: string[] = [];
    return { spent, context: { run: {}, spend: (_n: number, what: string) => spent.push(what) } };
  }

  it('sends a batch over 1 MiB of bodies in two calls, spending a subrequest on the second', async () => {
    const queueUrl = await newQueue();
    const messages = Array.from({ length: 10 }, (_, index) =>
      outboundMessage('order.placed', { index, note: 'x'.repeat(200_000) }),
    );
    const { spent, context } = countingContext();
    const results = await senderFor(queueUrl).send(messages, openSignal(), context);
    expect(results.every((result) => result.delivered)).toBe(true);
    expect(spent).toHaveLength(1);
    const received = await fauxqs.receiveAll(queueUrl);
    expect(received.map(keyOf).sort()).toEqual(messages.map((message) => message.key).sort());
  });

  it('lets a FIFO queue drop a message sent again under the same key (a resend after a crash)', async () => {
    const queueUrl = await newQueue(true);
    const message = outboundMessage('order.placed', { n: 1 }, { orderingKey: 'customer/1' });
    const sender = senderFor(queueUrl);
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [result] = await sender.send([{ ...message, attempt }], openSignal());
      expect(result?.delivered).toBe(true);
    }
    expect((await fauxqs.receiveAll(queueUrl)).map(keyOf)).toEqual([message.key]);
  });
});

describe('the SQS sender on SQS error answers', () => {
  it('retries a throttled call after a pause, every message of it alike', async () => {
    const throttling = await startLoopbackServer((_request, response) => {
      response.writeHead(400, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-query-error': 'AWS.SimpleQueueService.RequestThrottled;Sender',
      });
      response.end(
        JSON.stringify({ __type: 'com.amazonaws.sqs#RequestThrottled', message: 'Rate exceeded' }),
      );
    });
    try {
      const sender = sqsSender({
        queueUrl: `${throttling.url}/000000000000/orders`,
        region: TEST_AWS_REGION,
        credentials: TEST_AWS_CREDENTIALS,
        endpoint: throttling.url,
      });
      const results = await sender.send(
        [outboundMessage('order.placed', { n: 1 }), outboundMessage('order.placed', { n: 2 })],
        openSignal(),
      );
      expect(results).toHaveLength(2);
      for (const result of results) {
        expect(result.delivered).toBe(false);
        const error = result.delivered ? undefined : result.error;
        expect(isRetryableDeliveryError(error)).toBe(true);
        expect(error).toMatchObject({ retryAfterMs: SQS_THROTTLED_RETRY_AFTER_MS });
      }
    } finally {
      await throttling.close();
    }
  });

  it('refuses a configuration it could never send with, before any send', () => {
    const base = { queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q', region: 'eu-west-1' };
    for (const config of [
      { ...base, queueUrl: 'not a url' },
      { ...base, region: '' },
      { ...base, credentials: { accessKeyId: 'AKID', secretAccessKey: '' } },
      { ...base, unorderedGroupId: 'x'.repeat(129) },
    ]) {
      expect(() => sqsSender(config), JSON.stringify(config)).toThrow(/SQS sender/);
    }
  });
});
