import type { Context } from 'hono';
import type { DrainReport } from '../core/drain.js';
import { describeError } from '../core/errors.js';
import {
  type BatchSqlExecutor,
  type Clock,
  type IdGenerator,
  type Logger,
  randomId,
  silentLogger,
  systemClock,
} from '../core/ports.js';
import type { Outbox } from '../outbox.js';
import type { PostgresOutboxStore } from '../store/postgres-store.js';
import { DEFAULT_IDEMPOTENCY_TTL_MS, IdempotencyRecords } from './idempotency.js';

/** What a bounded drain run by the app needs to be told. */
export interface DrainRequest {
  /** Only these message keys (the after-commit kick). */
  keys?: readonly string[];
  maxMessages?: number;
  /** Time the drain may take. */
  budgetMs: number;
}

/** Runs a bounded drain with the runtime's senders. Runtimes build it; the app only calls it. */
export type Drainer = (request: DrainRequest) => Promise<DrainReport>;

/**
 * Everything the app needs, supplied by the runtime (Node, Workers, Lambda) or by tests.
 */
export interface AppDeps {
  /**
   * The database for domain writes: each request's rows, messages and idempotency record go in
   * ONE `batch` transaction. Neon WebSocket (`neonWsExecutor(pool)`) or Neon HTTP
   * (`neonHttpExecutor(sql)`, one `sql.transaction`) both work.
   */
  db: BatchSqlExecutor;
  /** The outbox, with payload validators for `email` and `webhook`. */
  outbox: Outbox;
  /** Schema of the reference service's tables. Default `app`. */
  appSchema?: string;
  /** Enables `/admin`. Without it the admin surface answers 404. */
  adminToken?: string;
  /** Bounded drains for the kick and for `POST /admin/drain`. */
  drain?: Drainer;
  /** Drain just-written messages right after commit. Default true when `drain` is given. */
  kick?: boolean;
  /** Time a kick may take; it runs after the response, inside the request's lifetime. */
  kickBudgetMs?: number;
  /** `From` for the service's emails; else the SES sender's default. */
  emailFrom?: string;
  /** Request bodies above this are refused with 413. */
  maxBodyBytes?: number;
  idempotencyTtlMs?: number;
  clock?: Clock;
  newId?: IdGenerator;
  logger?: Logger;
}

/** Hono's context variables for this app. */
export type AppEnv = {
  Variables: { requestId: string; adminAuth: 'bearer' | 'cookie' };
};

/**
 * 5 s for a kick: enough to send a handful of messages to a healthy provider, well inside a
 * Worker's post-response `waitUntil` window. Whatever it leaves, the schedule picks up.
 */
export const DEFAULT_KICK_BUDGET_MS = 5_000;

/**
 * 64 KiB of JSON: an order of 100 items is a few KiB; anything far larger is a mistake or abuse.
 */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export interface ResolvedDeps {
  db: BatchSqlExecutor;
  outbox: Outbox;
  store: PostgresOutboxStore;
  appSchema: string;
  adminToken: string | undefined;
  drain: Drainer | undefined;
  emailFrom: string | undefined;
  maxBodyBytes: number;
  idempotency: IdempotencyRecords;
  clock: Clock;
  newId: IdGenerator;
  logger: Logger;
  /** Starts a kick for these keys without delaying the response. */
  kickAfterCommit(c: Context, keys: readonly string[]): void;
}

export function resolveDeps(deps: AppDeps): ResolvedDeps {
  const appSchema = deps.appSchema ?? 'app';
  const logger = deps.logger ?? silentLogger;
  const kickEnabled = deps.drain !== undefined && deps.kick !== false;
  const kickBudgetMs = deps.kickBudgetMs ?? DEFAULT_KICK_BUDGET_MS;
  return {
    db: deps.db,
    outbox: deps.outbox,
    store: deps.outbox.store(deps.db),
    appSchema,
    adminToken: deps.adminToken || undefined,
    drain: deps.drain,
    emailFrom: deps.emailFrom,
    maxBodyBytes: deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    idempotency: new IdempotencyRecords(
      deps.db,
      appSchema,
      deps.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS,
    ),
    clock: deps.clock ?? systemClock,
    newId: deps.newId ?? randomId,
    logger,
    kickAfterCommit(c, keys) {
      if (!kickEnabled || keys.length === 0 || !deps.drain) return;
      // Through the same claim path as the schedule, so a kick and a scheduled drain never both
      // send a message. A failed kick loses nothing: the rows stay due for the schedule.
      const kick = deps
        .drain({ keys, maxMessages: keys.length, budgetMs: kickBudgetMs })
        .catch((error: unknown) => {
          logger.warn('kick failed; the schedule will deliver', { error: describeError(error) });
        });
      keepAlive(c, kick);
    },
  };
}

/**
 * On Workers, `waitUntil` keeps the invocation alive after the response until the kick ends.
 * On Node there is no execution context and the promise simply runs on.
 */
function keepAlive(c: Context, work: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    // No execution context (Node, tests): nothing to extend.
  }
}
