/**
 * The senders built from the environment spend subrequests only where a request is made: the
 * shared webhook secret is in memory, an endpoint's secret is a read (once per drain run).
 */
import { sendersFromEnv } from 'outbox-relay';
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

describe('sendersFromEnv webhooks', () => {
  const secrets = new Map([['4f6a8d3e-0c1b-4e5f-9a7b-2c3d4e5f6a7b', generateWebhookSecret()]]);
  const lookups: string[] = [];
  const { senders } = sendersFromEnv(
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
    await senders.webhook!(message, openSignal(), context);
    expect(spent).toEqual([]);
  });

  it('spend one read per endpoint per drain run for an endpoint secret', async () => {
    const { spent, context } = spending();
    const [endpointId] = [...secrets.keys()];
    for (const n of [1, 2, 3]) {
      const payload = { url: `${receiver.url}/b`, body: n, endpointId: endpointId! };
      await senders.webhook!(outboundMessage('webhook', payload), openSignal(), context);
    }
    expect(spent).toEqual([`1 webhook secret lookup for endpoint ${endpointId}`]);
    expect(lookups).toEqual([endpointId]);
  });
});
