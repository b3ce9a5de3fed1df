/**
 * The webhook sender against real loopback receivers. Every request is verified with the
 * `standardwebhooks` package, as a customer's receiver would, and counted by `webhook-id`.
 */
import type { ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  type RetryableDeliveryError,
} from '../../src/core/errors.js';
import type { JsonValue } from '../../src/core/message.js';
import type { OutboundMessage } from '../../src/core/sender.js';
import {
  generateWebhookSecret,
  RESPONSE_SNIPPET_CHARACTERS,
  retryAfterMs,
  signWebhook,
  type WebhookSenderConfig,
  webhookSender,
} from '../../src/senders/webhook/index.js';
import {
  type LoopbackServer,
  type ReceivedRequest,
  startLoopbackServer,
  unusedPort,
} from '../support/loopback-http.js';
import { waitFor } from '../support/wait-for.js';
import { openSignal, outboundMessage } from './outbound-message.js';

type Reply = (response: ServerResponse) => void;

const secret = generateWebhookSecret();

let receiver: LoopbackServer;
/** Replies for the next requests, in order; when empty the receiver answers 200. */
let replies: (Reply | 'hang')[] = [];
/** Every `webhook-id` whose signature verified, in arrival order. */
let verifiedIds: string[] = [];
let verificationFailures = 0;

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    try {
      new Webhook(secret).verify(request.body, request.headers);
      verifiedIds.push(request.headers['webhook-id']!);
    } catch {
      verificationFailures += 1;
    }
    const reply = replies.shift();
    if (reply === 'hang') return;
    if (reply === undefined) {
      response.writeHead(200).end('ok');
      return;
    }
    reply(response);
  });
});

afterAll(() => receiver.close());

beforeEach(() => {
  replies = [];
  verifiedIds = [];
  verificationFailures = 0;
});

/** Loopback receivers need development mode and an allow-list entry, as in local setups. */
function sender(config: Partial<WebhookSenderConfig> = {}) {
  return webhookSender({
    secret,
    environment: 'development',
    allowHosts: [`127.0.0.1:${receiver.port}`],
    ...config,
  } as WebhookSenderConfig);
}

function webhookMessage(
  payload: Partial<Record<string, JsonValue>> = {},
  overrides: Partial<OutboundMessage> = {},
) {
  return outboundMessage(
    'webhook',
    {
      url: `${receiver.url}/hooks`,
      body: { orderId: 'o_1', total: 1200 },
      ...payload,
    } as JsonValue,
    overrides,
  );
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the send to fail, but it succeeded');
}

function lastRequest(): ReceivedRequest {
  return receiver.requests.at(-1)!;
}

