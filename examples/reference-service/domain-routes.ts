import { Hono } from 'hono';
import type { NewMessage } from 'outbox-relay';
import { quoteSchema } from 'outbox-relay/sql';
import { z } from 'zod';
import { type AppEnv, ORDER_PLACED_KIND, type ResolvedDeps } from './app-deps.js';
import { commitOnce, rejection } from './commit-once.js';
import { displayName, storableString, validJson } from './request-body.js';
import { subscribedEndpoints, webhookEndpointRoutes, webhooksFor } from './webhook-endpoints.js';

/** Items per order: enough for any real cart; one INSERT carries them all. */
export const MAX_ORDER_ITEMS = 100;

// Every string is checked storable here, at the edge: a NUL or a lone surrogate is a 400 naming
// the field, never a driver error from the INSERT or the outbox's jsonb.
const signupBody = z.object({
  email: z
    .email()
    .max(254)
    .transform((email) => email.toLowerCase()),
  name: displayName(100),
});

const orderBody = z.object({
  userId: z.uuid(),
  items: z
    .array(
      z.object({
        sku: storableString().trim().min(1).max(64),
        qty: z.int().min(1).max(1000),
        unitPriceCents: z.int().min(0).max(100_000_000),
      }),
    )
    .min(1)
    .max(MAX_ORDER_ITEMS),
});

/**
 * The domain: `POST /signups` and `POST /orders` (open to anyone, as a shop's are), and
 * `POST /webhook-endpoints` (operators only, see `webhookEndpointRoutes`).
 */
export function domainRoutes(deps: ResolvedDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const schema = quoteSchema(deps.appSchema);

  app.post('/signups', validJson(signupBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/signups', input, async () => {
      const userId = deps.newId();
      const user = { id: userId, email: input.email, name: input.name };
      const subscribers = await subscribedEndpoints(deps, 'user.created');
      const webhooks = webhooksFor(deps, subscribers, 'user.created', { user });
      const enqueue = deps.outbox.enqueueStatement([
        emailMessage(
          deps,
          input.email,
          `Welcome, ${input.name}`,
          `Hi ${input.name},\n\nYour account is ready.\n`,
        ),
        ...webhooks.messages,
      ]);
      return {
        statements: [
          {
            name: 'insertUser',
            text: `INSERT INTO ${schema}.users (id, email, name) VALUES ($1, $2, $3)`,
            params: [userId, input.email, input.name],
          },
          enqueue.statement,
          ...(webhooks.recordSkips ? [webhooks.recordSkips] : []),
        ],
        messageKeys: enqueue.keys,
        response: { status: 201, body: { user, messageKeys: enqueue.keys } },
      };
    });
  });

  app.post('/orders', validJson(orderBody), async (c) => {
    const input = c.req.valid('json');
    return commitOnce(c, deps, '/orders', input, async () => {
      const { rows } = await deps.db.query(
        `SELECT email, name FROM ${schema}.users WHERE id = $1`,
        [input.userId],
      );
      const customer = rows[0] as { email: string; name: string } | undefined;
      if (!customer) {
        return rejection(422, 'unknown user', [{ path: ['userId'], message: 'no such user' }]);
      }
      const orderId = deps.newId();
      const totalCents = input.items.reduce((sum, item) => sum + item.qty * item.unitPriceCents, 0);
      const order = { id: orderId, userId: input.userId, totalCents, items: input.items };
      const subscribers = await subscribedEndpoints(deps, 'order.created');
      const webhooks = webhooksFor(deps, subscribers, 'order.created', { order });
      const enqueue = deps.outbox.enqueueStatement([
        emailMessage(
          deps,
          customer.email,
          `Order ${orderId.slice(0, 8)} confirmed`,
          orderConfirmationText(customer.name, order),
        ),
        ...webhooks.messages,
        // One customer's events in order: a consumer never sees a later order before an earlier.
        ...(deps.orderEvents
          ? [{ kind: ORDER_PLACED_KIND, payload: { order }, orderingKey: `user:${input.userId}` }]
          : []),
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
          ...(webhooks.recordSkips ? [webhooks.recordSkips] : []),
        ],
        messageKeys: enqueue.keys,
        response: { status: 201, body: { order, messageKeys: enqueue.keys } },
      };
    });
  });

  app.route('/', webhookEndpointRoutes(deps));
  return app;
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
