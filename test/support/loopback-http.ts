/**
 * Real HTTP servers on loopback for the sender tests: they count every TCP connection (so a
 * test can prove a refused URL never connected) and every request, and hand each request's
 * full body to the test's handler.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** TCP connections accepted so far. */
  connections(): number;
  /** Requests received so far, in arrival order. */
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

export type LoopbackHandler = (
  request: ReceivedRequest,
  response: ServerResponse,
  raw: IncomingMessage,
) => unknown;

/**
 * Starts a server on a free port. `host` defaults to 127.0.0.1; `::` listens dual-stack, so
 * both 127.0.0.1 and [::1] reach it.
 */
export async function startLoopbackServer(
  handler: LoopbackHandler,
  host = '127.0.0.1',
): Promise<LoopbackServer> {
  let connections = 0;
  const requests: ReceivedRequest[] = [];
  const server = createServer((raw, response) => {
    const chunks: Buffer[] = [];
    raw.on('data', (chunk: Buffer) => chunks.push(chunk));
    raw.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(raw.headers)) {
        if (typeof value === 'string') headers[name] = value;
        else if (Array.isArray(value)) headers[name] = value.join(', ');
      }
      const request: ReceivedRequest = {
        method: raw.method ?? '',
        url: raw.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      Promise.resolve(handler(request, response, raw)).catch((error: unknown) => {
        response.statusCode = 599;
        response.end(String(error));
      });
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: () => connections,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: bound, then released. */
export async function unusedPort(): Promise<number> {
  const server = await startLoopbackServer(() => {});
  const { port } = server;
  await server.close();
  return port;
}
