import type { DrainReport } from '../core/drain-settings.js';
import type { Clock, Logger } from '../core/ports.js';
import type { DrainRequest } from '../runtime/drainer.js';
import type { PostgresOutboxStore } from '../store/postgres-store.js';
import type { AdminSession, RevokedSessions, SessionSigner } from './admin-session.js';
import type { ClientAddress } from './client-address.js';
import type { FailedLoginThrottle } from './login-throttle.js';

/** A bounded drain run on an operator's request (`POST /drain`): a `DrainRequest` with a budget. */
export type AdminDrainRequest = Pick<DrainRequest, 'keys' | 'maxMessages'> &
  Required<Pick<DrainRequest, 'budgetMs'>>;

/** What `outboxAdmin` needs; everything but `store` is optional. */
export interface OutboxAdminOptions {
  /** The outbox table: `outbox.store(db)`. */
  store: PostgresOutboxStore;
  /**
   * The admin token: API clients send `Authorization: Bearer <token>`; the dashboard asks for it
   * once and then holds a signed session. Without it every admin path answers 404, so an
   * unconfigured deployment does not even advertise the surface.
   */
  token: string | undefined;
  /**
   * Runs a bounded drain with your senders and settings (`createDrainer(setup)`); without it
   * `POST /drain` answers 503.
   */
  drain?: (request: AdminDrainRequest) => Promise<DrainReport>;
  /**
   * The kinds the dashboard's kind filter offers: your senders' kinds (`Object.keys(senders)`),
   * or every kind your outbox accepts (`[...outbox.kinds.keys()]`), which also covers kinds
   * waiting for a sender. A list filtered by any other kind is refused with 400. Without it the
   * filter is a text box taking any kind name.
   */
  kinds?: readonly string[];
  /**
   * Whether your drains let a dead message block later messages with its ordering key (their
   * `deadHeadBlocks`): stats, the dashboard and `/metrics` then count such messages as held,
   * not due. Default true, as the drains'.
   */
  deadHeadBlocks?: boolean;
  clock?: Clock;
  logger?: Logger;
  /**
   * The public path the app is mounted at, when it differs from the routing path (a proxy that
   * strips a prefix). Default: the path Hono routed it under.
   */
  basePath?: string;
  /** Sessions ended by logout. Default: in memory, per process or isolate (see admin-session). */
  revokedSessions?: RevokedSessions;
  /** The client address failed logins are counted under. Default: `defaultClientAddress`. */
  clientAddress?: ClientAddress;
  /**
   * The record wrong tokens are counted in. Pass one shared with `adminBearerAuth` so your own
   * token-guarded routes count against it too. Default: one of this app's own.
   */
  throttle?: FailedLoginThrottle;
}

/** How a request proved it may use the admin surface. */
export type AdminAuth = { method: 'bearer' } | { method: 'cookie'; session: AdminSession };

/** Hono context variables inside the admin app. */
export type AdminEnv = {
  Variables: {
    /** Unset on an anonymous request. */
    adminAuth?: AdminAuth;
    /** The mount path, without a trailing slash. */
    adminBase: string;
  };
};

/** The options with defaults filled in, and the per-app state built from them. */
export interface ResolvedAdmin {
  store: PostgresOutboxStore;
  token: string | undefined;
  drain: OutboxAdminOptions['drain'];
  /** Sorted, each once; undefined when none were given. */
  kinds: readonly string[] | undefined;
  deadHeadBlocks: boolean;
  clock: Clock;
  logger: Logger;
  basePath: string | undefined;
  revokedSessions: RevokedSessions;
  clientAddress: ClientAddress;
  /** Undefined without a token. */
  signer: SessionSigner | undefined;
  throttle: FailedLoginThrottle;
}
