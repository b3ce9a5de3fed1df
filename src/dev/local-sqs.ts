/**
 * A local SQS endpoint (npm `fauxqs`, an SQS-compatible server speaking the JSON protocol the
 * real `@aws-sdk/client-sqs` uses): the SQS sender sends to it, and what each queue holds shows
 * at `GET /_fauxqs/queues/NAME` (JSON). Development and tests only; on 127.0.0.1 alone.
 *
 * The server is an optional peer loaded when `startLocalSqs` runs, not when `outbox-relay/dev`
 * is imported: a project that never sends to SQS need not install it.
 */

export interface LocalSqs {
  url: string;
  port: number;
  /** Creates a standard queue (FIFO when the name ends in `.fifo`); resolves with its URL. */
  createQueue(name: string): Promise<string>;
  /** Where a queue's messages show, as JSON, without receiving them. */
  inspectUrl(name: string): string;
  close(): Promise<void>;
}

/** Environment for `sqsConfigFromEnv`: the queue, and the local endpoint's any-credentials. */
export function localSqsEnv(sqs: { url: string }, queueUrl: string): Record<string, string> {
  return {
    OUTBOX_SQS_QUEUE_URL: queueUrl,
    OUTBOX_SQS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_SQS: sqs.url,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  };
}

/**
 * Starts the server on 127.0.0.1 (`port` 0 or unset: a free one). Needs `fauxqs` installed;
 * without it, rejects with the error naming the package.
 */
export async function startLocalSqs(options: { port?: number } = {}): Promise<LocalSqs> {
  const { buildApp } = await import('fauxqs');
  // buildApp rather than startFauxqs: that one listens on every interface, and a queue anyone
  // on the network can write to has no place on a developer's machine.
  const app = buildApp({ logger: false });
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    async createQueue(name) {
      const attributes = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'AmazonSQS.CreateQueue',
        },
        body: JSON.stringify({ QueueName: name, Attributes: attributes }),
      });
      const body = (await response.json()) as { QueueUrl?: string; message?: string };
      if (!response.ok || body.QueueUrl === undefined) {
        throw new Error(
          `local SQS: creating queue ${name} failed (${response.status}): ${body.message ?? 'no queue URL'}`,
        );
      }
      return body.QueueUrl;
    },
    inspectUrl: (name) => `${url}/_fauxqs/queues/${encodeURIComponent(name)}`,
    close: () => app.close(),
  };
}
