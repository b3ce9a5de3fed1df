import { describe, expect, it } from 'vitest';
import { randomId, timeOrderedId } from '../../src/core/ports.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const outbox = createOutbox({ kinds: { 'slack.post': true } });

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The Unix milliseconds in a version 7 UUID's first 48 bits. */
function millisecondsOf(key: string): number {
  return Number.parseInt(key.replaceAll('-', '').slice(0, 12), 16);
}

describe('timeOrderedId', () => {
  it('makes version 7 UUIDs carrying the time they were made, to the millisecond', () => {
    const before = Date.now();
    const key = timeOrderedId();
    const after = Date.now();
    expect(key).toMatch(UUID_V7);
    expect(millisecondsOf(key)).toBeGreaterThanOrEqual(before);
    expect(millisecondsOf(key)).toBeLessThanOrEqual(after);
  });

  it('makes keys that sort by time and never repeat, even within one millisecond', () => {
    const keys = Array.from({ length: 20_000 }, () => timeOrderedId());
    expect(new Set(keys).size).toBe(keys.length);
    const times = keys.map(millisecondsOf);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('keeps 74 random bits: no bit outside the time, version and variant is fixed', () => {
    // Every random bit position takes both values over a few hundred keys (a fixed bit would
    // show up as always 0 or always 1).
    const keys = Array.from({ length: 400 }, () =>
      BigInt(`0x${timeOrderedId().replaceAll('-', '')}`),
    );
    const randomBits = [
      ...Array.from({ length: 12 }, (_, i) => 64n + BigInt(i)), // rand_a, below the version
      ...Array.from({ length: 62 }, (_, i) => BigInt(i)), // rand_b, below the variant
    ];
    for (const bit of randomBits) {
      const ones = keys.filter((key) => (key >> bit) & 1n).length;
      expect(ones, `bit ${bit}`).toBeGreaterThan(0);
      expect(ones, `bit ${bit}`).toBeLessThan(keys.length);
    }
  });

  it('is not the claim token generator: claim tokens stay random version 4 UUIDs', () => {
    expect(randomId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
  });
});

describe.each(DRIVER_NAMES)('message keys through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('enqueue gives a message without a key a time-ordered key, stored as written', async () => {
    const before = Date.now();
    const keys = await outbox.enqueue(driver.db, [
      { kind: 'slack.post', payload: { n: 1 } },
      { kind: 'slack.post', payload: { n: 2 } },
    ]);
    for (const key of keys) {
      expect(key).toMatch(UUID_V7);
      expect(millisecondsOf(key)).toBeGreaterThanOrEqual(before);
    }
    const { rows } = await database.pool.query(
      'SELECT key::text AS key FROM outbox.messages WHERE key = ANY($1::uuid[]) ORDER BY id',
      [keys],
    );
    expect(rows.map((row) => row.key)).toEqual(keys);
  });

  it('still accepts any UUID the caller gives as the key', async () => {
    const given = crypto.randomUUID();
    const [key] = await outbox.enqueue(driver.db, {
      kind: 'slack.post',
      payload: { n: 3 },
      key: given,
    });
    expect(key).toBe(given);
  });
});
