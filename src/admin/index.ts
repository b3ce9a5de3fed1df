// `outbox-relay/admin`: the admin API, metrics and dashboard as a Hono app to mount in yours.

// Replay and redrive: what the admin's routes (and the dashboard) run, for your own tools too.
export {
  countReplay,
  DEFAULT_REPLAY_BATCH_SIZE,
  DEFAULT_REPLAY_RATE_PER_SECOND,
  MAX_REPLAY_BATCH_SIZE,
  MAX_REPLAY_RATE_PER_SECOND,
  REPLAY_SAMPLE_SIZE,
  type ReplayAudit,
  type ReplayCursor,
  type ReplayOptions,
  type ReplayOutcome,
  type ReplayProgress,
  type ReplayReport,
  type ReplaySampleMessage,
  type ReplayStore,
  replayMessages,
} from '../core/replay.js';
export {
  checkReplaySelection,
  MAX_SELECTION_VALUES,
  REPLAY_STATES,
  type ReplaySelection,
  type ReplayState,
} from '../core/replay-selection.js';
export { type ErrorBody, errorResponse, type Issue, pathOfField } from '../http/json-errors.js';
export type { DestinationPaused } from '../store/destination-store.js';
export type { DrainRunTotals, OutcomeTotals } from '../store/metric-statements.js';
export {
  DEFAULT_REPLAY_AUDIT_LIMIT,
  MAX_REPLAY_AUDIT_LIMIT,
  type PostgresReplayStore,
} from '../store/replay-store.js';
export {
  ADMIN_CSP,
  type AdminBearerAuthOptions,
  adminBearerAuth,
  CSRF_FIELD,
  CSRF_HEADER,
} from './admin-auth.js';
export type {
  AdminAuth,
  AdminDrainRequest,
  AdminEnv,
  OutboxAdminOptions,
} from './admin-options.js';
export {
  ADMIN_SESSION_COOKIE,
  memoryRevokedSessions,
  type RevokedSessions,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
} from './admin-session.js';
export { ADMIN_DRAIN_DEFAULT_BUDGET_MS, ADMIN_DRAIN_DEFAULT_MAX_MESSAGES } from './api-routes.js';
export {
  type ClientAddress,
  clientAddressFromHeader,
  defaultClientAddress,
} from './client-address.js';
export { DASHBOARD_DESTINATIONS_PAGE_SIZE } from './dashboard-destination-routes.js';
export { DASHBOARD_MATCH_LIMIT, DASHBOARD_PAGE_SIZE } from './dashboard-list-routes.js';
export {
  DASHBOARD_REPLAY_BUDGET_MS,
  DASHBOARD_REPLAYS_PAGE_SIZE,
} from './dashboard-replay-routes.js';
export { DASHBOARD_RECENT_ERRORS_LIMIT } from './dashboard-routes.js';
export { FILTER_TEXT_MAX_CHARS } from './list-filter.js';
export { ADMIN_FORM_MAX_BODY_BYTES } from './login-guards.js';
export {
  FAILED_LOGIN_BASE_DELAY_MS,
  FAILED_LOGIN_FREE_ATTEMPTS,
  FAILED_LOGIN_MAX_DELAY_MS,
  FailedLoginThrottle,
  type FailedLoginVerdict,
} from './login-throttle.js';
export {
  DESTINATION_METRIC_LIMIT,
  type HourTotals,
  type MetricsSnapshot,
  prometheusText,
  readMetrics,
} from './metrics.js';
export { outboxAdmin } from './outbox-admin.js';
export {
  ADMIN_REPLAY_DEFAULT_BUDGET_MS,
  ADMIN_REPLAY_MAX_BUDGET_MS,
} from './replay-routes.js';
