import { type Context, Hono } from 'hono';
import type { AppEnv, ResolvedDeps } from '../../examples/reference-service/app-deps.js';
import { isValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import { MESSAGE_STATES, type MessageState } from '../core/outbox-store.js';
import type { DeliveryCount } from '../store/postgres-store.js';
import { errorResponse, pathOfField } from './errors.js';

/** `POST /admin/drain` defaults: bounded so an operator's click cannot outlast the request. */
export const ADMIN_DRAIN_DEFAULT_MAX_MESSAGES = 500;
export const ADMIN_DRAIN_DEFAULT_BUDGET_MS = 10_000;
const ADMIN_DRAIN_MAX_BUDGET_MS = 60_000;

const HOUR_MS = 60 * 60 * 1000;

/** The last hour's outcomes: totals and per minute, from the settle-time counters. */
export async function lastHour(deps: ResolvedDeps, now: Date) {
  const perMinute = await deps.store.deliveryCounts(new Date(now.getTime() - HOUR_MS));
  const totals = perMinute.reduce(
    (sum, minute) => ({
      delivered: sum.delivered + minute.delivered,
      failed: sum.failed + minute.failed,
      dead: sum.dead + minute.dead,
    }),
    { delivered: 0, failed: 0, dead: 0 },
  );
  return { totals, perMinute };
}

/**
 * The admin JSON API, mounted under `/admin` behind `adminAuth`. Every route answers JSON; bad
 * input is a 400 naming the field; nothing is written on a 4xx.
 */
export function adminRoutes(deps: ResolvedDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/stats', async (c) => {
    const now = deps.clock.now();
    const [stats, hour] = await Promise.all([deps.store.stats(now), lastHour(deps, now)]);
    return c.json({
      stats: { ...stats, lagSeconds: stats.lagMs / 1000 },
      lastHour: hour.totals,
      perMinute: hour.perMinute,
    });
  });

  app.get('/messages', async (c) => {
    const state = c.req.query('state') ?? 'pending';
    if (!MESSAGE_STATES.includes(state as MessageState)) {
      return errorResponse(c, 400, 'invalid query', [
        { path: ['state'], message: `expected one of ${MESSAGE_STATES.join(', ')}` },
      ]);
    }
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? undefined : Number(limitText);
    try {
      const page = await deps.store.list({
        state: state as MessageState,
        kind: c.req.query('kind') || undefined,
        limit,
        cursor: c.req.query('cursor') || undefined,
      });
      return c.json(page);
    } catch (error) {
      if (isValidationError(error)) {
        return errorResponse(c, 400, 'invalid query', [
          { path: pathOfField(error.field), message: error.message },
        ]);
      }
      throw error;
    }
  });

  // Before `/messages/:id/retry`, so "retry-dead" is not taken for an id.
  app.post('/messages/retry-dead', async (c) => {
    const retried = await deps.store.retryAllDead(deps.clock.now(), {
      kind: c.req.query('kind') || undefined,
    });
    return c.json({ retried });
  });

  app.post('/messages/:id/retry', async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return badId(c);
    if (await deps.store.retryDead(id, deps.clock.now())) return c.json({ id, retried: true });
    const message = await deps.store.get(id);
    if (!message) return errorResponse(c, 404, 'no such message');
    return errorResponse(c, 409, `message is ${message.state}; only dead messages can be retried`);
  });

  app.delete('/messages/:id', async (c) => {
    const id = c.req.param('id');
    if (!isMessageId(id)) return badId(c);
    const state = await deps.store.discard(id);
    if (state) return c.json({ id, discarded: true, state });
    const message = await deps.store.get(id);
    if (!message) return errorResponse(c, 404, 'no such message');
    return errorResponse(c, 409, 'message is being delivered right now; try again shortly');
  });

  app.post('/drain', async (c) => {
    if (!deps.drain) return errorResponse(c, 503, 'no senders configured for this deployment');
    const body = await c.req.json().catch(() => ({}));
    const maxMessages = body?.maxMessages ?? ADMIN_DRAIN_DEFAULT_MAX_MESSAGES;
    const budgetMs = body?.budgetMs ?? ADMIN_DRAIN_DEFAULT_BUDGET_MS;
    if (!Number.isInteger(maxMessages) || maxMessages < 1 || maxMessages > 10_000) {
      return errorResponse(c, 400, 'invalid request body', [
        { path: ['maxMessages'], message: 'expected an integer from 1 to 10000' },
      ]);
    }
    if (!Number.isInteger(budgetMs) || budgetMs < 100 || budgetMs > ADMIN_DRAIN_MAX_BUDGET_MS) {
      return errorResponse(c, 400, 'invalid request body', [
        {
          path: ['budgetMs'],
          message: `expected an integer from 100 to ${ADMIN_DRAIN_MAX_BUDGET_MS}`,
        },
      ]);
    }
    return c.json({ report: await deps.drain({ maxMessages, budgetMs }) });
  });

  app.get('/metrics', async (c) => {
    const now = deps.clock.now();
    const [stats, hour] = await Promise.all([deps.store.stats(now), lastHour(deps, now)]);
    const text = prometheusText(stats, hour.totals);
    return c.text(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  return app;
}

function badId(c: Context): Response {
  return errorResponse(c, 400, 'invalid message id', [
    { path: ['id'], message: 'expected a positive integer' },
  ]);
}

/** Prometheus text exposition: gauges a scraper can alert on (lag, dead) without a query. */
export function prometheusText(
  stats: {
    pending: number;
    claimed: number;
    leaseExpired: number;
    delivered: number;
    dead: number;
    due: number;
    lagMs: number;
  },
  hour: Pick<DeliveryCount, 'delivered' | 'failed' | 'dead'>,
): string {
  const lines = [
    '# HELP outbox_messages Messages in the outbox table by state.',
    '# TYPE outbox_messages gauge',
    `outbox_messages{state="pending"} ${stats.pending}`,
    `outbox_messages{state="claimed"} ${stats.claimed + stats.leaseExpired}`,
    `outbox_messages{state="delivered"} ${stats.delivered}`,
    `outbox_messages{state="dead"} ${stats.dead}`,
    '# HELP outbox_due_messages Pending messages that are due now.',
    '# TYPE outbox_due_messages gauge',
    `outbox_due_messages ${stats.due}`,
    '# HELP outbox_lag_seconds Age of the oldest message that is due and not being sent.',
    '# TYPE outbox_lag_seconds gauge',
    `outbox_lag_seconds ${(stats.lagMs / 1000).toFixed(3)}`,
    '# HELP outbox_delivered_last_hour Messages delivered in the last hour.',
    '# TYPE outbox_delivered_last_hour gauge',
    `outbox_delivered_last_hour ${hour.delivered}`,
    '# HELP outbox_failed_last_hour Delivery attempts that failed in the last hour.',
    '# TYPE outbox_failed_last_hour gauge',
    `outbox_failed_last_hour ${hour.failed}`,
    '# HELP outbox_dead_last_hour Messages set aside as dead in the last hour.',
    '# TYPE outbox_dead_last_hour gauge',
    `outbox_dead_last_hour ${hour.dead}`,
  ];
  return `${lines.join('\n')}\n`;
}
