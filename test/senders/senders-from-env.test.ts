/**
 * The senders built from the environment spend subrequests only where a request is made: the
 * shared webhook secret is in memory, an endpoint's secret is a read (once per drain run). An
 * environment without SES credentials builds no email sender.
 */
import { ConfigurationError } from 'outbox-relay';
import { sesSenderFromEnv } from 'outbox-relay/ses';
import { webhookSenderFromEnv } from 'outbox-relay/webhook';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

let receiver: LoopbackServer;

beforeAll(async () => {
  receiver = await startLoopbackServer((_request, response) => response.writeHead(204).end());
});

afterAll(async () => {
  await receiver?.close();
});

function spending() {
  const spent: string[] = [];
  return {
    spent,
    context: { run: {}, spend: (n: number, what: string) => spent.push(`${n} ${what}`) },
  };
}

describe('webhookSenderFromEnv', () => {
  const secrets = new Map([['4f6a8d3e-0c1b-4e5f-9a7b-2c3d4e5f6a7b', generateWebhookSecret()]]);
  const lookups: string[] = [];
  const webhook = webhookSenderFromEnv(
    {
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_SECRET: generateWebhookSecret(),
      OUTBOX_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    },
    {
      resolveHost: false,
      endpointSecret: async (id) => {
        lookups.push(id);
        return secrets.get(id);
      },
    },
  );

  it('spend nothing beyond the send for the shared secret', async () => {
    const { spent, context } = spending();
    const message = outboundMessage('webhook', { url: `${receiver.url}/a`, body: 1 });
    await webhook(message, openSignal(), context);
    expect(spent).toEqual([]);
  });

  it('spend one read per endpoint per drain run for an endpoint secret', async () => {
    const { spent, context } = spending();
    const [endpointId] = [...secrets.keys()];
    for (const n of [1, 2, 3]) {
      const payload = { url: `${receiver.url}/b`, body: n, endpointId: endpointId! };
      await webhook(outboundMessage('webhook', payload), openSignal(), context);
    }
    expect(spent).toEqual([`1 webhook secret lookup for endpoint ${endpointId}`]);
    expect(lookups).toEqual([endpointId]);
  });
});

describe('sesSenderFromEnv', () => {
  const credentials = {
    OUTBOX_SES_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
  };

  it('builds no sender without AWS_ACCESS_KEY_ID or AWS_ENDPOINT_URL_SES', () => {
    expect(sesSenderFromEnv({ OUTBOX_SES_REGION: 'eu-west-1' })).toBeUndefined();
  });

  it('builds one from credentials, and from an emulator endpoint', () => {
    expect(sesSenderFromEnv(credentials)).toBeTypeOf('function');
    expect(
      sesSenderFromEnv({ ...credentials, AWS_ENDPOINT_URL_SES: 'http://127.0.0.1:1' }),
    ).toBeTypeOf('function');
  });

  it('refuses an OUTBOX_SES_MAX_SEND_RATE that is not a positive number', () => {
    expect(() => sesSenderFromEnv({ ...credentials, OUTBOX_SES_MAX_SEND_RATE: '0' })).toThrow(
      ConfigurationError,
    );
    expect(sesSenderFromEnv({ ...credentials, OUTBOX_SES_MAX_SEND_RATE: '14' })).toBeTypeOf(
      'function',
    );
  });
});
