/**
 * The SNS sender from a deployment's environment: what each variable sets, the mistakes named,
 * and one message through the real SDK to a local SNS topic (fauxqs in process, whose message
 * spy shows what was published).
 */
import { CreateTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SNS_MESSAGE_KEY_ATTRIBUTE,
  snsConfigFromEnv,
  snsSenderFromEnv,
} from '../../src/senders/sns/index.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:orders';

describe('snsConfigFromEnv', () => {
  it('is undefined without OUTBOX_SNS_TOPIC_ARN: no topic, no sender', () => {
    expect(snsConfigFromEnv({ AWS_REGION: 'us-east-1' })).toBeUndefined();
    expect(snsSenderFromEnv({ OUTBOX_SNS_TOPIC_ARN: '  ' })).toBeUndefined();
  });

  it('reads the topic, its region, the credentials and the SNS endpoint before the shared one', () => {
    expect(
      snsConfigFromEnv({
        OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN,
        OUTBOX_SNS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKID',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SESSION_TOKEN: 'token',
        AWS_ENDPOINT_URL_SNS: 'http://127.0.0.1:4566',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9999',
      }),
    ).toEqual({
      topicArn: TOPIC_ARN,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' },
      endpoint: 'http://127.0.0.1:4566',
    });
  });

  it("takes the region from the topic ARN, not from Lambda's AWS_REGION, and leaves credentials to the SDK", () => {
    expect(
      snsConfigFromEnv({
        OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN,
        AWS_REGION: 'us-east-2',
        AWS_DEFAULT_REGION: 'us-east-2',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
      }),
    ).toEqual({ topicArn: TOPIC_ARN, region: 'eu-west-1', endpoint: 'http://127.0.0.1:4566' });
  });

  it('names the variable that is wrong', () => {
    expect(() => snsConfigFromEnv({ OUTBOX_SNS_TOPIC_ARN: 'orders' })).toThrow(
      /OUTBOX_SNS_TOPIC_ARN must be a topic ARN such as arn:aws:sns:eu-west-1:123456789012:orders, got "orders"/,
    );
    expect(() =>
      snsConfigFromEnv({ OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN, OUTBOX_SNS_REGION: 'Ireland' }),
    ).toThrow(/OUTBOX_SNS_REGION must be an AWS region such as us-east-1, got "Ireland"/);
    expect(() =>
      snsConfigFromEnv({ OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN, OUTBOX_SNS_REGION: 'us-east-1' }),
    ).toThrow(
      /OUTBOX_SNS_REGION is us-east-1, but the topic in OUTBOX_SNS_TOPIC_ARN is in eu-west-1/,
    );
    expect(() =>
      snsConfigFromEnv({ OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN, AWS_ACCESS_KEY_ID: 'AKID' }),
    ).toThrow(/SNS sender: set AWS_SECRET_ACCESS_KEY/);
    expect(() =>
      snsSenderFromEnv({ OUTBOX_SNS_TOPIC_ARN: TOPIC_ARN, AWS_ENDPOINT_URL_SNS: 'localhost' }),
    ).toThrow(/SNS sender: endpoint "localhost" is not a URL/);
  });
});

describe('a local SNS topic', () => {
  let server: FauxqsServer;
  beforeAll(async () => {
    server = await startFauxqs({ port: 0, logger: false, messageSpies: true });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('takes a message from the sender its env describes, its key in the message attribute', async () => {
    const env = {
      AWS_ENDPOINT_URL_SNS: server.address,
      AWS_ACCESS_KEY_ID: 'AKIDLOCALTEST',
      AWS_SECRET_ACCESS_KEY: 'local-test-secret',
    };
    const sns = new SNSClient({
      endpoint: server.address,
      region: 'us-east-1',
      credentials: {
        accessKeyId: env.AWS_ACCESS_KEY_ID,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      },
    });
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'order-events' }));
    sns.destroy();
    const sender = snsSenderFromEnv({ ...env, OUTBOX_SNS_TOPIC_ARN: TopicArn });
    const message = outboundMessage('order.placed', { order: { id: 'o-1' } });
    expect(await sender!.send([message], openSignal())).toEqual([
      { delivered: true, receipt: { status: 200, destination: TopicArn } },
    ]);
    const published = await server.spy.waitForMessage({
      service: 'sns',
      topicName: 'order-events',
      status: 'published',
    });
    if (published.service !== 'sns') throw new Error('the spy answered for another service');
    expect(JSON.parse(published.body)).toEqual({ order: { id: 'o-1' } });
    expect(published.messageAttributes[SNS_MESSAGE_KEY_ATTRIBUTE]).toMatchObject({
      DataType: 'String',
      StringValue: message.key,
    });
  });
});
