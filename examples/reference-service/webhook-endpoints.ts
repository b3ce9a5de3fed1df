import { Hono } from 'hono';
import type { NewMessage, Statement } from 'outbox-relay';
import { adminBearerAuth } from 'outbox-relay/admin';
import { quoteSchema } from 'outbox-relay/sql';
import { generateWebhookSecret, webhookUrlProblem } from 'outbox-relay/webhook';
import { z } from 'zod';
import type { AppEnv, ResolvedDeps } from './app-deps.js';
import { commitOnce } from './commit-once.js';
import { validJson, webhookUrl } from './request-body.js';

/** Events a webhook endpoint may subscribe to, with the route that emits each. */
export const WEBHOOK_EVENTS = ['user.created', 'order.created'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** What a replay of a registration says in place of the secret, which is never stored there. */
export const SECRET_NOT_REPLAYED =
  'the signing secret is returned only in the first response to this request';

const webhookEndpointBody = z.object({
  url: webhookUrl(),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length),
});

/**
 * `POST /webhook-endpoints`: registering a receiver of every user's and order's data is an
 * operator action, behind the admin token as `Authorization: Bearer <ADMIN_TOKEN>` (absent,
 * 404, when no token is configured, like `/admin`). Wrong tokens count in the same throttle as
 * `/admin`'s (the library's `adminBearerAuth`). The URL is checked with the same rule every
 * later enqueue applies, so a registered endpoint can never make a domain write fail.
 */
export function webhookEndpointRoutes(deps: ResolvedDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const table = `${quoteSchema(deps.appSchema)}.webhook_endpoints`;

  const operatorOnly = adminBearerAuth(deps.adminToken, {
    throttle: deps.loginThrottle,
    logger: deps.logger,
  });
  app.post('/webhook-endpoints', operatorOnly, validJson(webhookEndpointBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/webhook-endpoints', input, async () => {
      const id = deps.newId();
      const secret = generateWebhookSecret();
      const events = [...new Set(input.events)];
      const endpoint = { id, url: input.url, events };
      return {
        statements: [
          {
            name: 'insertWebhookEndpoint',
            text: `INSERT INTO ${table} (id, url, events, secret) VALUES ($1, $2, $3::text[], $4)`,
            params: [id, input.url, events, secret],
          },
        ],
        messageKeys: [],
        // The secret is shown once, here: receivers need it to verify signatures.
        response: { status: 201, body: { endpoint, secret } },
        // Stored for replays without it: the record is plain text and outlives this request.
        replay: { status: 201, body: { endpoint, secret: null, secretNote: SECRET_NOT_REPLAYED } },
      };
    });
  });
  return app;
}

interface Subscriber {
  id: string;
  url: string;
}

/**
 * Read before the write transaction: an endpoint created while this request runs may miss this
 * one event, as with any subscription that takes effect "from now on".
 */
export async function subscribedEndpoints(
  deps: ResolvedDeps,
  event: WebhookEvent,
): Promise<Subscriber[]> {
  const { rows } = await deps.db.query(
    `SELECT id, url FROM ${quoteSchema(deps.appSchema)}.webhook_endpoints
     WHERE disabled_at IS NULL AND events @> ARRAY[$1]::text[]
     ORDER BY created_at, id`,
    [event],
  );
  return rows.map((row) => ({ id: String(row.id), url: String(row.url) }));
}

/** The webhook messages of one event, and the statement recording endpoints skipped. */
export interface EventWebhooks {
  messages: NewMessage[];
  /** Present when an endpoint was skipped: records why on its row, in the same transaction. */
  recordSkips?: Statement;
}

/**
 * One webhook message per subscriber, ordered per endpoint: each receiver sees its events in the
 * order they happened, and one slow endpoint does not hold back the others.
 *
 * An endpoint whose URL the enqueue would refuse (stored before registration checked it, or
 * written by hand) is skipped, never allowed to fail the domain write it follows: the skip is
 * logged as a warning and recorded on its row (`skip_count`, `last_skipped_at`,
 * `last_skip_reason`) for the operator to fix or disable it.
 */
export function webhooksFor(
  deps: ResolvedDeps,
  subscribers: readonly Subscriber[],
  event: WebhookEvent,
  data: Record<string, unknown>,
): EventWebhooks {
  const now = deps.clock.now();
  const body = JSON.parse(JSON.stringify({ ...data, occurredAt: now.toISOString() }));
  const messages: NewMessage[] = [];
  const skipped: { id: string; reason: string }[] = [];
  for (const endpoint of subscribers) {
    const problem = webhookUrlProblem(endpoint.url);
    if (problem !== undefined) {
      skipped.push({ id: endpoint.id, reason: `url ${problem}` });
      continue;
    }
    messages.push({
      kind: 'webhook',
      orderingKey: `webhook-endpoint:${endpoint.id}`,
      payload: { url: endpoint.url, endpointId: endpoint.id, event, body },
    });
  }
  if (skipped.length === 0) return { messages };
  for (const { id, reason } of skipped) {
    deps.logger.warn('webhook endpoint skipped: the outbox would refuse its message', {
      endpointId: id,
      event,
      reason,
    });
  }
  return {
    messages,
    recordSkips: {
      name: 'recordSkippedWebhookEndpoints',
      text: `UPDATE ${quoteSchema(deps.appSchema)}.webhook_endpoints AS e
        SET skip_count = e.skip_count + 1, last_skipped_at = $1, last_skip_reason = s.reason
        FROM unnest($2::uuid[], $3::text[]) AS s(id, reason) WHERE e.id = s.id`,
      params: [now, skipped.map((s) => s.id), skipped.map((s) => s.reason)],
    },
  };
}
