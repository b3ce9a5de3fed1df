/**
 * Destination health in the store (docs/destinations.md): the settle counts a destination's
 * failures and pauses it, the claim passes over a paused destination's messages and sends one
 * probe when the pause ends, and operators pause and resume by hand. Real PostgreSQL, a moved
 * clock, the store's own statements.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_DESTINATION_HEALTH } from '../../src/core/destination-health.js';
import type { ClaimedMessage, SettleResult } from '../../src/core/outbox-store.js';
import { dead, delivered, retry } from '../../src/core/settlement.js';
import { useTestDatabase } from '../support/database.js';
import { claimRequest, fakeClock, freshOutbox } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, type Driver, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

/** Messages of test.kind go to the destination their payload names. */
async function world(driver: Driver) {
  const fresh = await freshOutbox(driver, {
    destinations: { 'test.kind': (payload) => (payload as { to: string }).to },
  });
  const clock = fakeClock();
  const enqueue = (to: string, count: number, orderingKey?: string) =>
    fresh.outbox.enqueue(
      driver.db,
      Array.from({ length: count }, (_, n) => ({
        kind: 'test.kind',
        payload: { to, n },
        ...(orderingKey === undefined ? {} : { orderingKey }),
      })),
    );
  // As a drain's first claim of a run: due rows, and a probe of each half-open destination.
  const claim = async (limit = 100, probe = true) =>
    (await fresh.store.claim(claimRequest({ now: clock.now(), limit, probe }))).claimed;
  const settle = (
    messages: readonly ClaimedMessage[],
    outcome: 'fail' | 'deliver' | 'refuse',
    retryAfterMs: number | null = null,
  ): Promise<SettleResult> =>
    fresh.store.settle(
      messages.map((message) => ({
        message,
        settlement:
          outcome === 'deliver'
            ? delivered()
            : outcome === 'refuse'
              ? dead('HTTP 410')
              : retry(new Date(clock.now().getTime() + 1_000), 'HTTP 503', undefined, {
                  retryAfterMs,
                }),
      })),
      clock.now(),
    );
  const destination = async (name: string) =>
    (await fresh.store.destinations().list(clock.now())).find((d) => d.destination === name);
  const payloadsTo = (messages: readonly ClaimedMessage[]) =>
    messages.map((message) => (message.payload as { to: string }).to);
  return { ...fresh, clock, enqueue, claim, settle, destination, payloadsTo };
}

const DOWN = 'https://down.example';
const UP = 'https://up.example';

