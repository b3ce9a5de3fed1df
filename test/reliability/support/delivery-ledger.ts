/**
 * The receivers' side of every reliability scenario: a webhook endpoint on loopback that records
 * each delivery it accepts (the `webhook-id`, which is the message key, and who sent it, from
 * the user agent), and turns that record into the figures the summary reports.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  key: string;
  /** The sender's user agent: which drain (process, runtime) made the request. */
  by: string;
  at: number;
}

/**
 * Decides one request's fate before it is accepted: return `true` when it took the response
 * over (reset it, stalled it, answered an error); the request is then not recorded as delivered.
 */
export type ReceiverBehaviour = (request: IncomingMessage, response: ServerResponse) => boolean;

export interface DeliveryLedger {
  url: string;
  port: number;
  /** Accepted deliveries, in order. */
  deliveries: Delivery[];
  /** Requests that reached the receiver, accepted or not. */
  requests(): number;
  /** Replaces how requests are answered (default: accept every one with 204). */
  behave(behaviour: ReceiverBehaviour | undefined): void;
  /**
   * Delay before accepting (a slow receiver): fixed ms, or drawn per request (a receiver's
   * usual jitter); 0 by default.
   */
  delayMs: number | (() => number);
  /**
   * Stops listening and drops every connection: from now on a connection to its port is
   * refused (nothing listens there), as when a receiver's process is down.
   */
  refuseConnections(): Promise<void>;
  /** Listens again on the same port (the same origin): the receiver is back. */
  acceptConnections(): Promise<void>;
  close(): Promise<void>;
}

export interface DeliveryLedgerOptions {
  /**
   * How long an idle connection stays open, ms; default 1,000, as the scenarios written before
   * this option were measured. Node's fetch (undici) keeps a connection for the server's
   * keep-alive hint less a one-second margin, so at 1,000 it keeps none and every request opens
   * its own connection (3,000 webhooks made 3,000 connections); a receiver whose clients reuse
   * connections, as real ones behind a load balancer do, wants more (Node's own default, 5,000).
   */
  keepAliveMs?: number;
}

export async function startDeliveryLedger(
  options: DeliveryLedgerOptions = {},
): Promise<DeliveryLedger> {
  const deliveries: Delivery[] = [];
  let behaviour: ReceiverBehaviour | undefined;
  let requests = 0;
  const ledger = {} as DeliveryLedger;
  const server = createServer((request, response) => {
    requests += 1;
    request.resume();
    request.on('end', () => {
      if (behaviour?.(request, response)) return;
      const accept = () => {
        if (response.destroyed) return;
        deliveries.push({
          key: String(request.headers['webhook-id']),
          by: String(request.headers['user-agent']),
          at: Date.now(),
        });
        response.writeHead(204).end();
      };
      const delayMs = typeof ledger.delayMs === 'function' ? ledger.delayMs() : ledger.delayMs;
      if (delayMs > 0) setTimeout(accept, delayMs);
      else accept();
    });
  });
  server.keepAliveTimeout = options.keepAliveMs ?? 1_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stopListening = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return Object.assign(ledger, {
    url: `http://127.0.0.1:${port}`,
    port,
    deliveries,
    delayMs: 0,
    requests: () => requests,
    behave(next: ReceiverBehaviour | undefined) {
      behaviour = next;
    },
    refuseConnections: stopListening,
    acceptConnections: () =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      }),
    close: async () => {
      if (server.listening) await stopListening();
    },
  });
}

export interface Accounting {
  /** Committed keys never delivered. */
  lost: string[];
  /** Keys delivered more than once, with every delivery. */
  duplicated: Map<string, Delivery[]>;
  /** Deliveries beyond the first, summed. */
  extraDeliveries: number;
  /** Rolled-back keys (or keys never committed) that were delivered. */
  rolledBackSent: string[];
}

/** Compares what was committed with what the receivers accepted. */
export function account(
  deliveries: readonly Delivery[],
  committed: Iterable<string>,
  rolledBack: Iterable<string> = [],
): Accounting {
  const byKey = new Map<string, Delivery[]>();
  for (const delivery of deliveries) {
    const list = byKey.get(delivery.key) ?? [];
    list.push(delivery);
    byKey.set(delivery.key, list);
  }
  const committedSet = new Set(committed);
  const lost = [...committedSet].filter((key) => !byKey.has(key));
  const duplicated = new Map([...byKey].filter(([, list]) => list.length > 1));
  let extraDeliveries = 0;
  for (const list of duplicated.values()) extraDeliveries += list.length - 1;
  const rolledBackSent = [...new Set(rolledBack)].filter((key) => byKey.has(key));
  // A delivery under a key nobody committed is as bad as a rolled-back one.
  for (const key of byKey.keys()) if (!committedSet.has(key)) rolledBackSent.push(key);
  return { lost, duplicated, extraDeliveries, rolledBackSent: [...new Set(rolledBackSent)] };
}
