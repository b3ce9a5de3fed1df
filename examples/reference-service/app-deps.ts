import type { Context } from 'hono';
import {
  type BatchSqlExecutor,
  type Clock,
  type Drainer,
  type IdGenerator,
  kickAfterCommit,
  type Logger,
  type Outbox,
  type PostgresOutboxStore,
} from 'outbox-relay';
import { FailedLoginThrottle } from 'outbox-relay/admin';
import { DEFAULT_IDEMPOTENCY_TTL_MS, IdempotencyRecords } from './idempotency.js';

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
  /**
   * The operator credential: enables `/admin` and `POST /webhook-endpoints` (as
   * `Authorization: Bearer <token>`). Without it both answer 404.
   */
  adminToken?: string;
  /** Bounded drains for the kick and for `POST /admin/drain`. */
  drain?: Drainer;
  /** Drain just-written messages right after commit. Default true when `drain` is given. */
  kick?: boolean;
  /** Time a kick may take; it runs after the response, inside the request's lifetime. */
  kickBudgetMs?: number;
  /** Subrequests a kick may spend (Workers: what is left of the invocation's limit). */
  kickSubrequestBudget?: number;
  /** `From` for the service's emails; else the SES sender's default. */
  emailFrom?: string;
  /**
   * Write an `order.placed` event with each order, for a queue (its ordering key the customer,
   * so one customer's events go in order). Default false: only when a sender is configured.
   */
  orderEvents?: boolean;
  /** Request bodies above this are refused with 413. */
  maxBodyBytes?: number;
  /**
   * How long an Idempotency-Key is remembered (default `DEFAULT_IDEMPOTENCY_TTL_MS`, 24 h).
   * Expired records are deleted by the scheduled purge (`idempotencyPurge` as `purgeWith`).
   */
  idempotencyTtlMs?: number;
  /**
   * Where wrong admin tokens are counted: `/admin` and `POST /webhook-endpoints` share it, so a
   * guesser meets one record whichever it tries. Default: a new one for this app.
   */
  loginThrottle?: FailedLoginThrottle;
  clock?: Clock;
  newId?: IdGenerator;
  logger?: Logger;
}

/** The event each order writes for a queue when `orderEvents` is on: `{ order }`. */
export const ORDER_PLACED_KIND = 'order.placed';

/** Hono's context variables for this app. */
export type AppEnv = {
  Variables: { requestId: string };
};

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
  orderEvents: boolean;
  maxBodyBytes: number;
  idempotency: IdempotencyRecords;
  loginThrottle: FailedLoginThrottle;
  clock: Clock;
  newId: IdGenerator;
  logger: Logger;
  /** Starts a kick for these keys without delaying the response. */
  kickAfterCommit(c: Context, keys: readonly string[]): void;
}

/** What runs when a test gives no logger: nothing. */
const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const systemClock: Clock = { now: () => new Date() };

export function resolveDeps(deps: AppDeps): ResolvedDeps {
  const appSchema = deps.appSchema ?? 'app';
  const logger = deps.logger ?? silentLogger;
  const drain = deps.drain;
  const kickEnabled = drain !== undefined && deps.kick !== false;
  const clock = deps.clock ?? systemClock;
  return {
    db: deps.db,
    outbox: deps.outbox,
    store: deps.outbox.store(deps.db),
    appSchema,
    adminToken: deps.adminToken || undefined,
    drain,
    emailFrom: deps.emailFrom,
    orderEvents: deps.orderEvents ?? false,
    maxBodyBytes: deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    idempotency: new IdempotencyRecords(
      deps.db,
      appSchema,
      deps.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS,
    ),
    loginThrottle: deps.loginThrottle ?? new FailedLoginThrottle(clock),
    clock,
    newId: deps.newId ?? (() => crypto.randomUUID()),
    logger,
    kickAfterCommit(c, keys) {
      if (!kickEnabled || !drain) return;
      kickAfterCommit(c, drain, keys, {
        budgetMs: deps.kickBudgetMs,
        subrequestBudget: deps.kickSubrequestBudget,
        logger,
      });
    },
  };
}
