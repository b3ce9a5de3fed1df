import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { requestId } from 'hono/request-id';
import { describeError } from 'outbox-relay';
import { errorResponse, outboxAdmin } from 'outbox-relay/admin';
import { type AppDeps, type AppEnv, resolveDeps } from './app-deps.js';
import { domainRoutes } from './domain-routes.js';

/**
 * The reference service: domain endpoints whose writes carry their side effects as outbox rows
 * in the same transaction, an admin API, metrics and a dashboard. Runtimes (Node, Workers,
 * Lambda) only supply `deps`.
 *
 * @example
 * const app = createApp({ db: neonHttpExecutor(sql), outbox, adminToken: env.ADMIN_TOKEN });
 * export default { fetch: app.fetch };
 */
export function createApp(deps: AppDeps): Hono<AppEnv> {
  const resolved = resolveDeps(deps);
  const app = new Hono<AppEnv>();

  app.use('*', requestId());
  app.use(
    '*',
    bodyLimit({
      maxSize: resolved.maxBodyBytes,
      onError: (c) => errorResponse(c, 413, `request body over ${resolved.maxBodyBytes} bytes`),
    }),
  );

  app.route('/', domainRoutes(resolved));
  // The library's admin app, mounted the way any user mounts it.
  app.route(
    '/admin',
    outboxAdmin({
      store: resolved.store,
      token: resolved.adminToken,
      drain: resolved.drain,
      // Every kind the outbox accepts: each has a sender, or waits for one (see `skipped`).
      kinds: [...resolved.outbox.kinds.keys()],
      clock: resolved.clock,
      logger: resolved.logger,
      throttle: resolved.loginThrottle,
    }),
  );

  app.notFound((c) => errorResponse(c, 404, `no route for ${c.req.method} ${c.req.path}`));
  app.onError((error, c) => {
    if (error instanceof HTTPException) {
      // Hono's own refusals: malformed JSON (400) and the like. Their message is safe to show.
      return errorResponse(c, error.status as 400, error.message || 'bad request');
    }
    const id = c.get('requestId');
    resolved.logger.error('request failed', {
      requestId: id,
      method: c.req.method,
      path: c.req.path,
      error: describeError(error),
    });
    return c.json({ error: 'internal error', requestId: id }, 500);
  });
  return app;
}
