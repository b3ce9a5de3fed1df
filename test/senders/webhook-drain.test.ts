/**
 * The webhook sender inside a real drain over a real database: the acceptance cases where the
 * sender's verdict must turn into the right row state and timing.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';

const database = useTestDatabase();
const secret = generateWebhookSecret();
const verifier = new Webhook(secret);
let receiver: LoopbackServer;
/** What the receiver answers next, per path; the last entry repeats. */
const script = new Map<string, (number | 'hang')[]>();
/** webhook-ids the receiver verified and accepted (2xx), in order. */
const accepted: string[] = [];

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    // Every request must carry a valid Standard Webhooks signature; verify throws if not.
    verifier.verify(request.body, request.headers);
    const answers = script.get(request.url) ?? [200];
    const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (answer === 'hang') return; // never answers: the sender's timeout must cut it
    if (answer === 429) response.setHeader('retry-after', '2');
    response.statusCode = answer;
    response.end(answer < 300 ? 'ok' : `status ${answer}`);
    if (answer < 300) accepted.push(request.headers['webhook-id']!);
  });
});

afterAll(async () => {
  await receiver?.close();
});

describe('webhooks drained through a real database', () => {
  const outbox = createOutbox({ schema: 'outbox' });
  const store = () => outbox.store(pgExecutor(database.pool));
  const sender = (): Sender => loopbackWebhookSender(receiver.port, { secret });

  async function enqueueTo(path: string) {
    const [key] = await outbox.enqueue(pgExecutor(database.pool), {
      kind: 'webhook',
      payload: { url: `${receiver.url}${path}`, event: 'order.created', body: { path } },
    });
    return key!;
  }

  async function row(key: string) {
    const { rows } = await database.pool.query(
      'SELECT state, attempts, due_at, last_error FROM outbox.all_messages WHERE key = $1',
      [key],
    );
    return rows[0] as { state: string; attempts: number; due_at: Date; last_error: string | null };
  }

  it('500 then 200: delivered once, after one retry', async () => {
    script.set('/flaky', [500, 200]);
    const key = await enqueueTo('/flaky');
    const clock = fakeClock();
    const first = await drainOnce({ store: store(), senders: { webhook: sender() }, clock });
    expect(first).toMatchObject({ retried: 1, delivered: 0 });
    expect((await row(key)).last_error).toMatch(/500/);
    clock.set((await row(key)).due_at);
    const second = await drainOnce({ store: store(), senders: { webhook: sender() }, clock });
    expect(second).toMatchObject({ delivered: 1 });
    expect(accepted.filter((id) => id === key)).toEqual([key]);
    expect(await row(key)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('429 with Retry-After: 2 is not tried again before 2 s', async () => {
    script.set('/throttled', [429, 200]);
    const key = await enqueueTo('/throttled');
    const clock = fakeClock();
    const failedAt = clock.now().getTime();
    await drainOnce({
      store: store(),
      senders: { webhook: sender() },
      clock,
      backoff: { baseMs: 10, capMs: 100 },
    });
    const { due_at: dueAt } = await row(key);
    expect(dueAt.getTime() - failedAt).toBeGreaterThanOrEqual(2000);
    clock.advance(1900);
    const early = await drainOnce({ store: store(), senders: { webhook: sender() }, clock });
    expect(early.claimed).toBe(0);
    clock.set(dueAt);
    const onTime = await drainOnce({ store: store(), senders: { webhook: sender() }, clock });
    expect(onTime.delivered).toBe(1);
  });

  it('410 Gone: dead after one attempt', async () => {
    script.set('/gone', [410]);
    const key = await enqueueTo('/gone');
    const report = await drainOnce({ store: store(), senders: { webhook: sender() } });
    expect(report).toMatchObject({ dead: 1, retried: 0 });
    expect(await row(key)).toMatchObject({ state: 'dead', attempts: 1 });
    expect((await row(key)).last_error).toMatch(/410/);
  });

  it('a hanging receiver times out, is retried, and its lease outlives the send', async () => {
    script.set('/hang', ['hang', 200]);
    const key = await enqueueTo('/hang');
    const leaseMs = 3000;
    const started = Date.now();
    const report = await drainOnce({
      store: store(),
      senders: { webhook: sender() },
      leaseMs,
      sendTimeoutMs: 1000,
      roundTripReserveMs: 500,
    });
    const finished = Date.now();
    expect(report).toMatchObject({ retried: 1, stale: 0 });
    // Settled (retry recorded) before the lease it held could have run out.
    expect(finished - started).toBeLessThan(leaseMs);
    const after = await row(key);
    expect(after).toMatchObject({ state: 'pending', attempts: 1 });
    expect(after.last_error).toMatch(/timed out|abort/i);
    const retry = await drainOnce({
      store: store(),
      senders: { webhook: sender() },
      clock: fakeClock(new Date(after.due_at.getTime() + 1)),
    });
    expect(retry.delivered).toBe(1);
    expect(accepted).toContain(key);
  });
});
