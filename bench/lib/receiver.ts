/**
 * A loopback HTTP receiver that answers every request after a fixed delay: the "slow
 * webhook endpoint" every system sends to in the slow-receiver cases. It listens on
 * 127.0.0.1 only and counts what it received, so a case can check nothing was lost.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startServingChild } from './children.js';

export interface LoopbackReceiver {
  url: string;
  /** Requests answered so far. */
  readonly received: number;
  /** Requests whose body has fully arrived, answered or not: what a sender has sent. */
  readonly arrived: number;
  close(): Promise<void>;
}

/** Where a receiver answers with its counts at once, for a bench in another process. */
export const COUNTS_PATH = '/counts';

export async function startLoopbackReceiver(delayMs: number): Promise<LoopbackReceiver> {
  let received = 0;
  let arrived = 0;
  const server: Server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === COUNTS_PATH) {
      // Read by a bench whose receiver runs in another process (startReceiverProcess).
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ received, arrived }));
      return;
    }
    request.resume();
    request.on('end', () => {
      arrived += 1;
      setTimeout(() => {
        received += 1;
        response.writeHead(204).end();
      }, delayMs);
    });
  });
  // Keep connections open between requests, as a real endpoint behind a load balancer does.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get received() {
      return received;
    },
    get arrived() {
      return arrived;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The receiver as a rate-measuring scenario sees it, wherever it runs. */
export interface RemoteReceiver {
  url: string;
  /** Requests answered so far. */
  received(): Promise<number>;
  close(): Promise<void>;
}

const RECEIVER_CHILD = fileURLToPath(new URL('../child/receiver-process.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The receiver in a process of its own (bench/child/receiver-process.ts). Where a rate is
 * measured, answering requests must not share the drain's event loop, as it would not with a
 * real endpoint; the two cores are still shared, which no process boundary changes.
 */
export async function startReceiverProcess(delayMs: number): Promise<RemoteReceiver> {
  const child = await startServingChild(
    RECEIVER_CHILD,
    { BENCH_RECEIVER_DELAY_MS: String(delayMs) },
    REPO_ROOT,
  );
  const url = child.firstLine;
  const countsUrl = new URL(COUNTS_PATH, url).toString();
  return {
    url,
    async received() {
      const response = await fetch(countsUrl);
      const counts = (await response.json()) as { received: number };
      return counts.received;
    },
    close: child.stop,
  };
}

/** What every system's handler does with one message: hand its payload to the send function. */
export type SendPayload = (payload: unknown) => Promise<void>;

/** Does nothing: measures the queue machinery alone. */
export const noopSend: SendPayload = async () => {};

/**
 * POSTs the payload as JSON to `url` with the global fetch (undici, keep-alive), and fails on
 * a non-2xx answer, as a webhook sender would.
 */
export function fetchSend(url: string): SendPayload {
  return async (payload) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`receiver answered ${response.status}`);
  };
}
