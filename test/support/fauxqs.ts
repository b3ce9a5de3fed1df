/**
 * fauxqs (an SQS- and SNS-compatible server this project did not write, in process) for the
 * queue and topic sender tests: one server a file, started before its tests and stopped after,
 * an SQS client on it to make queues and read them back, and the settings any other SDK client
 * on it (SNS) is built with.
 */
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll } from 'vitest';

/**
 * What the tests' SDK clients and senders sign with: fauxqs, and the servers that play back AWS's
 * answers, take any credentials, but a client still needs some.
 */
export const TEST_AWS_CREDENTIALS = {
  accessKeyId: 'AKIDLOCALTEST',
  secretAccessKey: 'local-test-secret',
};
/** The region the tests' clients, senders and topic ARNs name. */
export const TEST_AWS_REGION = 'us-east-1';

/** What an SDK client on the server is built with. */
export interface FauxqsClientConfig {
  endpoint: string;
  region: string;
  credentials: typeof TEST_AWS_CREDENTIALS;
}

export interface Fauxqs {
  server: FauxqsServer;
  /** An SQS client on the server. */
  sqs: SQSClient;
  client: FauxqsClientConfig;
  /** Every message on the queue, received and deleted until it comes back empty. */
  receiveAll(queueUrl: string): Promise<Message[]>;
}

/** Registers hooks that start this file's fauxqs before its tests and stop it after. */
export function useFauxqs(): Fauxqs {
  const handle = {} as Fauxqs;
  beforeAll(async () => {
    const server = await startFauxqs({ port: 0, logger: false });
    const client = {
      endpoint: server.address,
      region: TEST_AWS_REGION,
      credentials: TEST_AWS_CREDENTIALS,
    };
    const sqs = new SQSClient(client);
    Object.assign(handle, {
      server,
      sqs,
      client,
      receiveAll: (queueUrl: string) => receiveAll(sqs, queueUrl),
    });
  });
  afterAll(async () => {
    handle.sqs?.destroy();
    await handle.server?.stop();
  });
  return handle;
}

async function receiveAll(sqs: SQSClient, queueUrl: string): Promise<Message[]> {
  const received: Message[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
      }),
    );
    if (Messages.length === 0) return received;
    received.push(...Messages);
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle!,
        })),
      }),
    );
  }
}
