/**
 * A loopback HTTP receiver that answers every request after a fixed delay: the "slow
 * webhook endpoint" every system sends to in the slow-receiver cases. It listens on
 * 127.0.0.1 only and counts what it received, so a case can check nothing was lost.
 *
 * It stands in for an endpoint on another machine, so it should cost the two shared cores as
 * little as it can: it is a minimal HTTP/1.1 responder on a TCP server, not node:http. With
 * node:http answering and fetch sending, a send loop with no queue at all reached 0.42 to 0.74
 * of the ideal at 50 in flight on this machine; with this responder and `postJson`, 0.89 to
 * 0.91 (docs/benchmarks.md, scenario 2). It reads only what the bench's senders write: keep-alive
 * requests whose body has a content-length; anything else closes the connection.
 */
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
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

const HEAD_END = Buffer.from('\r\n\r\n');
/** Longest request head read; a longer one is not from the bench's senders. */
const MAX_HEAD_BYTES = 8192;
const NO_CONTENT = Buffer.from('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=60\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i;
/** A body without a length up front: not what the bench's senders write. */
const TRANSFER_ENCODING = /\r\ntransfer-encoding:/i;

export async function startLoopbackReceiver(delayMs: number): Promise<LoopbackReceiver> {
  let received = 0;
  let arrived = 0;
  const sockets = new Set<Socket>();

  const answer = (socket: Socket, head: string): void => {
    if (head.startsWith(`GET ${COUNTS_PATH} `)) {
      // Read by a bench whose receiver runs in another process (startReceiverProcess).
      const body = JSON.stringify({ received, arrived });
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    arrived += 1;
    setTimeout(() => {
      received += 1;
      if (!socket.destroyed) socket.write(NO_CONTENT);
    }, delayMs);
  };

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.setNoDelay(true);
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      for (;;) {
        const headEnd = pending.indexOf(HEAD_END);
        if (headEnd < 0) {
          if (pending.length > MAX_HEAD_BYTES) socket.destroy();
          return;
        }
        const head = pending.toString('latin1', 0, headEnd);
        if (TRANSFER_ENCODING.test(head)) {
          socket.destroy();
          return;
        }
        const length = Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
        const requestEnd = headEnd + HEAD_END.length + length;
        if (pending.length < requestEnd) return;
        pending = pending.subarray(requestEnd);
        answer(socket, head);
      }
    });
    socket.on('error', () => socket.destroy());
  });
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
        for (const socket of sockets) socket.destroy();
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
 * POSTs the payload as JSON to `url` over node:http with a keep-alive agent, and fails on a
 * non-2xx answer, as a webhook sender would. Not fetch: Node 20's fetch spent about 580 µs of
 * CPU per request here against about 150 for node:http, and on two shared cores that CPU was
 * the ceiling of every system at 50 in flight.
 */
export function postJson(url: string): SendPayload {
  const target = new URL(url);
  const agent = new Agent({ keepAlive: true });
  return (payload) => {
    const body = JSON.stringify(payload);
    return new Promise<void>((resolve, reject) => {
      const outgoing = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (response) => {
          response.resume();
          response.once('error', reject);
          response.once('end', () => {
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve();
            else reject(new Error(`receiver answered ${status}`));
          });
        },
      );
      outgoing.once('error', reject);
      outgoing.end(body);
    });
  };
}
