import { zValidator } from '@hono/zod-validator';
import { type Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import {
  FOREIGN_KEY_VIOLATION,
  generateWebhookSecret,
  isValidationError,
  type NewMessage,
  quoteSchema,
  type Statement,
  UNIQUE_VIOLATION,
  violates,
} from 'outbox-relay';
import { z } from 'zod';
import type { AppEnv, ResolvedDeps } from './app-deps.js';
import { errorResponse, type Issue, pathOfField } from './errors.js';
import {
  type IdempotencyRecords,
  isIdempotencyRace,
  isValidIdempotencyKey,
  requestHash,
  type StoredResponse,
} from './idempotency.js';

/** Events a webhook endpoint may subscribe to, with the route that emits each. */
export const WEBHOOK_EVENTS = ['user.created', 'order.created'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Items per order: enough for any real cart; one INSERT carries them all. */
export const MAX_ORDER_ITEMS = 100;

const signupBody = z.object({
  email: z
    .email()
    .max(254)
    .transform((email) => email.toLowerCase()),
  name: z.string().trim().min(1).max(100),
});

const orderBody = z.object({
  userId: z.uuid(),
  items: z
    .array(
      z.object({
        sku: z.string().trim().min(1).max(64),
        qty: z.int().min(1).max(1000),
        unitPriceCents: z.int().min(0).max(100_000_000),
      }),
    )
    .min(1)
    .max(MAX_ORDER_ITEMS),
});

const webhookEndpointBody = z.object({
  url: z.url({ protocol: /^https?$/ }).max(2048),
  events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length),
});

/** Validation failures become 400 `{error, issues: [{path, message}]}`. */
function validJson<T extends z.ZodType>(schema: T) {
  return zValidator('json', schema, (result, c) => {
    if (!result.success) {
      const issues: Issue[] = result.error.issues.map((issue) => ({
        path: issue.path.filter((part): part is string | number => typeof part !== 'symbol'),
        message: issue.message,
      }));
      return errorResponse(c, 400, 'invalid request body', issues);
    }
  });
}

/** What a route commits: domain rows and messages together, and the response it answers. */
interface Write {
  statements: Statement[];
  messageKeys: string[];
  response: StoredResponse;
}

export function domainRoutes(deps: ResolvedDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const schema = quoteSchema(deps.appSchema);

  app.post('/signups', validJson(signupBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/signups', input, async () => {
      const userId = deps.newId();
      const user = { id: userId, email: input.email, name: input.name };
      const subscribers = await subscribedEndpoints(deps, 'user.created');
      const messages: NewMessage[] = [
        emailMessage(
          deps,
          input.email,
          `Welcome, ${input.name}`,
          `Hi ${input.name},\n\nYour account is ready.\n`,
        ),
        ...webhookMessages(subscribers, 'user.created', { user }, deps.clock.now()),
      ];
      const enqueue = deps.outbox.enqueueStatement(messages);
      return {
        statements: [
          {
            name: 'insertUser',
            text: `INSERT INTO ${schema}.users (id, email, name) VALUES ($1, $2, $3)`,
            params: [userId, input.email, input.name],
          },
          enqueue.statement,
        ],
        messageKeys: enqueue.keys,
        response: { status: 201, body: { user, messageKeys: enqueue.keys } },
      };
    });
  });

  app.post('/orders', validJson(orderBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/orders', input, async () => {
      const { rows } = await deps.db.query<{ email: string; name: string }>(
        `SELECT email, name FROM ${schema}.users WHERE id = $1`,
        [input.userId],
      );
      const customer = rows[0];
      if (!customer) {
        return rejection(422, 'unknown user', [{ path: ['userId'], message: 'no such user' }]);
      }
      const orderId = deps.newId();
      const totalCents = input.items.reduce((sum, item) => sum + item.qty * item.unitPriceCents, 0);
      const order = { id: orderId, userId: input.userId, totalCents, items: input.items };
      const subscribers = await subscribedEndpoints(deps, 'order.created');
      const enqueue = deps.outbox.enqueueStatement([
        emailMessage(
          deps,
          customer.email,
          `Order ${orderId.slice(0, 8)} confirmed`,
          orderConfirmationText(customer.name, order),
        ),
        ...webhookMessages(subscribers, 'order.created', { order }, deps.clock.now()),
      ]);
      return {
        statements: [
          {
            name: 'insertOrder',
            text: `INSERT INTO ${schema}.orders (id, user_id, total_cents) VALUES ($1, $2, $3)`,
            params: [orderId, input.userId, totalCents],
          },
          {
            name: 'insertOrderItems',
            text: `INSERT INTO ${schema}.order_items (order_id, position, sku, qty, unit_price_cents)
              SELECT $1, i.position, i.sku, i.qty, i.unit_price_cents
              FROM unnest($2::text[], $3::integer[], $4::bigint[])
                WITH ORDINALITY AS i(sku, qty, unit_price_cents, position)`,
            params: [
              orderId,
              input.items.map((item) => item.sku),
              input.items.map((item) => item.qty),
              input.items.map((item) => item.unitPriceCents),
            ],
          },
          enqueue.statement,
        ],
        messageKeys: enqueue.keys,
        response: { status: 201, body: { order, messageKeys: enqueue.keys } },
      };
    });
  });

  app.post('/webhook-endpoints', validJson(webhookEndpointBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/webhook-endpoints', input, async () => {
      const id = deps.newId();
      const secret = generateWebhookSecret();
      const events = [...new Set(input.events)];
      return {
        statements: [
          {
            name: 'insertWebhookEndpoint',
            text: `INSERT INTO ${schema}.webhook_endpoints (id, url, events, secret)
              VALUES ($1, $2, $3::text[], $4)`,
            params: [id, input.url, events, secret],
          },
        ],
        messageKeys: [],
        // The secret is shown once, here: receivers need it to verify signatures.
        response: { status: 201, body: { endpoint: { id, url: input.url, events }, secret } },
      };
    });
  });

  return app;
}

