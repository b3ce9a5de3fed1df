/**
 * The stand-in's WebSocket endpoints, `/v1` and `/v2`: each connection is a raw Postgres
 * protocol stream tunnelled to a TCP socket, as Neon's wsproxy does for `Pool` and `Client`.
 */
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { type PostgresAddress, resolveWebSocketTarget } from './targets.js';

/** The driver's default `wsProxy` uses `/v2`; Neon's older wsproxy served `/v1`. Both tunnel the same way. */
export const WEBSOCKET_PATHS = new Set(['/v1', '/v2']);

/**
 * Postgres reads pause once this much is queued for a WebSocket client that is not reading,
 * and resume when the queue drains below it. 1 MiB holds many result rows yet bounds memory.
 */
const WEBSOCKET_BUFFER_HIGH_WATER_BYTES = 1024 * 1024;

/** Every open tunnel of one stand-in, so closing it cuts them all. */
export class WebSocketTunnels {
  readonly #webSockets = new WebSocketServer({ noServer: true });
  readonly #postgresSockets = new Set<Socket>();
  readonly #postgres: PostgresAddress;
  readonly #reportBackgroundError: (error: Error) => void;
  #closed = false;

  constructor(postgres: PostgresAddress, reportBackgroundError: (error: Error) => void) {
    this.#postgres = postgres;
    this.#reportBackgroundError = reportBackgroundError;
  }

  /**
   * Dials Postgres before completing the upgrade, so an unreachable database surfaces as an
   * HTTP 502 on the upgrade (which the driver reports) rather than a silently closed socket.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'http://proxy.invalid');
    if (this.#closed) {
      rejectUpgrade(socket, 503, 'the local Neon proxy is shutting down');
      return;
    }
    if (!WEBSOCKET_PATHS.has(url.pathname)) {
      rejectUpgrade(socket, 404, `no WebSocket endpoint at ${url.pathname}; use /v1 or /v2`);
      return;
    }
    const target = resolveWebSocketTarget(url.searchParams.get('address'), this.#postgres);
    if (!target.allowed) {
      rejectUpgrade(socket, target.status, target.reason);
      return;
    }

    const { host, port } = target.address;
    const postgres = connect({ host, port });
    this.#postgresSockets.add(postgres);
    let tunnelOpen = false;

    // A client that gives up while we dial (or whose upgrade ws rejects) must not leave a
    // Postgres connection behind. Once the tunnel is open, ws's 'close' ends Postgres instead.
    socket.on('error', () => postgres.destroy());
    socket.once('close', () => {
      if (!tunnelOpen) postgres.destroy();
    });
    postgres.on('error', (error) => {
      if (tunnelOpen) {
        this.#reportBackgroundError(error);
        return;
      }
      const reason = `could not connect to Postgres at ${host}:${port}: ${error.message}`;
      rejectUpgrade(socket, 502, reason);
    });
    postgres.once('close', () => {
      this.#postgresSockets.delete(postgres);
      // Not when a 502 is on its way out: end() flushes it and then closes the socket.
      if (!tunnelOpen && !socket.writableEnded) socket.destroy();
    });
    postgres.once('connect', () => {
      postgres.setNoDelay(true); // Postgres messages are small and latency-bound.
      this.#webSockets.handleUpgrade(request, socket, head, (webSocket) => {
        tunnelOpen = true;
        this.#pipe(webSocket, postgres);
      });
    });
  }

  #pipe(webSocket: WebSocket, postgres: Socket): void {
    webSocket.on('message', (data: RawData) => {
      // A socket Postgres has closed takes no more: its write would fail and never drain.
      if (!postgres.writable) return;
      if (!postgres.write(rawDataToBuffer(data))) webSocket.pause();
    });
    postgres.on('drain', () => webSocket.resume());

    postgres.on('data', (chunk: Buffer) => {
      if (webSocket.readyState !== WebSocket.OPEN) return;
      webSocket.send(chunk, { binary: true }, (error) => {
        if (
          !error &&
          postgres.isPaused() &&
          webSocket.bufferedAmount < WEBSOCKET_BUFFER_HIGH_WATER_BYTES
        ) {
          postgres.resume();
        }
      });
      if (webSocket.bufferedAmount >= WEBSOCKET_BUFFER_HIGH_WATER_BYTES) postgres.pause();
    });

    // end(), not destroy(): the driver's Terminate message may still be queued. resume() so a
    // paused socket still reads Postgres' FIN and closes.
    webSocket.on('close', () => {
      postgres.end();
      postgres.resume();
    });
    webSocket.on('error', (error) => {
      this.#reportBackgroundError(error);
      postgres.destroy();
    });
    postgres.once('close', (hadError) => {
      // A socket that closes with writes queued never drains: a WebSocket paused for it would
      // not read the client's close frame, and ws would hold the client for its 30 s timeout.
      webSocket.resume();
      if (
        webSocket.readyState === WebSocket.OPEN ||
        webSocket.readyState === WebSocket.CONNECTING
      ) {
        webSocket.close(
          hadError ? 1011 : 1000,
          hadError ? 'Postgres connection failed' : undefined,
        );
      }
    });
  }

  /** Test switch: cuts every open tunnel now, mid-transaction or not; new ones still open. */
  cutAll(): number {
    const open = this.#webSockets.clients.size;
    for (const webSocket of this.#webSockets.clients) webSocket.terminate();
    for (const postgres of this.#postgresSockets) postgres.destroy();
    return open;
  }

  closeAll(): void {
    this.#closed = true;
    for (const webSocket of this.#webSockets.clients) webSocket.terminate();
    for (const postgres of this.#postgresSockets) postgres.destroy();
    this.#webSockets.close();
  }
}

function rejectUpgrade(socket: Duplex, status: number, reason: string): void {
  if (socket.destroyed) return;
  const body = `${reason}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: text/plain; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `\r\n${body}`,
  );
}

function rawDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
