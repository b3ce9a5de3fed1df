/**
 * The webhook sender's checked connection on Node (`nodeHostResolver` and any
 * `connectingHostResolver`), over `node:http` rather than fetch: it must answer the sender as
 * fetch would, status by status. A real receiver on loopback plays each answer; the resolver
 * is injected so the name resolves to it (the rebinding cases are in dns-rebinding.test.ts).
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  type RetryableDeliveryError,
} from '../../src/core/errors.js';
import { generateWebhookSecret, webhookSender } from '../../src/senders/webhook/index.js';
import { connectingHostResolver } from '../../src/senders/webhook/node-host-resolver.js';
import { type LoopbackServer, startLoopbackServer, unusedPort } from '../support/loopback-http.js';
import { waitFor } from '../support/wait-for.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const secret = generateWebhookSecret();
const HOST = 'hooks.checked.test';

let receiver: LoopbackServer;
let held: (() => void)[] = [];

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    const path = new URL(request.url, 'http://x').pathname;
    if (path === '/ok') response.writeHead(204).end();
    else if (path === '/busy') {
      response.writeHead(503, { 'retry-after': '120' }).end('queue full, come back later');
    } else if (path === '/moved') {
      response.writeHead(302, { location: 'http://169.254.169.254/latest' }).end('moved');
    } else if (path === '/gone') response.writeHead(410).end();
    else if (path === '/hang') held.push(() => response.writeHead(204).end());
    else response.writeHead(404).end();
  });
});

afterAll(async () => {
  for (const release of held) release();
  held = [];
  await receiver.close();
});

/** A sender whose name resolves to the receiver through the checked connection. */
function checkedSender(port = receiver.port) {
  return webhookSender({
    secret,
    environment: 'development',
    allowHosts: [`${HOST}:${port}`],
    resolveHost: connectingHostResolver(async () => ['127.0.0.1']),
  });
}

function send(path: string, signal = openSignal(), port = receiver.port) {
  const url = `http://${HOST}:${port}${path}`;
  return checkedSender(port)(outboundMessage('webhook', { url, body: { n: 1 } }), signal).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the checked connection on Node', () => {
  it('delivers a signed POST, with the headers and body fetch would send', async () => {
    const sender = checkedSender();
    const message = outboundMessage('webhook', {
      url: `http://${HOST}:${receiver.port}/ok`,
      body: { n: 1 },
    });
    await sender(message, openSignal());
    const request = receiver.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['content-length']).toBe(String(Buffer.byteLength(request.body)));
    expect(request.headers.host).toBe(`${HOST}:${receiver.port}`);
    expect(JSON.parse(request.body)).toEqual({ n: 1 });
    const verified = new Webhook(secret.slice('whsec_'.length)).verify(request.body, {
      'webhook-id': request.headers['webhook-id']!,
      'webhook-timestamp': request.headers['webhook-timestamp']!,
      'webhook-signature': request.headers['webhook-signature']!,
    });
    expect(verified).toEqual({ n: 1 });
    expect(request.headers['webhook-id']).toBe(message.key);
  });

  it('keeps its connection alive between sends, as fetch pools them', async () => {
    const sender = checkedSender();
    const before = receiver.connections();
    for (const n of [1, 2, 3]) {
      const url = `http://${HOST}:${receiver.port}/ok`;
      await sender(outboundMessage('webhook', { url, body: { n } }), openSignal());
    }
    expect(receiver.connections() - before).toBe(1);
  });

  it("reads a 503's Retry-After and body into a retryable error", async () => {
    const error = (await send('/busy')) as RetryableDeliveryError;
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect(error.retryAfterMs).toBe(120_000);
    expect(error.message).toContain('answered HTTP 503: queue full, come back later');
  });

  it('reports a redirect without following it, and a 410 as gone', async () => {
    const requests = receiver.requests.length;
    const moved = (await send('/moved')) as Error;
    expect(isPermanentDeliveryError(moved)).toBe(true);
    expect(moved.message).toContain('HTTP 302 redirecting to http://169.254.169.254/latest');
    expect(receiver.requests.length).toBe(requests + 1);
    const gone = (await send('/gone')) as Error;
    expect(isPermanentDeliveryError(gone)).toBe(true);
    expect(gone.message).toContain('410 Gone');
  });

  it('gives up on a receiver that never answers when the send is aborted, as retryable', async () => {
    const stop = new AbortController();
    const sending = send('/hang', stop.signal);
    await waitFor('the receiver to hold the request', () => held.length === 1);
    stop.abort();
    const error = (await sending) as Error;
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect(error.message).toContain("abandoned: the send's time was up before a response");
  });

  it('names the refused connection in a retryable error', async () => {
    const port = await unusedPort();
    const error = (await send('/ok', openSignal(), port)) as Error;
    expect(isRetryableDeliveryError(error)).toBe(true);
    expect(error.message).toMatch(
      /failed: TypeError: fetch failed \(Error: connect ECONNREFUSED 127\.0\.0\.1:\d+\)/,
    );
  });
});
