/**
 * DNS rebinding against the webhook sender on Node: a name that answers a public address to the
 * destination check and loopback to the connection. A real DNS server would be overkill: the
 * resolver is injected, and it is the one both the check and the connection ask (what
 * `nodeHostResolver` does over the system resolver). A receiver on loopback counts connections.
 */
import { Agent, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isPermanentDeliveryError } from '../../src/core/errors.js';
import {
  generateWebhookSecret,
  type HostResolver,
  webhookSender,
} from '../../src/senders/webhook/index.js';
import {
  connectingHostResolver,
  nodeHostResolver,
} from '../../src/senders/webhook/node-host-resolver.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

const secret = generateWebhookSecret();
const HOST = 'hooks.rebinding.test';

let receiver: LoopbackServer;

beforeAll(async () => {
  receiver = await startLoopbackServer((_request, response) => response.end('ok'));
});

afterAll(() => receiver.close());

/** Answers a public address the first time it is asked, loopback every time after. */
function rebindingResolver(): HostResolver & { asked: () => number } {
  let asked = 0;
  const resolve: HostResolver = async (hostname) => {
    if (hostname !== HOST) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    asked += 1;
    return asked === 1 ? ['93.184.215.14'] : ['127.0.0.1'];
  };
  return Object.assign(resolve, { asked: () => asked });
}

function send(sender: ReturnType<typeof webhookSender>) {
  const url = `http://${HOST}:${receiver.port}/in`;
  return sender(outboundMessage('webhook', { url, body: { a: 1 } }), openSignal());
}

describe('DNS rebinding', () => {
  let previous: Dispatcher | undefined;

  afterEach(() => {
    if (previous) setGlobalDispatcher(previous);
    previous = undefined;
  });

  it('connects only to an address it checked: a name that rebinds to loopback after the check is refused unconnected', async () => {
    const resolver = rebindingResolver();
    const sender = webhookSender({
      secret,
      environment: 'development',
      resolveHost: connectingHostResolver(resolver),
    });
    const before = receiver.connections();
    const error = await send(sender).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(isPermanentDeliveryError(error)).toBe(true);
    expect((error as Error).message).toContain(`${HOST} resolved to 127.0.0.1`);
    expect((error as Error).message).toContain('loopback');
    expect((error as Error).message).toContain('no request made');
    // The check asked once (public: passed), the connection asked again (loopback: refused).
    expect(resolver.asked()).toBe(2);
    expect(receiver.connections()).toBe(before);
  });

  it('without the checked connection (a plain resolver, as before this fix), the same rebinding reaches the loopback receiver', async () => {
    // fetch's own resolution, standing in for the system resolver a rebinding DNS server
    // answers: it asks the same resolver, and connects wherever it says.
    const resolver = rebindingResolver();
    previous = getGlobalDispatcher();
    setGlobalDispatcher(
      new Agent({
        connect: {
          lookup: (hostname, _options, callback) => {
            resolver(hostname).then(
              ([address]) => callback(null, [{ address: address!, family: 4 }]),
              (error: NodeJS.ErrnoException) => callback(error, []),
            );
          },
        },
      }),
    );
    const sender = webhookSender({ secret, environment: 'development', resolveHost: resolver });
    const requestsBefore = receiver.requests.length;
    await send(sender);
    expect(resolver.asked()).toBe(2);
    expect(receiver.requests.length).toBe(requestsBefore + 1);
  });

  it('still delivers to a name the operator allow-listed, resolving it at the connection', async () => {
    let asked = 0;
    const loopbackName: HostResolver = async () => {
      asked += 1;
      return ['127.0.0.1'];
    };
    const sender = webhookSender({
      secret,
      environment: 'development',
      allowHosts: [`${HOST}:${receiver.port}`],
      resolveHost: connectingHostResolver(loopbackName),
    });
    const requestsBefore = receiver.requests.length;
    await send(sender);
    expect(receiver.requests.length).toBe(requestsBefore + 1);
    // Allow-listed: the check skips resolving; the connection resolves and goes.
    expect(asked).toBe(1);
  });

  it('nodeHostResolver is a resolver the sender connects through', async () => {
    expect(typeof nodeHostResolver.connectingFetch).toBe('function');
    const sender = webhookSender({
      secret,
      environment: 'development',
      allowHosts: [`localhost:${receiver.port}`],
      resolveHost: nodeHostResolver,
    });
    const requestsBefore = receiver.requests.length;
    await sender(
      outboundMessage('webhook', { url: `http://localhost:${receiver.port}/in`, body: 1 }),
      openSignal(),
    );
    expect(receiver.requests.length).toBe(requestsBefore + 1);
  });
});
