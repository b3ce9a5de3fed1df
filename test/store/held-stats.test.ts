/**
 * Stats count messages held behind an unfinished head of their ordering key apart: not due, not
 * in the lag, but `held`, in the store, `GET /stats`, `/metrics` and the dashboard. And the
 * statement that counts them reads messages in scans, not in a probe per row, at 100,000 rows.
 */
import { describe, expect, it } from 'vitest';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { outboxStatements } from '../../src/store/statements.js';
import { ADMIN_TOKEN, KIND, mountAdmin, outbox, signIn } from '../admin/admin-harness.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';

const database = useTestDatabase();
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function emptyOutbox(): Promise<void> {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
}

describe('held messages', () => {
  it('a dead head holding five followers while drains are healthy makes them held, not due, and no lag', async () => {
    await emptyOutbox();
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    const store = outbox.store(db);
    const [head, ...others] = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 0 }, orderingKey: 'order-7' },
      ...Array.from({ length: 5 }, (_, n) => ({
        kind: KIND,
        payload: { n: n + 1 },
        orderingKey: 'order-7',
      })),
      ...Array.from({ length: 3 }, (_, n) => ({ kind: KIND, payload: { free: n } })),
    ]);
    const drain = createDrainer({
      store,
      senders: {
        [KIND]: async (message) => {
          if (message.key === head) throw new PermanentDeliveryError('410 Gone');
        },
      },
      clock,
    });
    expect(await drain({})).toMatchObject({ delivered: 3, dead: 1 });
    expect(others).toHaveLength(8);

    // A minute on, the drains keep running and find nothing they may take.
    clock.advance(60_000);
    expect(await drain({})).toMatchObject({ claimed: 0 });
    expect(await store.stats(clock.now())).toMatchObject({
      pending: 5,
      due: 0,
      held: 5,
      dead: 1,
      lagMs: 0,
      oldestDueAt: null,
    });
    // Drains that let a dead head pass would take the first follower, late; the other four
    // wait behind it, one at a time.
    const passing = await store.stats(clock.now(), { deadHeadBlocks: false });
    expect(passing).toMatchObject({ due: 1, held: 4 });
    expect(passing.lagMs).toBeGreaterThanOrEqual(60_000);

    const app = mountAdmin(database, { clock });
    const stats = await (await app.request('/admin/stats', { headers: auth })).json();
    expect(stats.stats).toMatchObject({ due: 0, held: 5, lagMs: 0, lagSeconds: 0 });
    const metrics = await (await app.request('/admin/metrics', { headers: auth })).text();
    expect(metrics).toMatch(/^outbox_due_messages 0$/m);
    expect(metrics).toMatch(/^outbox_held_messages 5$/m);
    expect(metrics).toMatch(/^outbox_lag_seconds 0\.000$/m);
    const { cookie } = await signIn(app);
    const page = await (await app.request('/admin', { headers: { cookie } })).text();
    expect(page).toContain('0 due now, 5 held by ordering key');

    const passingApp = mountAdmin(database, { clock, deadHeadBlocks: false });
    const passingMetrics = await (
      await passingApp.request('/admin/metrics', { headers: auth })
    ).text();
    expect(passingMetrics).toMatch(/^outbox_held_messages 4$/m);
    expect(passingMetrics).toMatch(/^outbox_due_messages 1$/m);
  });

  it('a head waiting out its retry holds the followers that are due, and only they count as held', async () => {
    await emptyOutbox();
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    const store = outbox.store(db);
    const [head] = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 0 }, orderingKey: 'account-1' },
      { kind: KIND, payload: { n: 1 }, orderingKey: 'account-1' },
      { kind: KIND, payload: { n: 2 }, orderingKey: 'account-1' },
      { kind: KIND, payload: { n: 0 }, orderingKey: 'account-2' },
    ]);
    const drain = createDrainer({
      store,
      senders: {
        [KIND]: async (message) => {
          if (message.key === head) throw new RetryableDeliveryError('503');
        },
      },
      clock,
      backoff: { baseMs: 60_000, capMs: 60_000 },
    });
    expect(await drain({})).toMatchObject({ retried: 1, delivered: 1 });
    clock.advance(10_000);
    // The retried head is pending and not yet due: neither due nor held. Its two followers are
    // due and held.
    expect(await store.stats(clock.now())).toMatchObject({
      pending: 3,
      due: 0,
      held: 2,
      lagMs: 0,
    });
    clock.advance(60_000);
    const stats = await store.stats(clock.now());
    expect(stats).toMatchObject({ pending: 3, due: 1, held: 2 });
    // The lag is the head's, due since its retry time, not the followers' (due 70 s ago).
    expect(stats.lagMs).toBeLessThan(70_000);
    expect(stats.lagMs).toBeGreaterThan(0);
  });

  it('counts 100,000 pending rows over 1,000 keys in scans of messages, with no probe per row', async () => {
    await emptyOutbox();
    await database.pool.query(`
      INSERT INTO outbox.messages (key, kind, payload, ordering_key, due_at)
      SELECT gen_random_uuid(), '${KIND}', '{}', CASE WHEN i % 2 = 0 THEN 'key-' || (i % 2000) END,
        now() - interval '1 minute'
      FROM generate_series(1, 100000) i`);
    await database.pool.query('ANALYZE outbox.messages');
    const store = outbox.store(pgExecutor(database.pool));
    const stats = await store.stats(new Date());
    // 50,000 unkeyed rows are due; of the 50,000 keyed ones, each of the 1,000 keys' heads.
    expect(stats).toMatchObject({ pending: 100_000, due: 51_000, held: 49_000 });

    const { readStats } = outboxStatements('"outbox"');
    const { rows } = await database.pool.query(`EXPLAIN (FORMAT JSON) ${readStats}`, [
      new Date(),
      true,
    ]);
    interface PlanNode {
      'Node Type': string;
      'Relation Name'?: string;
      'Parent Relationship'?: string;
      Plans?: PlanNode[];
    }
    // Every node that reads messages, with the nodes above it.
    const reads: { node: PlanNode; above: PlanNode[] }[] = [];
    const walk = (node: PlanNode, above: PlanNode[]) => {
      if (node['Relation Name'] === 'messages') reads.push({ node, above });
      for (const child of node.Plans ?? []) walk(child, [...above, node]);
    };
    walk(rows[0]['QUERY PLAN'][0].Plan, []);
    // One scan for the counts, one for the heads of the keys: each row read twice at most,
    // and neither scan repeated per row of another (under a nested loop or as a subplan).
    expect(reads.length).toBeLessThanOrEqual(2);
    for (const { node, above } of reads) {
      expect(node['Parent Relationship']).not.toBe('SubPlan');
      expect(above.map((each) => each['Node Type'])).not.toContain('Nested Loop');
      expect(above.map((each) => each['Parent Relationship'])).not.toContain('SubPlan');
    }
  });
});
