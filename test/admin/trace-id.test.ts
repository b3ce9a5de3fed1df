/**
 * Where an operator finds a message's trace (issue 31): `outbox show KEY`, the admin API and the
 * message page print the trace id a message was enqueued under, after its delivery too, so the
 * trace can be looked up in a tracing backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { MessageRecord } from '../../src/core/outbox-store.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { runOutboxInProcess } from '../cli/outbox-cli.js';
import { useTestDatabase } from '../support/database.js';
import {
  loopbackWebhookSender,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';
import { ADMIN_TOKEN, mountAdmin, signIn } from './admin-harness.js';

const database = useTestDatabase();
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const outbox = createOutbox({ schema: 'outbox' });
let receiver: WebhookReceiver;
let key: string;
let id: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  const db = pgExecutor(database.pool);
  [key] = (await outbox.enqueue(db, {
    kind: 'webhook',
    payload: { url: `${receiver.url}/traced`, body: {} },
    traceContext: { traceparent: TRACEPARENT },
  })) as [string];
  await drainOnce({
    store: outbox.store(db),
    senders: {
      webhook: loopbackWebhookSender(receiver.port),
    },
  });
  id = (await outbox.store(db).getByKey(key))!.id;
});
afterAll(async () => {
  await receiver?.close();
});

describe('the trace id of a delivered message', () => {
  it('reached the receiver as traceparent', () => {
    expect(receiver.received.map((request) => request.headers.traceparent)).toEqual([TRACEPARENT]);
  });

  it('outbox show prints it, and --json carries the whole trace context', async () => {
    const env = { DATABASE_URL: database.url };
    const shown = await runOutboxInProcess(['show', key], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`trace id\\s+${TRACE_ID}`));
    expect(shown.stdout).toMatch(new RegExp(`traceparent\\s+${TRACEPARENT}`));
    const json = await runOutboxInProcess(['show', key, '--json'], env);
    expect(JSON.parse(json.stdout).message.traceContext).toEqual({ traceparent: TRACEPARENT });
  });

  it('the admin API and the message page show it', async () => {
    const app = mountAdmin(database);
    const response = await app.request(`/admin/messages/by-key/${key}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const { message } = (await response.json()) as { message: MessageRecord };
    expect(message.state).toBe('delivered');
    expect(message.traceContext).toEqual({ traceparent: TRACEPARENT });
    const { cookie } = await signIn(app);
    const page = await (
      await app.request(`/admin/dashboard/messages/${id}`, { headers: { cookie } })
    ).text();
    expect(page).toContain(`<code class="trace-id" title="${TRACEPARENT}">${TRACE_ID}</code>`);
  });
});