describe('webhookSender', () => {
  it('POSTs the body as JSON with Standard Webhooks headers that verify', async () => {
    const message = webhookMessage();
    await sender()(message, openSignal());
    expect(verifiedIds).toEqual([message.key]);
    expect(verificationFailures).toBe(0);
    const request = lastRequest();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/hooks');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(JSON.parse(request.body)).toEqual({ orderId: 'o_1', total: 1200 });
  });

  it('wraps the body in the signed {type, timestamp, data} envelope when the payload names an event', async () => {
    const createdAt = new Date('2025-03-04T05:06:07.000Z');
    await sender()(webhookMessage({ event: 'order.paid' }, { createdAt }), openSignal());
    expect(verificationFailures).toBe(0);
    expect(JSON.parse(lastRequest().body)).toEqual({
      type: 'order.paid',
      timestamp: '2025-03-04T05:06:07.000Z',
      data: { orderId: 'o_1', total: 1200 },
    });
  });

  it('signs exactly as the standardwebhooks package does', async () => {
    const timestamp = new Date('2025-01-01T00:00:00Z');
    const headers = await signWebhook({ secret, id: 'msg_1', timestamp, body: '{"a":1}' });
    expect(headers['webhook-signature']).toBe(
      new Webhook(secret).sign('msg_1', timestamp, '{"a":1}'),
    );
    expect(headers['webhook-timestamp']).toBe('1735689600');
  });

  it('retries a 500 and delivers on the next attempt with the same webhook-id', async () => {
    replies = [(response) => response.writeHead(500).end('{"error":"database unavailable"}')];
    const message = webhookMessage();
    const send = sender();
    const error = await rejectionOf(send(message, openSignal()));
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('HTTP 500');
    expect((error as Error).message).toContain('database unavailable');
    await send({ ...message, attempt: 2 }, openSignal());
    // Both attempts verified; the receiver dedupes on the one ID they share.
    expect(verifiedIds).toEqual([message.key, message.key]);
  });

  it('reports Retry-After in seconds as retryAfterMs', async () => {
    replies = [(response) => response.writeHead(429, { 'retry-after': '2' }).end('slow down')];
    const error = await rejectionOf(sender()(webhookMessage(), openSignal()));
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as RetryableDeliveryError).retryAfterMs).toBe(2000);
  });

  it('reports a Retry-After HTTP date as the time until then', async () => {
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const later = new Date(now.getTime() + 120_000);
    replies = [(response) => response.writeHead(503, { 'retry-after': later.toUTCString() }).end()];
    const error = await rejectionOf(
      sender({ clock: { now: () => now } })(webhookMessage(), openSignal()),
    );
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as RetryableDeliveryError).retryAfterMs).toBe(120_000);
  });

  it.each([408, 425, 502, 504])('retries HTTP %i', async (status) => {
    replies = [(response) => response.writeHead(status).end()];
    const error = await rejectionOf(sender()(webhookMessage(), openSignal()));
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain(`HTTP ${status}`);
  });

  it('dead-letters 410 Gone', async () => {
    replies = [(response) => response.writeHead(410).end('endpoint removed')];
    const error = await rejectionOf(sender()(webhookMessage(), openSignal()));
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('HTTP 410');
  });

  it.each([400, 401, 403, 404, 422])('dead-letters HTTP %i', async (status) => {
    replies = [(response) => response.writeHead(status).end('{"error":"invalid signature"}')];
    const error = await rejectionOf(sender()(webhookMessage(), openSignal()));
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain(`HTTP ${status}: {"error":"invalid signature"}`);
  });

  it('puts at most a short snippet of the response body in the error, on one line', async () => {
    replies = [
      (response) =>
        response.writeHead(400).end(`<html>\n<body>\n${'x'.repeat(5000)}</body></html>`),
    ];
    const error = await rejectionOf(sender()(webhookMessage(), openSignal()));
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    const snippet = message.slice(message.indexOf('HTTP 400: ') + 'HTTP 400: '.length);
    expect(snippet.startsWith('<html> <body> xxx')).toBe(true);
    expect(snippet.length).toBeLessThanOrEqual(RESPONSE_SNIPPET_CHARACTERS + 1);
  });

  it('names the path in errors and in the attempt, but never the query string', async () => {
    replies = [(response) => response.writeHead(500).end()];
    const error = await rejectionOf(
      sender()(
        webhookMessage({ url: `${receiver.url}/hooks/orders?token=T0K3N-secret#frag` }),
        openSignal(),
      ),
    );
    expect((error as Error).message).toContain(`webhook to ${receiver.url}/hooks/orders answered`);
    expect((error as Error).message).not.toContain('T0K3N');
    expect(error).toMatchObject({ status: 500, destination: `${receiver.url}/hooks/orders` });
  });

  it('resolves a delivery with its status and destination as the receipt', async () => {
    replies = [(response) => response.writeHead(202).end()];
    const receipt = await sender()(
      webhookMessage({ url: `${receiver.url}/hooks/orders?token=T0K3N-secret` }),
      openSignal(),
    );
    expect(receipt).toEqual({ status: 202, destination: `${receiver.url}/hooks/orders` });
  });

  it('does not follow a redirect: a 3xx is permanent and names the Location', async () => {
    const elsewhere = await startLoopbackServer((_request, response) => response.end('ok'));
    try {
      replies = [
        (response) => response.writeHead(302, { location: `${elsewhere.url}/moved` }).end(),
      ];
      const error = await rejectionOf(
        sender({ allowHosts: [`127.0.0.1:${receiver.port}`, `127.0.0.1:${elsewhere.port}`] })(
          webhookMessage(),
          openSignal(),
        ),
      );
      expect(isPermanentDeliveryError(error)).toBe(true);
      expect((error as Error).message).toContain('HTTP 302');
      expect((error as Error).message).toContain(`${elsewhere.url}/moved`);
      expect(elsewhere.connections()).toBe(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('gives up on a hanging receiver when the signal fires, as a retryable failure', async () => {
    replies = ['hang'];
    const before = receiver.requests.length;
    const controller = new AbortController();
    const sending = rejectionOf(sender()(webhookMessage(), controller.signal));
    await waitFor('the request to reach the receiver', () => receiver.requests.length > before);
    controller.abort(new Error('send timeout'));
    const error = await sending;
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('time was up');
  });

  it('gives up within the timeout when a receiver never answers (AbortSignal.timeout)', async () => {
    replies = ['hang'];
    const error = await rejectionOf(sender()(webhookMessage(), AbortSignal.timeout(200)));
    expect(isRetryableDeliveryError(error)).toBe(true);
  });

  it('retries when nothing listens', async () => {
    const port = await unusedPort();
    const error = await rejectionOf(
      sender({ allowHosts: [`127.0.0.1:${port}`] })(
        webhookMessage({ url: `http://127.0.0.1:${port}/hooks` }),
        openSignal(),
      ),
    );
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain('ECONNREFUSED');
    // Attempt history gets the system code and where it went.
    expect(error).toMatchObject({
      providerCode: 'ECONNREFUSED',
      destination: `http://127.0.0.1:${port}/hooks`,
    });
  });

  describe('secrets', () => {
    it('signs with the secret secretFor finds for the endpoint', async () => {
      const seen: (string | undefined)[] = [];
      const send = sender({
        secret: undefined,
        secretFor: async (_message, payload) => {
          seen.push(payload.endpointId);
          return payload.endpointId === 'ep_1' ? secret : undefined;
        },
      });
      await send(webhookMessage({ endpointId: 'ep_1' }), openSignal());
      expect(seen).toEqual(['ep_1']);
      expect(verifiedIds).toHaveLength(1);
    });

    it('imports each secret once per sender, and signs with a rotated secret from its first message', async () => {
      let current = secret;
      const send = sender({ secret: undefined, secretFor: () => current });
      const imports = vi.spyOn(crypto.subtle, 'importKey');
      try {
        for (let n = 0; n < 3; n++) await send(webhookMessage(), openSignal());
        expect(imports).toHaveBeenCalledTimes(1);
        current = generateWebhookSecret();
        const message = webhookMessage();
        await send(message, openSignal());
        expect(imports).toHaveBeenCalledTimes(2);
        const { headers, body } = lastRequest();
        expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
        expect(() => new Webhook(secret).verify(body, headers)).toThrow();
      } finally {
        imports.mockRestore();
      }
    });

    it('dead-letters without a request when secretFor finds no secret', async () => {
      const before = receiver.requests.length;
      const error = await rejectionOf(
        sender({ secret: undefined, secretFor: () => undefined })(
          webhookMessage({ endpointId: 'ep_deleted' }),
          openSignal(),
        ),
      );
      expect(isPermanentDeliveryError(error)).toBe(true);
      expect((error as Error).message).toContain('ep_deleted');
      expect(receiver.requests).toHaveLength(before);
    });

    it('retries without a request when the secret lookup itself fails', async () => {
      const before = receiver.requests.length;
      const error = await rejectionOf(
        sender({
          secret: undefined,
          secretFor: async () => {
            throw new Error('connection terminated');
          },
        })(webhookMessage({ endpointId: 'ep_1' }), openSignal()),
      );
      expect(isRetryableDeliveryError(error)).toBe(true);
      expect(receiver.requests).toHaveLength(before);
    });

    it('dead-letters a payload that carries a secret, without a request', async () => {
      const before = receiver.requests.length;
      const error = await rejectionOf(sender()(webhookMessage({ secret }), openSignal()));
      expect(isPermanentDeliveryError(error)).toBe(true);
      expect((error as Error).message).toContain('payload.secret');
      expect(receiver.requests).toHaveLength(before);
    });

    it('refuses a config with both, neither, or a malformed secret', () => {
      expect(() => webhookSender({ environment: 'development' })).toThrow(/exactly one/);
      expect(() =>
        webhookSender({ environment: 'development', secret, secretFor: () => secret }),
      ).toThrow(/exactly one/);
      expect(() => webhookSender({ environment: 'development', secret: 'not-whsec' })).toThrow(
        /whsec_/,
      );
      expect(() => webhookSender({ environment: 'development', secret: 'whsec_c2hvcnQ=' })).toThrow(
        /24 to 64 bytes/,
      );
    });
  });
});

describe('retryAfterMs', () => {
  const now = new Date('2025-01-01T00:00:00Z');
  it.each<[string | null, number | undefined]>([
    [null, undefined],
    ['0', 0],
    ['120', 120_000],
    [' 3 ', 3000],
    ['Wed, 01 Jan 2025 00:01:00 GMT', 60_000],
    ['Tue, 31 Dec 2024 23:00:00 GMT', 0],
    ['soon', undefined],
    ['-5', undefined],
  ])('reads %j as %j', (header, expected) => {
    expect(retryAfterMs(header, now)).toBe(expected);
  });
});
