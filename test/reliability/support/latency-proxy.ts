/**
 * A slow database on demand: a TCP relay in front of PostgreSQL that holds every chunk, each
 * way, for `delayMs` (0 passes straight through). Change the delay only between phases: chunks
 * already held keep the delay they were given.
 */

import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

export interface LatencyProxy {
  host: string;
  port: number;
  delayMs: number;
  close(): Promise<void>;
}

export async function startLatencyProxy(target: {
  host: string;
  port: number;
}): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const proxy = { delayMs: 0 } as LatencyProxy;
  const relay = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (proxy.delayMs === 0) to.write(chunk);
      else setTimeout(() => to.destroyed || to.write(chunk), proxy.delayMs);
    });
    from.on('close', () => setTimeout(() => to.destroy(), proxy.delayMs));
    from.on('error', () => to.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(target);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(proxy, {
    host: '127.0.0.1',
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
}
