/**
 * The admin JSON API (and Prometheus `/metrics`). Every route answers JSON; bad input is a 400
 * naming the field; nothing is written on a 4xx. Paths are relative to the mount path:
 *
 * - `GET /stats`: counts by state (held ones apart), lag, the last hour's outcomes per minute.
 * - `GET /messages?state=&kind=&limit=&cursor=`: one page of a state, oldest first, keyset cursor.
 * - `GET /messages/:id`, `GET /messages/by-key/:key`: one message, whole.
 * - `POST /messages/:id/retry`, `POST /messages/retry-dead?kind=`, `DELETE /messages/:id`.
 * - `POST /drain` `{ maxMessages?, budgetMs? }`: a bounded drain now (503 without `drain`).
 * - `GET /metrics`: Prometheus text.
 * - Replay (`/replays`, `/replays/dry-run`): in replay-routes.ts.
 * - Destination health (`/destinations`, `.../pause`, `.../resume`): in destination-routes.ts.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { isValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import { MESSAGE_STATES, type MessageState } from '../core/outbox-store.js';
import { errorResponse, pathOfField } from '../http/json-errors.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { lastHour, prometheusText, readMetrics } from './metrics.js';

/** `POST /drain` defaults: bounded so an operator's click cannot outlast the request. */
export const ADMIN_DRAIN_DEFAULT_MAX_MESSAGES = 500;
export const ADMIN_DRAIN_DEFAULT_BUDGET_MS = 10_000;
/** A minute: past that, a serverless request is likely cut off before the drain reports. */
const ADMIN_DRAIN_MAX_BUDGET_MS = 60_000;
const ADMIN_DRAIN_MAX_MESSAGES = 10_000;

/** Registers the API on `app`, every route behind `guard` (headers, credential, 401). */
export function registerApiRoutes(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  guard: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock, deadHeadBlocks } = admin;

  app.get('/stats', guard, async (c) => {
    const now = clock.now();
    const [stats, hour] = await Promise.all([
      store.stats(now, { deadHeadBlocks }),
      lastHour(store, now),
    ]);
    return c.json({
      stats: { ...stats, lagSeconds: stats.lagMs / 1000 },
      lastHour: hour.totals,
      perMinute: hour.perMinute,
    });
  });

  app.get('/messages', guard, async (c) => {
    const state = c.req.query('state') ?? 'pending';
    if (!MESSAGE_STATES.includes(state as MessageState)) {
      return errorResponse(c, 400, 'invalid query', [
        { path: ['state'], message: `expected one of ${MESSAGE_STATES.join(', ')}` },
      ]);
    }
    const limitText = c.req.query('limit');
    return answerOrBadQuery(c, async () =>
      c.json(
        await store.list({
          state: state as MessageState,
          kind: c.req.query('kind') || undefined,
          limit: limitText === undefined ? undefined : Number(limitText),
          cursor: c.req.query('cursor') || undefined,
        }),
      ),
    );
  });

  app.get('/messages/by-key/:key', guard, async (c) =>
    answerOrBadQuery(c, async () => {
      const message = await store.getByKey(c.req.param('key'));
      return message ? c.json({ message }) : errorResponse(c, 404, 'no message with that key');
    }),
  );

  app.get('/messages/:id', guard, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return badId(c);
    const message = await store.get(id);
    return message ? c.json({ message }) : errorResponse(c, 404, 'no such message');
  });

  // Before `/messages/:id/retry`, so "retry-dead" is not taken for an id.
  app.post('/messages/retry-dead', guard, async (c) => {
    const retried = await store.retryAllDead(clock.now(), {
      kind: c.req.query('kind') || undefined,
    });
    return c.json({ retried });
  });

  app.post('/messages/:id/retry', guard, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return badId(c);
    if (await store.retryDead(id, clock.now())) return c.json({ id, retried: true });
    const message = await store.get(id);
    if (!message) return errorResponse(c, 404, 'no such message');
    return errorResponse(c, 409, `message is ${message.state}; only dead messages can be retried`);
  });

  app.delete('/messages/:id', guard, async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return badId(c);
    const state = await store.discard(id);
    if (state) return c.json({ id, discarded: true, state });
    const message = await store.get(id);
    if (!message) return errorResponse(c, 404, 'no such message');
    return errorResponse(c, 409, 'message is being delivered right now; try again shortly');
  });

  app.post('/drain', guard, async (c) => {
    if (!admin.drain) return errorResponse(c, 503, 'no drain configured for this deployment');
    const body: unknown = await c.req.json().catch(() => ({}));
    const fields =
      typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const maxMessages = fields.maxMessages ?? ADMIN_DRAIN_DEFAULT_MAX_MESSAGES;
    const budgetMs = fields.budgetMs ?? ADMIN_DRAIN_DEFAULT_BUDGET_MS;
    if (!isIntegerIn(maxMessages, 1, ADMIN_DRAIN_MAX_MESSAGES)) {
      return errorResponse(c, 400, 'invalid request body', [
        {
          path: ['maxMessages'],
          message: `expected an integer from 1 to ${ADMIN_DRAIN_MAX_MESSAGES}`,
        },
      ]);
    }
    if (!isIntegerIn(budgetMs, 100, ADMIN_DRAIN_MAX_BUDGET_MS)) {
      return errorResponse(c, 400, 'invalid request body', [
        {
          path: ['budgetMs'],
          message: `expected an integer from 100 to ${ADMIN_DRAIN_MAX_BUDGET_MS}`,
        },
      ]);
    }
    return c.json({ report: await admin.drain({ maxMessages, budgetMs }) });
  });

  app.get('/metrics', guard, async (c) => {
    const snapshot = await readMetrics(store, clock.now(), { deadHeadBlocks });
    return c.text(prometheusText(snapshot), 200, {
      'content-type': 'text/plain; version=0.0.4; charset=utf-8',
    });
  });
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
}

/** Runs a store read; its `ValidationError` (a bad cursor, limit or key) becomes a 400. */
async function answerOrBadQuery(c: Context, answer: () => Promise<Response>): Promise<Response> {
  try {
    return await answer();
  } catch (error) {
    if (isValidationError(error)) {
      return errorResponse(c, 400, 'invalid query', [
        { path: pathOfField(error.field), message: error.message },
      ]);
    }
    throw error;
  }
}

function badId(c: Context): Response {
  return errorResponse(c, 400, 'invalid message id', [
    { path: ['id'], message: 'expected a positive integer no larger than 9223372036854775807' },
  ]);
}
