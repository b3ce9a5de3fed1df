import { Hono } from 'hono';
import { silentLogger, systemClock } from '../core/ports.js';
import { adminConfigured, adminHeaders, chain, identifyAdmin, requireAdmin } from './admin-auth.js';
import type { AdminEnv, OutboxAdminOptions, ResolvedAdmin } from './admin-options.js';
import { mountPathWithSlash } from './admin-paths.js';
import { memoryRevokedSessions, SessionSigner } from './admin-session.js';
import { registerApiRoutes } from './api-routes.js';
import { defaultClientAddress } from './client-address.js';
import { registerDashboardRoutes } from './dashboard-routes.js';
import { registerDestinationRoutes } from './destination-routes.js';
import { FailedLoginThrottle } from './login-throttle.js';
import { registerReplayRoutes } from './replay-routes.js';

/**
 * The outbox's admin surface as a Hono app to mount in yours: a JSON API (stats, lists by state
 * and kind, one message by id or key, retry, discard, drain, replay and its audit, destination
 * health with pause and resume), Prometheus `/metrics`, and an operator dashboard. It depends
 * only on the store (and, for `POST /drain`, your drain).
 *
 * Guarantees: without `token` every path answers 404; every request needs the token as a Bearer
 * header or a dashboard session (a signed, expiring cookie that never holds the token; logout
 * revokes it); cookie state changes need the session's CSRF token; wrong tokens are throttled per
 * client address, the right one never; sign-in refuses cross-site posts and bodies over 4 KiB
 * unread; every reply is `no-store`, `nosniff` and under a CSP allowing no script. Links,
 * redirects and the cookie follow wherever it is mounted.
 *
 * Every route carries its own middleware rather than a `use('*')`, so mounting it (even at `/`)
 * adds nothing to the rest of your app.
 *
 * @example
 * import { Hono } from 'hono';
 * import { outboxAdmin } from 'outbox-relay/admin';
 *
 * const app = new Hono();
 * app.route('/admin', outboxAdmin({ store: outbox.store(db), token: env.ADMIN_TOKEN }));
 * // Dashboard at /admin (and /admin/); API at /admin/stats, /admin/messages, /admin/metrics ...
 */
export function outboxAdmin(options: OutboxAdminOptions): Hono<AdminEnv> {
  const clock = options.clock ?? systemClock;
  const token = options.token || undefined;
  const admin: ResolvedAdmin = {
    store: options.store,
    token,
    drain: options.drain,
    kinds: options.kinds?.length ? [...new Set(options.kinds)].sort() : undefined,
    deadHeadBlocks: options.deadHeadBlocks ?? true,
    clock,
    logger: options.logger ?? silentLogger,
    basePath: options.basePath,
    revokedSessions: options.revokedSessions ?? memoryRevokedSessions(),
    clientAddress: options.clientAddress ?? defaultClientAddress,
    signer: token ? new SessionSigner(token) : undefined,
    throttle: options.throttle ?? new FailedLoginThrottle(clock),
  };
  const app = new Hono<AdminEnv>();
  const anonymous = chain(adminHeaders(), adminConfigured(admin));
  const identify = identifyAdmin(admin);
  registerDashboardRoutes(app, admin, anonymous, identify);
  const guard = chain(anonymous, identify, requireAdmin());
  registerApiRoutes(app, admin, guard);
  registerReplayRoutes(app, admin, guard);
  registerDestinationRoutes(app, admin, guard);
  // Last: a catch-all that answers only `/admin/` and passes every other path on.
  app.get('/*', mountPathWithSlash(admin));
  return app;
}
