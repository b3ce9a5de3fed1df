/**
 * Node runtime pieces: serve the app, and run the drain on a schedule that behaves like the
 * serverless one (each tick one bounded `drainOnce`, then an occasional purge).
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { DrainReport } from '../core/drain.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import { type PurgeReport, type PurgeStore, purgeOnce } from '../core/purge.js';
import type { Drainer } from './drainer.js';

export interface ServedApp {
  url: string;
  port: number;
  close(): Promise<void>;
}

export function serveApp(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  options: { port: number; hostname?: string },
): Promise<ServedApp> {
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

/** Five seconds: quick enough that local messages seem instant, rare enough to stay quiet. */
export const DEFAULT_SCHEDULE_INTERVAL_MS = 5_000;

/** Purge once an hour: old rows accumulate slowly; there is no hurry. */
export const DEFAULT_PURGE_INTERVAL_MS = 60 * 60 * 1000;

export interface DrainScheduleOptions {
  drain: Drainer;
  purgeStore?: PurgeStore;
  intervalMs?: number;
  /** Each tick's drain budget; default the interval, like a cron invocation's time limit. */
  budgetMs?: number;
  purgeIntervalMs?: number;
  logger: Logger;
  onTick?: (report: DrainReport) => void;
  onPurge?: (report: PurgeReport) => void;
}

export interface DrainSchedule {
  /** Lets the running tick finish (its drain settles everything), then stops. */
  stop(): Promise<void>;
}

/**
 * Ticks like a cron trigger: one bounded drain per interval, never two at once; a tick that ran
 * out of time or budget with work still due is followed at once by the next. A failed tick is
 * logged and the next one tries again; nothing is lost, because unsettled rows keep their lease.
 */
export function startDrainSchedule(options: DrainScheduleOptions): DrainSchedule {
  const intervalMs = options.intervalMs ?? DEFAULT_SCHEDULE_INTERVAL_MS;
  const budgetMs = options.budgetMs ?? intervalMs;
  const purgeIntervalMs = options.purgeIntervalMs ?? DEFAULT_PURGE_INTERVAL_MS;
  let stopped = false;
  let lastPurge = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let wake: (() => void) | undefined;

  /** Whether the last tick stopped with work still due (deadline or budget), so go again now. */
  let moreDue = false;
  const tick = async () => {
    moreDue = false;
    try {
      const report = await options.drain({ budgetMs });
      moreDue = report.stopReason === 'deadline' || report.stopReason === 'budget';
      options.onTick?.(report);
      if (options.purgeStore && Date.now() - lastPurge >= purgeIntervalMs) {
        lastPurge = Date.now();
        options.onPurge?.(await purgeOnce({ store: options.purgeStore }));
      }
    } catch (error) {
      options.logger.error('scheduled drain failed; retrying next tick', {
        error: describeError(error),
      });
    }
  };

  const loop = (async () => {
    while (!stopped) {
      await tick();
      if (stopped) break;
      // A tick cut short left messages due: unlike a cron trigger, we need not wait for the next.
      if (moreDue) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, intervalMs);
      });
    }
  })();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}

/** The webhook sender's DNS check on Node: pass as `resolveHost`. */
export { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
