import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import type { OutboxStore } from '../../src/core/outbox-store.js';
import type { NewMessage } from '../../src/index.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimRequest,
  fakeClock,
  freshOutbox,
  recordingSender,
  seededRandom,
  sleep,
} from '../support/drain-fixtures.js';
import { countingExecutor, DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { welcomeEmail } from '../support/fixtures.js';

const database = useTestDatabase();

function messages(count: number, extra: (index: number) => Partial<NewMessage> = () => ({})) {
  return Array.from({ length: count }, (_, index) => ({
    kind: 'test.kind',
    payload: { index },
    ...extra(index),
  }));
}

async function enqueueAll(
  outbox: { enqueue: (db: never, m: NewMessage[]) => Promise<string[]> },
  db: unknown,
  list: NewMessage[],
) {
  const keys: string[] = [];
  for (let start = 0; start < list.length; start += 1000) {
    keys.push(...(await outbox.enqueue(db as never, list.slice(start, start + 1000))));
  }
  return keys;
}

describe.each(DRIVER_NAMES)('drainOnce through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  describe.each([false, true])('with prefetch %s', (prefetch) => {
    it('8 overlapping drains over 10,000 messages send every key exactly once', async () => {
      const { outbox, store } = await freshOutbox(driver);
      const keys = await enqueueAll(outbox, driver.db, messages(10_000));
      // A connection for each drain first: through the WebSocket stand-in on PostgreSQL 14, the
      // other drains' first claims waited about 0.75 s for new ones, and the first drain, on the
      // connection the enqueue left, had sent all 10,000 by then.
      await Promise.all(
        Array.from({ length: 8 }, () => driver.db.query('SELECT pg_sleep(0.05)', [])),
      );
      const sender = recordingSender();
      const reports = await Promise.all(
        Array.from({ length: 8 }, () =>
          drainOnce({
            store,
            senders: { 'test.kind': sender.send },
            batchSize: 100,
            concurrency: 20,
            prefetch,
          }),
        ),
      );
      expect(sender.calls).toHaveLength(10_000);
      expect(new Set(sender.calls.map((call) => call.key))).toEqual(new Set(keys));
      expect(reports.reduce((sum, report) => sum + report.delivered, 0)).toBe(10_000);
      // More than one drain did real work: the overlap was real, not serial.
      expect(reports.filter((report) => report.delivered > 0).length).toBeGreaterThan(1);
      const stats = await store.stats(new Date());
      expect(stats).toMatchObject({ pending: 0, claimed: 0, delivered: 10_000, dead: 0 });
      // The per-minute counters, upserted by 8 concurrent settles, add up exactly.
      const counts = await store.deliveryCounts(new Date(0));
      expect(counts.reduce((sum, minute) => sum + minute.delivered, 0)).toBe(10_000);
    });

    it('returns before a 2 s deadline with every sent message settled and the rest released', async () => {
      const { outbox, store } = await freshOutbox(driver);
      await outbox.enqueue(driver.db, messages(40));
      const sender = recordingSender((_, signal) => sleep(300, signal));
      const deadline = new Date(Date.now() + 2000);
      const report = await drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        deadline,
        prefetch,
        batchSize: 20,
        concurrency: 2,
        sendTimeoutMs: 500,
        roundTripReserveMs: 200,
        leaseMs: 30_000,
      });
      const returnedAt = Date.now();
      expect(returnedAt).toBeLessThan(deadline.getTime());
      expect(report.stopReason).toBe('deadline');
      expect(report.delivered).toBe(sender.delivered.length);
      expect(report.delivered).toBeGreaterThan(0);
      expect(report.delivered + report.released).toBe(report.claimed);
      const stats = await store.stats(new Date());
      expect(stats).toMatchObject({ claimed: 0, delivered: report.delivered });
      // Released rows are due at once, with their attempt given back: another drain takes them now.
      const { rows } = await database.pool.query(
        `SELECT count(*)::int AS n FROM ${store.schema}.messages
         WHERE state = 'pending' AND attempts = 0 AND due_at <= now()`,
      );
      expect(rows[0].n).toBe(40 - report.delivered);
      const next = await drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        concurrency: 10,
      });
      expect(next.delivered).toBe(40 - report.delivered);
    });

    it('keeps SQL round trips plus sends within a subrequest budget of 20', async () => {
      const { outbox } = await freshOutbox(driver);
      await outbox.enqueue(driver.db, messages(100));
      const counted = countingExecutor(driver.db);
      const sender = recordingSender();
      const report = await drainOnce({
        store: outbox.store(counted),
        senders: { 'test.kind': sender.send },
        subrequestBudget: 20,
        batchSize: 7,
        prefetch,
      });
      expect(counted.statements + sender.calls.length).toBeLessThanOrEqual(20);
      expect(report.roundTrips).toBe(counted.statements);
      expect(report.sends).toBe(sender.calls.length);
      expect(report.stopReason).toBe('budget');
      expect(report.delivered).toBeGreaterThan(10);
    });

    it('delivers each ordering key in enqueue order while sends fail at random', async () => {
      const { outbox, store } = await freshOutbox(driver);
      const keys = await enqueueAll(
        outbox,
        driver.db,
        messages(1000, (index) => ({ orderingKey: `key-${index % 20}`, maxAttempts: 1000 })),
      );
      const keyOf = new Map(keys.map((key, index) => [key, `key-${index % 20}`]));
      const random = seededRandom(7);
      const sender = recordingSender(() => {
        if (random() < 0.3) throw new RetryableDeliveryError('flaky receiver');
      });
      const drainLoop = async () => {
        for (let round = 0; round < 500; round++) {
          const report = await drainOnce({
            store,
            senders: { 'test.kind': sender.send },
            backoff: { baseMs: 1, capMs: 4 },
            batchSize: 50,
            prefetch,
          });
          if (report.claimed === 0 && (await store.stats(new Date())).pending === 0) return;
          await sleep(2);
        }
      };
      await Promise.all([drainLoop(), drainLoop()]);
      expect(sender.delivered).toHaveLength(1000);
      expect(sender.calls.length).toBeGreaterThan(1000);
      for (let group = 0; group < 20; group++) {
        const expected = keys.filter((key) => keyOf.get(key) === `key-${group}`);
        const actual = sender.delivered.filter((key) => keyOf.get(key) === `key-${group}`);
        expect(actual).toEqual(expected);
      }
    });
  });

  it('backs off with growing, jittered, capped delays, honours retry-after, then sets aside', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const clock = fakeClock();
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: {},
      maxAttempts: 6,
    });
    const draws = [0.5, 0.25, 0.75, 0.9, 0.5];
    const failures: (() => never)[] = [
      ...draws.slice(0, 3).map(() => () => {
        throw new RetryableDeliveryError('503 from receiver');
      }),
      () => {
        throw new RetryableDeliveryError('429 from receiver', { retryAfterMs: 60_000 });
      },
      () => {
        throw new RetryableDeliveryError('503 again');
      },
      () => {
        throw new RetryableDeliveryError('still down');
      },
    ];
    const sender = recordingSender(() => failures.shift()?.());
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt++) {
      const report = await drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        clock,
        random: () => draws[attempt - 1] ?? 0,
        backoff: { baseMs: 1000, capMs: 6000 },
      });
      expect(report.claimed).toBe(1);
      const { rows } = await database.pool.query(
        `SELECT state, due_at, attempts, last_error FROM ${store.schema}.messages WHERE key = $1`,
        [key],
      );
      if (attempt < 6) {
        expect(rows[0]).toMatchObject({ state: 'pending', attempts: attempt });
        delays.push(rows[0].due_at.getTime() - clock.now().getTime());
        clock.set(rows[0].due_at);
      } else {
        expect(rows[0]).toMatchObject({ state: 'dead', attempts: 6 });
        expect(rows[0].last_error).toMatch(/attempts exhausted \(6\/6\).*still down/);
      }
    }
    // base + draw * (ceiling - base), ceilings 1000, 2000, 4000, 6000 (capped), 6000 (capped:
    // 16000 without the cap, which would make the last delay 8500)
    expect(delays).toEqual([1000, 1250, 3250, 60_000, 3500]);
  });

  it('sets a permanent failure aside after one attempt, and an operator retry delivers it', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    let refuse = true;
    const sender = recordingSender(() => {
      if (refuse) throw new PermanentDeliveryError('410 Gone');
    });
    const first = await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(first).toMatchObject({ claimed: 1, dead: 1, delivered: 0 });
    const [deadMessage] = (await store.list({ state: 'dead' })).messages;
    expect(deadMessage).toMatchObject({ key, attempts: 1 });
    expect(deadMessage?.lastError).toMatch(/permanent failure: PermanentDeliveryError: 410 Gone/);
    expect(await store.deliveryCounts(new Date(0))).toMatchObject([
      { delivered: 0, failed: 1, dead: 1 },
    ]);

    refuse = false;
    expect(await store.retryDead(deadMessage!.id, new Date())).toBe(true);
    const second = await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(second).toMatchObject({ delivered: 1 });
    expect(sender.calls.map((call) => call.key)).toEqual([key, key]);
    expect((await store.get(deadMessage!.id))?.state).toBe('delivered');
  });

  it('a settle after another drain re-claimed the row changes nothing and counts as stale', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    const clock = fakeClock();
    const gate = () => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      return { open, opened };
    };
    const firstAtSettle = gate();
    const firstMaySettle = gate();
    const secondSending = gate();
    const secondMayFinish = gate();
    // The first drain stalls just before its settle (a long GC pause, a lost packet) ...
    const stallingStore: OutboxStore = {
      settleFits: (requests) => store.settleFits(requests),
      claim: (request) => store.claim(request),
      async settle(requests, now) {
        firstAtSettle.open();
        await firstMaySettle.opened;
        return store.settle(requests, now);
      },
    };
    const firstSender = recordingSender(() => {
      throw new RetryableDeliveryError('first drain failed');
    });
    const timing = { leaseMs: 10_000, sendTimeoutMs: 1000, roundTripReserveMs: 500 };
    const first = drainOnce({
      store: stallingStore,
      senders: { 'test.kind': firstSender.send },
      clock,
      ...timing,
    });
    await firstAtSettle.opened;
    // ... past its lease, so a second drain claims the row and is sending it ...
    clock.advance(11_000);
    const secondSender = recordingSender(async () => {
      secondSending.open();
      await secondMayFinish.opened;
    });
    const second = drainOnce({
      store,
      senders: { 'test.kind': secondSender.send },
      clock,
      ...timing,
    });
    await secondSending.opened;
    // ... when the first drain's settle finally arrives: it must not touch the new claim.
    firstMaySettle.open();
    expect(await first).toMatchObject({ claimed: 1, stale: 1, retried: 0 });
    const during = await store.get((await store.list({ state: 'claimed' })).messages[0]!.id);
    expect(during).toMatchObject({ key, state: 'claimed', attempts: 2, lastError: null });
    secondMayFinish.open();
    expect(await second).toMatchObject({ delivered: 1, stale: 0 });
    expect(await store.getByKey(key!)).toMatchObject({
      state: 'delivered',
      attempts: 2,
      lastError: null,
    });
  });

  it('sets aside at claim a message whose final attempt was never settled', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: {},
      maxAttempts: 1,
    });
    const clock = fakeClock();
    // A drain claims it and dies without settling.
    const orphaned = await store.claim(claimRequest({ now: clock.now(), leaseMs: 5000 }));
    expect(orphaned.claimed.map((m) => m.key)).toEqual([key]);
    clock.advance(6000);
    const sender = recordingSender();
    const report = await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(report).toMatchObject({ claimed: 0, dead: 1 });
    expect(sender.calls).toHaveLength(0);
    const [message] = (await store.list({ state: 'dead' })).messages;
    expect(message?.lastError).toMatch(/lease expired without an outcome/);
  });

  it('a dead head holds back the rest of its ordering key unless told otherwise', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [head, next] = await outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { n: 1 }, orderingKey: 'account-1' },
      { kind: 'test.kind', payload: { n: 2 }, orderingKey: 'account-1' },
    ]);
    const sender = recordingSender((message) => {
      if (message.key === head) throw new PermanentDeliveryError('rejected');
    });
    const blocked = await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(blocked).toMatchObject({ dead: 1, delivered: 0 });
    expect(sender.timesSent(next!)).toBe(0);
    const skipping = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      deadHeadBlocks: false,
    });
    expect(skipping).toMatchObject({ delivered: 1 });
    expect(sender.delivered).toEqual([next]);
  });

  it('keeps the other lanes sending past a slow send, and records outcomes while sends still run', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, messages(40));
    let slowDone = false;
    const sentWhileSlowRan: string[] = [];
    let settledWhileSlowRan = false;
    const sender = recordingSender(async (message) => {
      if (message.key === keys[0]) {
        await sleep(800);
        slowDone = true;
        return;
      }
      await sleep(2);
      if (!slowDone) sentWhileSlowRan.push(message.key);
    });
    const watching: OutboxStore = {
      settleFits: (requests) => store.settleFits(requests),
      claim: (request) => store.claim(request),
      async settle(requests, now) {
        const result = await store.settle(requests, now);
        if (!slowDone) settledWhileSlowRan = true;
        return result;
      },
    };
    const report = await drainOnce({
      store: watching,
      senders: { 'test.kind': sender.send },
      batchSize: 10,
      concurrency: 4,
    });
    expect(report.delivered).toBe(40);
    // Three more claims of ten came and went behind the slow send: a drain that waited for each
    // batch's slowest send would have sent only the first batch's other nine by then.
    expect(sentWhileSlowRan).toHaveLength(39);
    expect(settledWhileSlowRan).toBe(true);
  });

  it('delivers a whole ordering key in one drain, each message once its head is recorded', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      messages(3, () => ({ orderingKey: 'account-7' })),
    );
    const sender = recordingSender();
    // The kick names all three, as a request that wrote them would.
    const report = await drainOnce({ store, senders: { 'test.kind': sender.send }, keys });
    expect(report).toMatchObject({ delivered: 3, stopReason: 'empty' });
    expect(sender.delivered).toEqual(keys);
  });

  it('claims only the given keys for an after-commit kick', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, messages(5));
    const sender = recordingSender();
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      keys: [keys[1]!, keys[3]!],
    });
    expect(report.delivered).toBe(2);
    expect(sender.delivered.sort()).toEqual([keys[1], keys[3]].sort());
  });

  it('on abort, finishes the sends in flight, releases the rest and reports aborted', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(10));
    const controller = new AbortController();
    const sender = recordingSender(async () => {
      controller.abort();
      await sleep(50);
    });
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      signal: controller.signal,
      concurrency: 2,
    });
    expect(report).toMatchObject({ stopReason: 'aborted', delivered: 2, released: 8 });
    expect((await store.stats(new Date())).pending).toBe(8);
  });

  it('cuts loose a sender that ignores its AbortSignal, and records a retry', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    const stubborn = recordingSender(() => new Promise<void>(() => {})); // never settles
    const started = Date.now();
    const report = await drainOnce({
      store,
      senders: { 'test.kind': stubborn.send },
      sendTimeoutMs: 300,
      roundTripReserveMs: 200,
      leaseMs: 5000,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(report).toMatchObject({ retried: 1, stale: 0 });
    const [message] = (await store.list({ state: 'pending' })).messages;
    expect(message).toMatchObject({ key, attempts: 1 });
    expect(message?.lastError).toMatch(/SendTimeoutError: send timed out after 300 ms/);
  });

  it('hands the sender the message as it was enqueued, with its attempt and row id', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'test.kind',
      payload: { order: 42, lines: ['a', 'b'] },
      orderingKey: 'customer-7',
      maxAttempts: 4,
    });
    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send } });
    const { rows } = await database.pool.query<{ id: string; created_at: Date }>(
      `SELECT id::text, created_at FROM ${schema}.all_messages WHERE key = $1`,
      [key],
    );
    expect(sender.calls).toEqual([
      {
        key,
        kind: 'test.kind',
        payload: { order: 42, lines: ['a', 'b'] },
        attempt: 1,
        maxAttempts: 4,
        id: rows[0]!.id,
        orderingKey: 'customer-7',
        createdAt: rows[0]!.created_at,
      },
    ]);
  });

  it('hands the sender its creation time truncated to the millisecond, at either edge of one', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    // The microseconds that read wrong first when a time goes through a float: none past the
    // millisecond (a time a JS Date wrote), and one short of the next.
    const created = [
      ['2026-12-06 03:41:57.123+00', '2026-12-06T03:41:57.123Z'],
      ['2026-12-06 03:41:57.123999+00', '2026-12-06T03:41:57.123Z'],
      ['2026-12-06 03:41:57.999999+00', '2026-12-06T03:41:57.999Z'],
      ['2105-12-31 23:59:59.000001+00', '2105-12-31T23:59:59.000Z'],
      ['1999-01-01 00:00:00+00', '1999-01-01T00:00:00.000Z'],
    ] as const;
    const keys = await outbox.enqueue(
      driver.db,
      created.map((_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    for (const [index, [at]] of created.entries()) {
      await database.pool.query(`UPDATE ${schema}.messages SET created_at = $2 WHERE key = $1`, [
        keys[index],
        at,
      ]);
    }
    const sender = recordingSender();
    await drainOnce({ store, senders: { 'test.kind': sender.send } });
    const byKey = new Map(sender.calls.map((call) => [call.key, call.createdAt.toISOString()]));
    expect(keys.map((key) => byKey.get(key))).toEqual(created.map(([, iso]) => iso));
  });

  it('does not claim kinds it has no sender for', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, [
      { kind: 'email', payload: welcomeEmail('a@example.com') },
      { kind: 'test.kind', payload: {} },
    ]);
    const sender = recordingSender();
    const report = await drainOnce({ store, senders: { 'test.kind': sender.send } });
    expect(report).toMatchObject({ claimed: 1, delivered: 1, stopReason: 'empty' });
    expect((await store.list({ state: 'pending' })).messages.map((m) => m.kind)).toEqual(['email']);
  });
});
