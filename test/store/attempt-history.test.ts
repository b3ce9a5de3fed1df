/**
 * Attempt history in the store: written by the settle that records each outcome (one statement,
 * no extra round trip), carried into delivered history, gone with its message, safe whatever a
 * sender reports, and readable across migration 0007 for rows written before it.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPT_ERROR_BYTES } from '../../src/core/attempt-facts.js';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import type { SqlExecutor } from '../../src/core/ports.js';
import { replayMessages } from '../../src/core/replay.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { MAX_RECORDED_ATTEMPTS } from '../../src/store/attempt-log.js';
import { migrate } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/migrations.generated.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { expectStorableAndReadable } from '../support/stored-text.js';

const database = useTestDatabase();
const KIND = 'test.kind';
let schemas = 0;

/** An outbox of its own schema, migrated. */
async function freshOutbox() {
  schemas += 1;
  const schema = `attempts_${schemas}`;
  const outbox = createOutbox({ schema, kinds: { [KIND]: true } });
  const db = pgExecutor(database.pool);
  await outbox.migrate(db);
  return { outbox, db, schema, store: outbox.store(db) };
}

/** The statements an executor ran, by their first words. */
function countingExecutor(db: SqlExecutor): { db: SqlExecutor; texts: string[] } {
  const texts: string[] = [];
  return {
    texts,
    db: {
      query(text, params) {
        texts.push(text.trim().slice(0, 40));
        return db.query(text, params);
      },
    },
  };
}