/** A request the route refuses after reading the database (e.g. an unknown user). */
type Rejection = { rejection: { status: ContentfulStatusCode; body: object } };

function rejection(status: ContentfulStatusCode, error: string, issues?: Issue[]): Rejection {
  return { rejection: { status, body: issues ? { error, issues } : { error } } };
}

/**
 * Runs a write at most once per Idempotency-Key: a replay with the same body returns the first
 * response and writes nothing; the same key with another body is a 422. The write's statements,
 * its messages and the idempotency record commit in ONE transaction, then the kick drains the
 * new messages in the background.
 */
async function commitOnce(
  c: Context<AppEnv>,
  deps: ResolvedDeps,
  route: string,
  input: unknown,
  plan: () => Promise<Write | Rejection>,
): Promise<Response> {
  const key = c.req.header('idempotency-key');
  const now = deps.clock.now();
  let hash: string | undefined;
  const records = deps.idempotency;
  if (key !== undefined) {
    if (!isValidIdempotencyKey(key)) {
      return errorResponse(c, 400, 'invalid Idempotency-Key', [
        { path: ['Idempotency-Key'], message: 'expected 1 to 255 printable ASCII characters' },
      ]);
    }
    hash = await requestHash(route, input);
    const earlier = await replayOrConflict(c, records, route, key, hash, now);
    if (earlier) return earlier;
  }

  let write: Write | Rejection;
  try {
    write = await plan();
  } catch (error) {
    if (isValidationError(error)) {
      return errorResponse(c, 400, 'invalid request body', [
        { path: pathOfField(error.field), message: error.message },
      ]);
    }
    throw error;
  }
  if ('rejection' in write) {
    return c.json(write.rejection.body, write.rejection.status);
  }

  const statements = [...write.statements];
  if (key !== undefined && hash !== undefined) {
    statements.push(...records.recordStatements(route, key, hash, write.response, now));
  }
  try {
    await deps.db.batch(statements);
  } catch (error) {
    if (key !== undefined && hash !== undefined && isIdempotencyRace(error)) {
      // A concurrent request with this key committed first: answer as its replay.
      const earlier = await replayOrConflict(c, records, route, key, hash, now);
      if (earlier) return earlier;
    }
    const known = knownConflict(error);
    if (known) return errorResponse(c, 409, known.error, known.issues);
    if (violates(error, FOREIGN_KEY_VIOLATION)) {
      return errorResponse(c, 422, 'unknown user', [{ path: ['userId'], message: 'no such user' }]);
    }
    throw error;
  }
  deps.kickAfterCommit(c, write.messageKeys);
  return c.json(write.response.body as object, write.response.status as ContentfulStatusCode);
}