describe.each(DRIVER_NAMES)('destination health, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('records each message’s destination at enqueue, from its kind’s function', async () => {
    const w = await world(driver);
    const [key] = await w.enqueue(DOWN, 1);
    const { rows } = await database.pool.query(
      `SELECT destination FROM ${w.schema}.messages WHERE key = $1`,
      [key],
    );
    expect(rows).toEqual([{ destination: DOWN }]);
  });

  it('pauses a destination after five failures in a row, and claims only the others’ messages', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    const failing = await w.claim();
    await w.enqueue(DOWN, 20);
    await w.enqueue(UP, 20);
    const result = await w.settle(failing, 'fail');
    expect(result.destinations).toEqual([
      expect.objectContaining({
        destination: DOWN,
        change: 'paused',
        pausedBy: 'breaker',
        failures: 5,
      }),
    ]);
    expect(await w.destination(DOWN)).toMatchObject({ state: 'open', failures: 5, pauses: 1 });
    w.clock.advance(2_000);
    const next = await w.claim();
    expect(next).toHaveLength(20);
    expect(new Set(w.payloadsTo(next))).toEqual(new Set([UP]));
  });

  it('moves a paused destination’s waiting messages to the pause’s end in due order', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    const failing = await w.claim();
    await w.enqueue(DOWN, 30);
    await w.settle(failing, 'fail');
    const pausedUntil = (await w.destination(DOWN))!.pausedUntil!;
    const { rows } = await database.pool.query(
      `SELECT count(*)::int AS n FROM ${w.schema}.messages WHERE destination = $1 AND due_at = $2`,
      [DOWN, pausedUntil],
    );
    expect(rows[0].n).toBe(30);
  });

  it('parks what arrives for a paused destination at enqueue, and what failed as it paused at the next claim that probes', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    await w.settle(await w.claim(), 'fail');
    const pausedUntil = (await w.destination(DOWN))!.pausedUntil!;
    const parkedAt = `SELECT count(*)::int AS n FROM ${w.schema}.messages
      WHERE destination = $1 AND state = 'pending' AND due_at = $2`;
    // Enqueued while the pause is open: due at its end, not ahead of the healthy ones.
    await w.enqueue(DOWN, 20);
    await w.enqueue(UP, 3);
    expect((await database.pool.query(parkedAt, [DOWN, pausedUntil])).rows[0].n).toBe(20);
    // The five that failed retry with a shorter backoff than the pause: once due, they wait
    // at the head of due order. A claim that does not probe leaves them there.
    w.clock.advance(2_000);
    expect(w.payloadsTo(await w.claim(1, false))).toEqual([UP]);
    expect((await database.pool.query(parkedAt, [DOWN, pausedUntil])).rows[0].n).toBe(20);
    expect(w.payloadsTo(await w.claim())).toEqual([UP, UP]);
    expect((await database.pool.query(parkedAt, [DOWN, pausedUntil])).rows[0].n).toBe(25);
  });

  it('parks nothing at enqueue for a destination that is not open, nor after a delay that ends later', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    await w.settle(await w.claim(), 'fail');
    const pausedUntil = (await w.destination(DOWN))!.pausedUntil!;
    const [later] = await w.outbox.enqueue(driver.db, [
      { kind: 'test.kind', payload: { to: DOWN, n: 0 }, delayMs: 3_600_000 },
    ]);
    const [healthy] = await w.enqueue(UP, 1);
    const { rows } = await database.pool.query(
      `SELECT key, due_at FROM ${w.schema}.messages WHERE key = ANY($1::uuid[])`,
      [[later, healthy]],
    );
    const dueOf = (key: string | undefined) =>
      (rows.find((row) => row.key === key)!.due_at as Date).getTime();
    expect(dueOf(later)).toBeGreaterThan(pausedUntil.getTime());
    expect(dueOf(healthy)).toBeLessThan(pausedUntil.getTime());
  });

  it('does not count fewer failures than the threshold, and a delivery resets the count', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 4);
    await w.settle(await w.claim(), 'fail');
    expect(await w.destination(DOWN)).toMatchObject({ state: 'closed', failures: 4 });
    w.clock.advance(2_000);
    await w.settle(await w.claim(1), 'deliver');
    expect(await w.destination(DOWN)).toMatchObject({ state: 'closed', failures: 0 });
    w.clock.advance(2_000);
    await w.settle(await w.claim(), 'fail');
    expect(await w.destination(DOWN)).toMatchObject({ state: 'closed', failures: 3 });
  });

  it('never counts a permanent failure: a refusal of one message says nothing of the receiver', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 10);
    const result = await w.settle(await w.claim(), 'refuse');
    expect(result.destinations).toBeUndefined();
    expect(await w.destination(DOWN)).toBeUndefined();
  });

  it('pauses at once for a Retry-After, for as long as it asked', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 3);
    const [first, ...rest] = await w.claim();
    await w.settle([first!], 'fail', 30_000);
    expect(await w.destination(DOWN)).toMatchObject({ state: 'open', pausedBy: 'retry-after' });
    expect((await w.destination(DOWN))!.pausedUntil!.getTime()).toBe(
      w.clock.now().getTime() + 30_000,
    );
    // Sends out when it asked may still get through; the pause it asked for stands.
    await w.settle(rest, 'deliver');
    expect(await w.destination(DOWN)).toMatchObject({ state: 'open' });
    w.clock.advance(29_999);
    expect(await w.claim()).toEqual([]);
    w.clock.advance(2);
    expect(await w.claim()).toHaveLength(1);
  });

  it('sends one probe when the pause ends, to only one of two overlapping claims', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    await w.settle(await w.claim(), 'fail');
    await w.enqueue(DOWN, 10);
    w.clock.advance(DEFAULT_DESTINATION_HEALTH.pauseMs - 1);
    expect(await w.claim()).toEqual([]);
    w.clock.advance(2);
    // Only a claim that asks for probes takes one.
    expect(await w.claim(100, false)).toEqual([]);
    const [a, b] = await Promise.all([w.claim(), w.claim()]);
    const probes = [...a!, ...b!];
    expect(probes).toHaveLength(1);
    expect(await w.destination(DOWN)).toMatchObject({ state: 'half-open' });
    expect(await w.claim()).toEqual([]);
    // The probe fails: paused again, twice as long.
    const result = await w.settle(probes, 'fail');
    expect(result.destinations).toEqual([expect.objectContaining({ change: 'paused' })]);
    const again = (await w.destination(DOWN))!;
    expect(again).toMatchObject({ state: 'open', pauses: 2 });
    expect(again.pausedUntil!.getTime()).toBe(
      w.clock.now().getTime() + 2 * DEFAULT_DESTINATION_HEALTH.pauseMs,
    );
    w.clock.advance(2 * DEFAULT_DESTINATION_HEALTH.pauseMs + 1);
    const probe = await w.claim();
    expect(probe).toHaveLength(1);
    // The probe is delivered: the destination closes, and everything waiting is claimable.
    const closed = await w.settle(probe, 'deliver');
    expect(closed.destinations).toEqual([
      expect.objectContaining({ destination: DOWN, change: 'resumed' }),
    ]);
    expect(await w.destination(DOWN)).toMatchObject({ state: 'closed', failures: 0, pauses: 0 });
    expect(await w.claim()).toHaveLength(14);
  });

  it('lets another probe go when the probe’s drain died and its lease ran out', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 6);
    await w.settle(await w.claim(5), 'fail');
    w.clock.advance(DEFAULT_DESTINATION_HEALTH.pauseMs + 1);
    const [lost] = await w.claim();
    expect(lost).toBeDefined();
    w.clock.advance(claimRequest().leaseMs + 1);
    const next = await w.claim();
    expect(next).toHaveLength(1);
  });

  it('looks for a probe again after 5 s when a half-open destination has nothing to send', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    await w.settle(await w.claim(), 'fail');
    // Its messages go (an operator discarded them, say) while it is paused.
    await database.pool.query(`DELETE FROM ${w.schema}.messages WHERE destination = $1`, [DOWN]);
    w.clock.advance(DEFAULT_DESTINATION_HEALTH.pauseMs + 1);
    expect(await w.claim()).toEqual([]);
    const looked = (await w.destination(DOWN))!;
    expect(looked).toMatchObject({ state: 'half-open' });
    expect(looked.probeUntil!.getTime()).toBe(w.clock.now().getTime() + 5_000);
    await w.enqueue(DOWN, 3);
    w.clock.advance(4_999);
    expect(await w.claim()).toEqual([]);
    w.clock.advance(2);
    expect(await w.claim()).toHaveLength(1);
  });

  it('keeps per-key order through a pause: a paused head holds its key on every destination', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 5);
    await w.settle(await w.claim(), 'fail');
    await w.enqueue(DOWN, 1, 'order-1');
    await w.enqueue(UP, 1, 'order-1');
    w.clock.advance(2_000);
    expect(await w.claim()).toEqual([]);
  });

  it('lets an operator pause a destination until resumed, and resume brings its messages back', async () => {
    const w = await world(driver);
    await w.enqueue(UP, 3);
    const destinations = w.store.destinations();
    expect(await destinations.pause(UP, w.clock.now())).toMatchObject({
      state: 'open',
      pausedBy: 'operator',
      waiting: 3,
    });
    w.clock.advance(24 * 3_600_000);
    expect(await w.claim()).toEqual([]);
    expect(await destinations.resume(UP, w.clock.now())).toMatchObject({
      state: 'closed',
      waiting: 3,
    });
    expect(await w.claim()).toHaveLength(3);
    expect(await destinations.resume('https://never.example', w.clock.now())).toBeNull();
  });

  it('a pause until resumed, changed to ten minutes, holds its messages only those ten minutes', async () => {
    const w = await world(driver);
    await w.enqueue(UP, 2);
    const destinations = w.store.destinations();
    await destinations.pause(UP, w.clock.now());
    const tenMinutes = new Date(w.clock.now().getTime() + 600_000);
    expect(await destinations.pause(UP, w.clock.now(), tenMinutes)).toMatchObject({
      pausedUntil: tenMinutes,
      waiting: 2,
    });
    w.clock.advance(599_999);
    expect(await w.claim()).toEqual([]);
    // The pause is over: one probe goes, as after any pause, and its delivery closes it.
    w.clock.advance(2);
    const probe = await w.claim();
    expect(probe).toHaveLength(1);
    await w.settle(probe, 'deliver');
    expect(await w.claim()).toHaveLength(1);
  });

  it('resume after a pause was changed brings every held message back now', async () => {
    const w = await world(driver);
    await w.enqueue(UP, 2);
    const destinations = w.store.destinations();
    await destinations.pause(UP, w.clock.now());
    await destinations.pause(UP, w.clock.now(), new Date(w.clock.now().getTime() + 600_000));
    expect(await destinations.resume(UP, w.clock.now())).toMatchObject({ waiting: 2 });
    expect(await w.claim()).toHaveLength(2);
  });

  it('pages a list of paused and closed destinations in its own order, each once', async () => {
    const w = await world(driver);
    const destinations = w.store.destinations();
    // Records for four destinations: two paused by hand, two closed again after a pause.
    for (const name of ['https://a.example', 'https://b.example']) {
      await destinations.pause(name, w.clock.now());
      await destinations.resume(name, w.clock.now());
    }
    await destinations.pause('https://c.example', w.clock.now());
    await destinations.pause('https://d.example', w.clock.now());
    await w.enqueue('https://a.example', 2);
    await w.enqueue('https://d.example', 3);
    const seen: [string, string, number][] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const rows = await destinations.list(w.clock.now(), { limit: 1, after });
      if (rows.length === 0) break;
      seen.push(
        ...rows.map((row): [string, string, number] => [row.destination, row.state, row.waiting]),
      );
      after = rows.at(-1)!.destination;
    }
    expect(seen).toEqual([
      ['https://c.example', 'open', 0],
      ['https://d.example', 'open', 3],
      ['https://a.example', 'closed', 2],
      ['https://b.example', 'closed', 0],
    ]);
    // A name with no record continues from the paused ones after it, then every closed one.
    const from = await destinations.list(w.clock.now(), { after: 'https://c.fake' });
    expect(from.map((row) => row.destination)).toEqual([
      'https://d.example',
      'https://a.example',
      'https://b.example',
    ]);
  });

  it('reads which destinations are paused, paused first, from the destinations table alone', async () => {
    const w = await world(driver);
    const destinations = w.store.destinations();
    await destinations.pause('https://b.example', w.clock.now());
    await destinations.resume('https://b.example', w.clock.now());
    await destinations.pause(
      'https://c.example',
      w.clock.now(),
      new Date(w.clock.now().getTime() + 1_000),
    );
    await destinations.pause('https://a.example', w.clock.now());
    // Half-open is still paused: only a probe goes.
    w.clock.advance(2_000);
    expect(await destinations.pausedFlags()).toEqual([
      { destination: 'https://a.example', paused: true },
      { destination: 'https://c.example', paused: true },
      { destination: 'https://b.example', paused: false },
    ]);
    expect(await destinations.pausedFlags(1)).toEqual([
      { destination: 'https://a.example', paused: true },
    ]);
    await expect(destinations.pausedFlags(1001)).rejects.toMatchObject({ field: 'limit' });
  });

  it('refuses a bad destination name or pause time with an error naming the field', async () => {
    const w = await world(driver);
    const destinations = w.store.destinations();
    await expect(destinations.pause('', w.clock.now())).rejects.toMatchObject({
      name: 'ValidationError',
      field: 'destination',
    });
    await expect(
      destinations.pause(UP, w.clock.now(), new Date(w.clock.now().getTime() - 1)),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'until' });
    await expect(destinations.list(w.clock.now(), { limit: 0 })).rejects.toMatchObject({
      field: 'limit',
    });
  });

  it('counts failures from overlapping settles on one destination without losing any', async () => {
    const w = await world(driver);
    await w.enqueue(DOWN, 4);
    const claimed = await w.claim();
    await Promise.all(claimed.map((message) => w.settle([message], 'fail')));
    expect(await w.destination(DOWN)).toMatchObject({ failures: 4, state: 'closed' });
  });
});