describe('attempt history', () => {
  it('records a failed attempt in the one settle statement that records its outcome', async () => {
    const { outbox, db } = await freshOutbox();
    const [key] = await outbox.enqueue(db, { kind: KIND, payload: { n: 1 } });
    const counting = countingExecutor(db);
    const clock = fakeClock();
    const report = await drainOnce({
      store: outbox.store(counting.db),
      clock,
      senders: {
        [KIND]: async () => {
          throw new RetryableDeliveryError('receiver busy', {
            status: 503,
            destination: 'https://hooks.example/in',
          });
        },
      },
    });
    expect(report).toMatchObject({ retried: 1, settles: 1 });
    // One claim that found the message, one settle, one idle claim: no statement of its own.
    expect(
      counting.texts.filter((text) => !text.startsWith('WITH RECURSIVE claim_now')),
    ).toHaveLength(1);
    const message = await outbox.store(db).getByKey(key!);
    // When it started: the drain's clock (still, here) less the duration it measured.
    const durationMs = message?.attemptLog?.[0]?.durationMs ?? Number.NaN;
    expect(message?.attemptLog).toEqual([
      {
        attempt: 1,
        at: new Date(clock.now().getTime() - durationMs),
        durationMs,
        outcome: 'retry',
        status: 503,
        providerCode: null,
        destination: 'https://hooks.example/in',
        error: 'RetryableDeliveryError: receiver busy',
      },
    ]);
  });

  it('carries the failures into delivered history with the delivery, and a dedupe-kept row too', async () => {
    const { outbox, db, store } = await freshOutbox();
    const [plain, deduped] = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 1 } },
      { kind: KIND, payload: { n: 2 }, dedupeKey: 'order-7' },
    ]);
    const clock = fakeClock();
    let calls = 0;
    const senders = {
      [KIND]: async () => {
        calls += 1;
        if (calls <= 2) throw new PermanentDeliveryError('no', { status: 400 });
        return { status: 201, destination: 'https://hooks.example/in' };
      },
    };
    // Both fail for good; an operator retries them; both are delivered.
    await drainOnce({ store, clock, senders });
    expect(await store.retryAllDead(clock.now())).toBe(2);
    await drainOnce({ store, clock, senders });
    for (const key of [plain!, deduped!]) {
      const message = await store.getByKey(key);
      expect(message?.state).toBe('delivered');
      expect(
        message?.attemptLog?.map(({ attempt, outcome, status }) => [attempt, outcome, status]),
      ).toEqual([
        [1, 'dead', 400],
        [1, 'delivered', 201],
      ]);
      const delivery = message!.attemptLog![1]!;
      expect(delivery.at?.getTime()).toBe(message!.deliveredAt!.getTime());
      expect(delivery.durationMs).toBeGreaterThanOrEqual(0);
    }
  });

  it('a message resent from history brings its attempts back, the earlier delivery among them', async () => {
    const { outbox, db, store } = await freshOutbox();
    const [key] = await outbox.enqueue(db, { kind: KIND, payload: { n: 1 } });
    const clock = fakeClock();
    const statuses = [503, 200, 202];
    const senders = {
      [KIND]: async () => {
        const status = statuses.shift()!;
        if (status >= 500) throw new RetryableDeliveryError('busy', { status });
        return { status };
      },
    };
    await drainOnce({ store, clock, senders });
    clock.advance(60_000);
    await drainOnce({ store, clock, senders });
    const replay = await replayMessages({
      store: store.replays(),
      selection: { state: 'delivered' },
      requestedBy: 'test',
      clock,
    });
    expect(replay).toMatchObject({ matched: 1, replayed: 1 });
    const resent = await store.getByKey(key!);
    expect(resent?.state).toBe('pending');
    const attemptsOf = () =>
      store
        .getByKey(key!)
        .then((message) =>
          message?.attemptLog?.map(({ attempt, outcome, status }) => [attempt, outcome, status]),
        );
    expect(await attemptsOf()).toEqual([
      [1, 'retry', 503],
      [2, 'delivered', 200],
    ]);
    await drainOnce({ store, clock, senders });
    expect(await attemptsOf()).toEqual([
      [1, 'retry', 503],
      [2, 'delivered', 200],
      [1, 'delivered', 202],
    ]);
  });

  it("purge and discard take a message's attempts with it", async () => {
    const { outbox, db, store, schema } = await freshOutbox();
    const keys = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 1 } },
      { kind: KIND, payload: { n: 2 } },
      { kind: KIND, payload: { n: 3 } },
    ]);
    const clock = fakeClock();
    const failing = new Set(keys.slice(1));
    const senders = {
      [KIND]: async (message: { key: string }) => {
        if (failing.has(message.key)) {
          failing.delete(message.key);
          throw new PermanentDeliveryError('first time fails', { status: 500 });
        }
      },
    };
    await drainOnce({ store, clock, senders });
    await store.retryAllDead(clock.now());
    await drainOnce({ store, clock, senders });
    // Every message delivered after a failure: their logs are in history, one row of groups.
    const logged = async () =>
      (
        await database.pool.query<{ n: number }>(
          `SELECT ((SELECT count(*) FROM ${schema}.messages WHERE attempt_log IS NOT NULL)
             + (SELECT count(*) FROM ${schema}.delivered_groups g,
                  unnest(g.messages) m WHERE m.attempt_log IS NOT NULL))::int AS n`,
        )
      ).rows[0]!.n;
    expect(await logged()).toBe(2);
    const second = await store.getByKey(keys[1]!);
    expect(await store.discard(second!.id)).toBe('delivered');
    expect(await logged()).toBe(1);
    await store.purge({ now: new Date(clock.now().getTime() + 1000), deliveredOlderThanMs: 0 });
    expect(await logged()).toBe(0);
    expect(await store.getByKey(keys[2]!)).toBeNull();
  });

  it('stores hostile reports safely: huge, NUL and lone-surrogate texts, statuses out of range', async () => {
    const { outbox, db, store } = await freshOutbox();
    const keys = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 1 } },
      { kind: KIND, payload: { n: 2 } },
      { kind: KIND, payload: { n: 3 } },
    ]);
    const hostile = `a\u0000b\ud800c\udfffd\u001b[31m${'é🎉'.repeat(400_000)}`;
    const reports: unknown[] = [
      { status: 1e9, providerCode: `\u0000${'x'.repeat(10_000)}`, destination: hostile },
      { status: -1, destination: 'https://user:pa55@hooks.example/p/a/t/h?token=T0K3N#f' },
      { status: 200.5, destination: 42 },
    ];
    const errors: string[] = [];
    const report = await drainOnce({
      store,
      logger: {
        debug() {},
        info() {},
        warn() {},
        error: (message) => errors.push(message),
      },
      senders: {
        [KIND]: async (message) => {
          const index = keys.indexOf(message.key);
          throw new RetryableDeliveryError(
            hostile,
            reports[index] as ConstructorParameters<typeof RetryableDeliveryError>[1],
          );
        },
      },
    });
    // Written as they were: nothing was refused and replaced by a plain text.
    expect(report).toMatchObject({ retried: 3 });
    expect(errors).toEqual([]);
    const [first, second, third] = await Promise.all(keys.map((key) => store.getByKey(key)));
    const attempt = first!.attemptLog![0]!;
    expectStorableAndReadable(attempt.error, MAX_ATTEMPT_ERROR_BYTES);
    expect(new TextEncoder().encode(attempt.error).byteLength).toBeLessThanOrEqual(
      MAX_ATTEMPT_ERROR_BYTES,
    );
    expect(
      attempt.error.startsWith('RetryableDeliveryError: a\uFFFDb\uFFFDc\uFFFDd\\u001b[31m'),
    ).toBe(true);
    expect(attempt.status).toBeNull();
    expectStorableAndReadable(attempt.providerCode, 100);
    expectStorableAndReadable(attempt.destination, 300);
    expect(second!.attemptLog![0]).toMatchObject({
      status: null,
      destination: 'https://hooks.example/p/a/t/h',
    });
    expect(third!.attemptLog![0]).toMatchObject({ status: null, destination: null });
  });

  it('shows an attempt whose drain died before its outcome as a gap in the attempt numbers', async () => {
    const { outbox, db, store } = await freshOutbox();
    const [key] = await outbox.enqueue(db, { kind: KIND, payload: {} });
    // A drain claims it and dies; after the lease a drain fails it; the next delivers it.
    const start = Date.now() + 1000;
    await store.claim({
      now: new Date(start),
      claimToken: crypto.randomUUID(),
      limit: 10,
      leaseMs: 1000,
      deadHeadBlocks: true,
      kinds: [KIND],
    });
    const clock = fakeClock(new Date(start + 2000));
    let sends = 0;
    const senders = {
      [KIND]: async () => {
        sends += 1;
        if (sends === 1) throw new RetryableDeliveryError('busy', { status: 503 });
        return { status: 200 };
      },
    };
    await drainOnce({ store, clock, senders });
    clock.set((await store.getByKey(key!))!.dueAt);
    await drainOnce({ store, clock, senders });
    const message = (await store.getByKey(key!))!;
    expect(message.attempts).toBe(3);
    expect(message.attemptLog?.map(({ attempt, outcome }) => [attempt, outcome])).toEqual([
      [2, 'retry'],
      [3, 'delivered'],
    ]);
  });

  it(`keeps the newest ${MAX_RECORDED_ATTEMPTS} attempts of a message allowed more`, async () => {
    const { outbox, db, store, schema } = await freshOutbox();
    const [key] = await outbox.enqueue(db, { kind: KIND, payload: {}, maxAttempts: 200 });
    // A hundred failed attempts as earlier settles left them, then one more through a drain.
    await database.pool.query(
      `UPDATE ${schema}.messages SET attempts = 100, attempt_log = (
         SELECT jsonb_agg(jsonb_build_object('attempt', n, 'outcome', 'retry', 'error', 'e'))
         FROM generate_series(1, 100) n)
       WHERE key = $1`,
      [key],
    );
    await drainOnce({
      store,
      senders: {
        [KIND]: async () => {
          throw new RetryableDeliveryError('once more');
        },
      },
    });
    const log = (await store.getByKey(key!))!.attemptLog!;
    expect(log).toHaveLength(MAX_RECORDED_ATTEMPTS);
    expect(log[0]!.attempt).toBe(2);
    expect(log.at(-1)).toMatchObject({ attempt: 101, error: 'RetryableDeliveryError: once more' });
  });

  it('reads delivered history and pending rows written before migration 0007', async () => {
    const schema = 'attempts_upgrade';
    const db = pgExecutor(database.pool);
    await migrate(db, { schema, migrations: migrations.filter((m) => m.version <= 6) });
    const outbox = createOutbox({ schema, kinds: { [KIND]: true } });
    // Written as version 6 wrote them (today's enqueue also writes a destination).
    const { rows: written } = await database.pool.query<{ key: string }>(
      `INSERT INTO ${schema}.messages (key, kind, payload)
       SELECT gen_random_uuid(), $1, jsonb_build_object('n', n) FROM generate_series(1, 3) n
       RETURNING key`,
      [KIND],
    );
    const [pending, retried, grouped] = written.map((row) => row.key);
    await database.pool.query(
      `UPDATE ${schema}.messages SET attempts = 2, last_error = 'HTTP 503' WHERE key = $1`,
      [retried],
    );
    // A settle group as version 6 wrote it: its messages in the composite's ten attributes.
    await database.pool.query(
      `WITH moved AS (DELETE FROM ${schema}.messages WHERE key = $1 RETURNING *)
       INSERT INTO ${schema}.delivered_groups (delivered_at, size, ids, keys, messages)
       SELECT now(), 1, int8multirange(int8range(id, id, '[]')),
         ${schema}.message_key_range(key, key, '[]'),
         ARRAY[ROW(id, key, kind, payload, ordering_key::text, 3, max_attempts, due_at,
           'HTTP 500', created_at)::${schema}.delivered_message]
       FROM moved`,
      [grouped],
    );
    expect((await migrate(db, { schema })).applied).toEqual(
      migrations.map((m) => m.version).filter((version) => version >= 7),
    );

    const store = outbox.store(db);
    const old = await store.getByKey(grouped!);
    expect(old).toMatchObject({ state: 'delivered', attempts: 3, lastError: 'HTTP 500' });
    expect(old?.attemptLog).toEqual([
      {
        attempt: 3,
        at: old!.deliveredAt,
        durationMs: null,
        outcome: 'delivered',
        status: null,
        providerCode: null,
        destination: null,
        error: null,
      },
    ]);
    expect((await store.getByKey(retried!))?.attemptLog).toEqual([]);
    expect((await store.list({ state: 'delivered' })).messages.map((m) => m.key)).toEqual([
      grouped,
    ]);
    // The pending rows drain as usual, their attempts recorded from now on; a new group joins
    // the old one, and discarding from the old one rewrites it with the new attributes.
    const report = await drainOnce({ store, senders: { [KIND]: async () => ({ status: 204 }) } });
    expect(report.delivered).toBe(2);
    expect((await store.getByKey(pending!))?.attemptLog).toMatchObject([
      { attempt: 1, outcome: 'delivered', status: 204 },
    ]);
    expect((await store.getByKey(retried!))?.attemptLog).toMatchObject([
      { attempt: 3, outcome: 'delivered', status: 204 },
    ]);
    expect(await store.discard(old!.id)).toBe('delivered');
    expect((await store.list({ state: 'delivered' })).messages).toHaveLength(2);
  });
});