async function replayOrConflict(
  c: Context<AppEnv>,
  records: IdempotencyRecords,
  route: string,
  key: string,
  hash: string,
  now: Date,
): Promise<Response | undefined> {
  const earlier = await records.lookup(route, key, hash, now);
  if (earlier.kind === 'mismatch') {
    return errorResponse(c, 422, 'Idempotency-Key was already used with a different request', [
      { path: ['Idempotency-Key'], message: 'reuse a key only to retry the identical request' },
    ]);
  }
  if (earlier.kind === 'replay') {
    c.header('Idempotent-Replayed', 'true');
    return c.json(earlier.response.body as object, earlier.response.status as ContentfulStatusCode);
  }
  return undefined;
}

function knownConflict(error: unknown): { error: string; issues: Issue[] } | undefined {
  if (violates(error, UNIQUE_VIOLATION, 'users_email_unique')) {
    return {
      error: 'email already registered',
      issues: [{ path: ['email'], message: 'a user with this email exists' }],
    };
  }
  return undefined;
}

interface Subscriber {
  id: string;
  url: string;
}

/**
 * Read before the write transaction: an endpoint created while this request runs may miss this
 * one event, as with any subscription that takes effect "from now on".
 */
async function subscribedEndpoints(deps: ResolvedDeps, event: WebhookEvent): Promise<Subscriber[]> {
  const { rows } = await deps.db.query<Subscriber>(
    `SELECT id, url FROM ${quoteSchema(deps.appSchema)}.webhook_endpoints
     WHERE disabled_at IS NULL AND events @> ARRAY[$1]::text[]
     ORDER BY created_at, id`,
    [event],
  );
  return rows;
}

/**
 * One webhook message per subscriber, ordered per endpoint: each receiver sees its events in the
 * order they happened, and one slow endpoint does not hold back the others.
 */
function webhookMessages(
  subscribers: readonly Subscriber[],
  event: WebhookEvent,
  data: Record<string, unknown>,
  now: Date,
): NewMessage[] {
  return subscribers.map((endpoint) => ({
    kind: 'webhook',
    orderingKey: `webhook-endpoint:${endpoint.id}`,
    payload: {
      url: endpoint.url,
      endpointId: endpoint.id,
      event,
      body: JSON.parse(JSON.stringify({ ...data, occurredAt: now.toISOString() })),
    },
  }));
}

/** A plain-text email to one recipient, from the service's address when one is configured. */
function emailMessage(deps: ResolvedDeps, to: string, subject: string, text: string): NewMessage {
  return {
    kind: 'email',
    payload: { to: [to], subject, text, ...(deps.emailFrom ? { from: deps.emailFrom } : {}) },
  };
}

function orderConfirmationText(
  name: string,
  order: { id: string; totalCents: number; items: { sku: string; qty: number }[] },
): string {
  const lines = order.items.map((item) => `  ${item.qty} x ${item.sku}`);
  const total = (order.totalCents / 100).toFixed(2);
  return `Hi ${name},\n\nWe received order ${order.id}:\n${lines.join('\n')}\nTotal: ${total}\n`;
}
