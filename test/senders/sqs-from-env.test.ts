/**
 * The SQS sender from a deployment's environment, and the local SQS endpoint `npm start` runs
 * (fauxqs on loopback): what each variable sets, the mistakes named, and one message through
 * the real SDK to a local queue.
 */
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalSqs, localSqsEnv, startLocalSqs } from '../../src/dev/local-sqs.js';
import {
  SQS_MESSAGE_KEY_ATTRIBUTE,
  sqsConfigFromEnv,
  sqsSenderFromEnv,
} from '../../src/senders/sqs/index.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';

describe('sqsConfigFromEnv', () => {
  it('is undefined without OUTBOX_SQS_QUEUE_URL: no queue, no sender', () => {
    expect(sqsConfigFromEnv({ AWS_REGION: 'us-east-1' })).toBeUndefined();
    expect(sqsSenderFromEnv({ OUTBOX_SQS_QUEUE_URL: '  ' })).toBeUndefined();
  });

  it("reads the queue, and the region from OUTBOX_SQS_REGION before Lambda's AWS_REGION", () => {
    expect(
      sqsConfigFromEnv({
        OUTBOX_SQS_QUEUE_URL: QUEUE_URL,
        OUTBOX_SQS_REGION: 'eu-west-1',
        AWS_REGION: 'us-east-2',
        AWS_ACCESS_KEY_ID: 'AKID',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SESSION_TOKEN: 'token',
        AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566',
      }),
    ).toEqual({
      queueUrl: QUEUE_URL,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' },
      endpoint: 'http://127.0.0.1:4566',
    });
  });

  it("takes the region from the queue URL's host when no variable gives one, and leaves credentials to the SDK", () => {
    expect(sqsConfigFromEnv({ OUTBOX_SQS_QUEUE_URL: QUEUE_URL })).toEqual({
      queueUrl: QUEUE_URL,
      region: 'eu-west-1',
    });
  });

  it('names the variable that is wrong or missing', () => {
    expect(() => sqsConfigFromEnv({ OUTBOX_SQS_QUEUE_URL: 'orders' })).toThrow(
      /OUTBOX_SQS_QUEUE_URL must be a queue URL/,
    );
    expect(() =>
      sqsConfigFromEnv({ OUTBOX_SQS_QUEUE_URL: 'http://127.0.0.1:4566/000000000000/orders' }),
    ).toThrow(/set OUTBOX_SQS_REGION \(or AWS_REGION\)/);
    expect(() =>
      sqsConfigFromEnv({ OUTBOX_SQS_QUEUE_URL: QUEUE_URL, OUTBOX_SQS_REGION: 'Ireland' }),
    ).toThrow(/OUTBOX_SQS_REGION must be an AWS region such as us-east-1, got "Ireland"/);
    expect(() =>
      sqsConfigFromEnv({ OUTBOX_SQS_QUEUE_URL: QUEUE_URL, AWS_ACCESS_KEY_ID: 'AKID' }),
    ).toThrow(/SQS sender: set AWS_SECRET_ACCESS_KEY/);
  });
});

describe('the local SQS endpoint', () => {
  let sqs: LocalSqs;
  beforeAll(async () => {
    sqs = await startLocalSqs();
  });
  afterAll(async () => {
    await sqs?.close();
  });

  it('takes a message from the sender its env describes, and shows it without receiving it', async () => {
    const queueUrl = await sqs.createQueue('order-events');
    const sender = sqsSenderFromEnv(localSqsEnv(sqs, queueUrl));
    const message = outboundMessage('order.placed', { order: { id: 'o-1' } });
    expect(await sender!.send([message], openSignal())).toEqual([
      { delivered: true, receipt: { status: 200, destination: queueUrl } },
    ]);
    const state = (await (await fetch(sqs.inspectUrl('order-events'))).json()) as {
      messages: {
        ready: { body: string; messageAttributes: Record<string, { StringValue: string }> }[];
      };
    };
    expect(state.messages.ready).toHaveLength(1);
    expect(JSON.parse(state.messages.ready[0]!.body)).toEqual({ order: { id: 'o-1' } });
    expect(state.messages.ready[0]!.messageAttributes[SQS_MESSAGE_KEY_ATTRIBUTE]?.StringValue).toBe(
      message.key,
    );
  });

  it('listens on loopback only', async (context) => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address?.family === 'IPv4' && !address.internal);
    if (external === undefined) {
      return context.skip('this machine has no IPv4 address but loopback to try the server from');
    }
    const refused = await fetch(`http://${external.address}:${sqs.port}/_fauxqs/queues`).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);
  });
});
