/**
 * Node runtime pieces, from `outbox-relay/node`: serve the app (`serveApp`, over
 * `@hono/node-server`), and run the drain on a schedule that behaves like the serverless one
 * (`startDrainSchedule`, src/runtime/drain-schedule.ts). `@hono/node-server` is an optional peer
 * loaded when `serveApp` runs, so a process that only drains need not install it.
 */
import type { AddressInfo } from 'node:net';

export interface ServedApp {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `app` (anything with a fetch handler: a Hono app) on `hostname` (default 127.0.0.1)
 * and `port` (0: a free one). Resolves once it listens; `close()` cuts open connections and
 * resolves when the server has stopped. Needs `@hono/node-server` installed.
 */
export async function serveApp(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  options: { port: number; hostname?: string },
): Promise<ServedApp> {
  const { serve } = await import('@hono/node-server');
  const hostname = options.hostname ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: app.fetch, port: options.port, hostname },
      (info: AddressInfo) => {
        resolve({
          url: `http://${hostname}:${info.port}`,
          port: info.port,
          close: () =>
            new Promise<void>((done) => {
              if ('closeAllConnections' in server) server.closeAllConnections();
              server.close(() => done());
            }),
        });
      },
    );
    server.once('error', reject);
  });
}

/** The webhook sender's DNS check on Node: pass as `resolveHost`. */
export { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
export {
  DEFAULT_PURGE_INTERVAL_MS,
  type DrainLoopFailure,
  type DrainLoopOptions,
  type DrainLoopSummary,
  isTransientDrainFailure,
  runDrainLoop,
} from './drain-loop.js';
export {
  DEFAULT_SCHEDULE_INTERVAL_MS,
  type DrainSchedule,
  type DrainScheduleOptions,
  startDrainSchedule,
} from './drain-schedule.js';
