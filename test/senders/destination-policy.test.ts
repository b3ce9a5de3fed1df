/**
 * The webhook SSRF guard. A receiver listens dual-stack on loopback (so both 127.0.0.1 and
 * [::1] would reach it) and counts TCP connections: every refused URL must leave the count at
 * zero, and an allow-listed one must reach it, proving the receiver was there to be reached.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isOutboxError,
  isPermanentDeliveryError,
  isRetryableDeliveryError,
} from '../../src/core/errors.js';
import { destinationCheck } from '../../src/senders/webhook/destination-policy.js';
import {
  forbiddenAddressReason,
  generateWebhookSecret,
  type HostResolver,
  type WebhookSenderConfig,
  webhookSender,
} from '../../src/senders/webhook/index.js';
import { nodeHostResolver } from '../../src/senders/webhook/node-host-resolver.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const secret = generateWebhookSecret();

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the send to fail, but it succeeded');
}

function thrownBy(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return isOutboxError(error) ? error : undefined;
  }
  return undefined;
}

describe('forbiddenAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'metadata'],
    ['169.254.10.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:a00:1::1', 'private'],
    ['not-an-ip', 'not an IP address'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(forbiddenAddressReason(address)).toContain(reason);
  });

  it.each([
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '93.184.215.14',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('allows the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });
});

describe('webhookSender SSRF guard', () => {
  let receiver: LoopbackServer;

  beforeAll(async () => {
    receiver = await startLoopbackServer((_request, response) => response.end('ok'), '::');
  });

  afterAll(() => receiver.close());

  /** A resolver for test names only; anything else is "not found". */
  const testResolver: HostResolver = async (hostname) => {
    const answers: Record<string, string[]> = {
      'hooks.private.test': ['10.0.0.7'],
      'hooks.mixed.test': ['93.184.215.14', '10.0.0.7'],
      'hooks.loopback.test': ['127.0.0.1'],
      'hooks.mapped.test': ['::ffff:169.254.169.254'],
    };
    const found = answers[hostname];
    if (found === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };

  function production(config: Partial<WebhookSenderConfig> = {}) {
    return webhookSender({ secret, resolveHost: testResolver, ...config });
  }

  function send(sender: ReturnType<typeof webhookSender>, url: string) {
    return rejectionOf(sender(outboundMessage('webhook', { url, body: { a: 1 } }), openSignal()));
  }

  it('refuses, in production, internal addresses by literal, by name and by resolution, without connecting', async () => {
    const port = receiver.port;
    const refused: [string, string][] = [
      ['http://169.254.169.254/latest/meta-data/', 'http'],
      ['https://169.254.169.254/latest/meta-data/', 'metadata'],
      ['https://metadata.google.internal/computeMetadata/v1/', 'metadata'],
      [`http://127.0.0.1:${port}/`, 'http'],
      [`https://127.0.0.1:${port}/`, 'loopback'],
      [`http://[::1]:${port}/`, 'http'],
      [`https://[::1]:${port}/`, 'loopback'],
      [`https://[::ffff:127.0.0.1]:${port}/`, 'loopback'],
      [`https://0x7f.1:${port}/`, 'loopback'],
      [`https://localhost:${port}/`, 'loopback'],
      [`https://receiver:${port}/`, 'single-label'],
      [`https://hooks.private.test:${port}/`, 'resolves to 10.0.0.7'],
      [`https://hooks.mixed.test:${port}/`, 'resolves to 10.0.0.7'],
      [`https://hooks.loopback.test:${port}/`, 'resolves to 127.0.0.1'],
      [`https://hooks.mapped.test:${port}/`, 'metadata'],
    ];
    const sender = production();
    for (const [url, reason] of refused) {
      const error = await send(sender, url);
      expect(isPermanentDeliveryError(error), url).toBe(true);
      expect((error as Error).message, url).toContain(reason);
      expect((error as Error).message, url).toContain('no request made');
    }
    expect(receiver.connections()).toBe(0);
  });

  it('refuses loopback in development too unless it is allow-listed, for the listed port only', async () => {
    const port = receiver.port;
    const unlisted = await send(
      webhookSender({ secret, environment: 'development' }),
      `http://127.0.0.1:${port}/`,
    );
    expect(isPermanentDeliveryError(unlisted)).toBe(true);
    const otherPort = await send(
      webhookSender({ secret, environment: 'development', allowHosts: ['127.0.0.1:1'] }),
      `http://127.0.0.1:${port}/`,
    );
    expect(isPermanentDeliveryError(otherPort)).toBe(true);
    expect(receiver.connections()).toBe(0);
  });

  it('delivers to allow-listed loopback in development, over IPv4 and IPv6', async () => {
    const port = receiver.port;
    const sender = webhookSender({
      secret,
      environment: 'development',
      allowHosts: [`127.0.0.1:${port}`, `[::1]:${port}`],
    });
    await sender(
      outboundMessage('webhook', { url: `http://127.0.0.1:${port}/in`, body: 1 }),
      openSignal(),
    );
    await sender(
      outboundMessage('webhook', { url: `http://[::1]:${port}/in`, body: 2 }),
      openSignal(),
    );
    expect(receiver.requests.map((request) => request.body)).toEqual(['1', '2']);
    expect(receiver.connections()).toBeGreaterThan(0);
  });

  it('retries when the host name cannot be resolved, or resolving outlasts the signal', async () => {
    const notFound = await send(production(), 'https://hooks.unknown.test/');
    expect(isRetryableDeliveryError(notFound)).toBe(true);
    expect((notFound as Error).message).toContain('ENOTFOUND');

    const controller = new AbortController();
    const hanging = production({ resolveHost: () => new Promise(() => {}) })(
      outboundMessage('webhook', { url: 'https://hooks.slow.test/', body: 1 }),
      controller.signal,
    );
    controller.abort(new Error('send timeout'));
    const error = await rejectionOf(hanging);
    expect(isRetryableDeliveryError(error)).toBe(true);
  });

  it('lets a public https destination through the check', async () => {
    const check = destinationCheck({
      resolveHost: async () => ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
    await expect(
      check(new URL('https://hooks.example.com/in'), openSignal()),
    ).resolves.toBeUndefined();
    await expect(check(new URL('https://93.184.215.14/in'), openSignal())).resolves.toBeUndefined();
  });

  it('asks for an explicit resolver decision in production, and refuses bad allow-list entries', () => {
    expect(() => webhookSender({ secret })).toThrow(/resolveHost/);
    expect(thrownBy(() => webhookSender({ secret }))).toMatchObject({
      code: 'OUTBOX_CONFIGURATION',
    });
    expect(() => webhookSender({ secret, resolveHost: false })).not.toThrow();
    expect(() =>
      webhookSender({ secret, environment: 'development', allowHosts: ['http://x/'] }),
    ).toThrow(/allowHosts/);
  });

  it('resolves names with the system resolver on Node', async () => {
    const addresses = await nodeHostResolver('localhost');
    expect(addresses.length).toBeGreaterThan(0);
    for (const address of addresses) expect(forbiddenAddressReason(address)).toContain('loopback');
  });
});
