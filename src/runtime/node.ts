/**
 * Node runtime pieces: serve the app, and run the drain on a schedule that behaves like the
 * serverless one (each tick one bounded drain, then an occasional purge): `runDrainLoop`, kept
 * going through any failure, since it runs beside a web server.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { DrainReport } from '../core/drain-settings.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import { type PurgeReport, type PurgeStore, purgeOnce } from '../core/purge.js';
import { DEFAULT_PURGE_INTERVAL_MS, type DrainLoopSummary, runDrainLoop } from './drain-loop.js';
import { type Drainer, MIN_DRAIN_BUDGET_MS } from './drainer.js';

export { DEFAULT_PURGE_INTERVAL_MS };

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

export interface DrainScheduleOptions {
  /** `createDrainer(setup)`: each tick runs it with the tick's budget and the stop signal. */
  drain: Drainer;
  purgeStore?: PurgeStore;
  intervalMs?: number;
  /**
   * Each tick's drain budget; default the interval (at least `MIN_DRAIN_BUDGET_MS`), like a
   * cron invocation's time limit.
   */
  budgetMs?: number;
  purgeIntervalMs?: number;
  /** Your own clean-up after each purge (see `DrainerOptions.purgeWith`). */
  purgeWith?: (now: Date) => Promise<Record<string, number>>;
  logger: Logger;
  onTick?: (report: DrainReport) => void;
  onPurge?: (report: PurgeReport) => void;
}

export interface DrainSchedule {
  /**
   * Stops: the running tick claims nothing more, its sends in flight finish and every outcome
   * is recorded (rows claimed and not yet sent go back due), then the schedule resolves.
   */
  stop(): Promise<void>;
  /** Settles when the schedule has stopped, with its ticks and totals. */
  stopped: Promise<DrainLoopSummary>;
}

/**
 * Ticks like a cron trigger, through {@link runDrainLoop}: one bounded drain at a time; a tick
 * that ran out of time or budget with work still due is followed at once by the next. Every
 * failed tick is logged and the next one tries again after the interval; nothing is lost,
 * because unsettled rows keep their lease.
 */
export function startDrainSchedule(options: DrainScheduleOptions): DrainSchedule {
  const intervalMs = options.intervalMs ?? DEFAULT_SCHEDULE_INTERVAL_MS;
  const { purgeStore } = options;
  const budgetMs = options.budgetMs ?? Math.max(intervalMs, MIN_DRAIN_BUDGET_MS);
  if (!(budgetMs >= MIN_DRAIN_BUDGET_MS)) {
    throw new RangeError(`budgetMs must be at least ${MIN_DRAIN_BUDGET_MS}, got ${budgetMs}`);
  }
  const stop = new AbortController();
  const loop = runDrainLoop({
    drain: options.drain,
    intervalMs,
    budgetMs,
    purge:
      purgeStore &&
      (async () => {
        const report = await purgeOnce({ store: purgeStore });
        if (options.purgeWith) await options.purgeWith(new Date());
        return report;
      }),
    purgeIntervalMs: options.purgeIntervalMs,
    signal: stop.signal,
    onTick: options.onTick && ((report) => options.onTick?.(report)),
    onPurge: options.onPurge && ((report) => options.onPurge?.(report)),
    onError: ({ error, phase }) => {
      options.logger.error(`scheduled ${phase} failed; retrying next tick`, {
        error: describeError(error),
      });
    },
    onPermanentFailure: 'continue',
  });
  return {
    async stop() {
      stop.abort();
      await loop;
    },
    stopped: loop,
  };
}

/** The webhook sender's DNS check on Node: pass as `resolveHost`. */
export { nodeHostResolver } from '../senders/webhook/node-host-resolver.js';
export {
  type DrainLoopOptions,
  type DrainLoopSummary,
  isTransientDrainFailure,
  runDrainLoop,
} from './drain-loop.js';
