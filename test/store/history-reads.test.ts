import { describe, expect, it } from 'vitest';
import { operatorStatements } from '../../src/store/operator-statements.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { insertHistory } from '../support/history.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/** Messages per group: settle groups of 100. */
const GROUP_SIZE = 100;

/**
 * History as settles leave it, in delivery order: ids mostly rising, every 50th delivered late (a
 * retry) in a later group, so groups' id ranges overlap. Keys rise with ids, as time-ordered keys
 * (the default) do, or are random. Returns the ids in delivery order.
 */
async function insertHistoryOutOfOrder(
  schema: string,
  count: number,
  keys: 'time-ordered' | 'random',
): Promise<string[]> {
  const id = 'CASE WHEN g % 50 = 0 THEN 100000 + g * 10 - 49995 ELSE 100000 + g * 10 END';
  const key =
    keys === 'random'
      ? 'gen_random_uuid()'
      : `('00000000-0000-7000-8000-' || lpad(to_hex(${id}), 12, '0'))::uuid`;
  await insertHistory(
    database.pool,
    schema,
    `(SELECT ${id} AS id, ${key} AS key, 'test.kind' AS kind, jsonb_build_object('g', g) AS payload,
        NULL::text AS ordering_key, 1 AS attempts, 10 AS max_attempts, now() AS due_at,
        NULL::text AS last_error, now() AS created_at,
        now() - interval '1 hour' + (g / ${GROUP_SIZE}) * interval '1 second' AS delivered_at,
        g / ${GROUP_SIZE} AS settle
      FROM generate_series(1, $1::int) AS g) history`,
    'settle',
    [count],
  );
  return Array.from({ length: count }, (_, index) => {
    const g = index + 1;
    return String(g % 50 === 0 ? 100000 + g * 10 - 49995 : 100000 + g * 10);
  });
}

/** The plan of one operator statement, as text. */
async function planOf(text: string, params: unknown[]): Promise<string> {
  const { rows } = await database.pool.query(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, params);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

describe('reads of delivered history by id and key, through the groups that may hold them', () => {
  for (const keys of ['time-ordered', 'random'] as const) {
    it(`finds every message by id and key, out-of-order ids included (${keys} keys)`, async () => {
      const { schema, store } = await freshOutbox(driver);
      const ids = await insertHistoryOutOfOrder(schema, 5_000, keys);
      const sample = ids.filter((_, index) => index % 97 === 0 || (index + 1) % 50 === 0);
      for (const id of sample) {
        const record = await store.get(id);
        expect(record, `id ${id}`).toMatchObject({ id, state: 'delivered' });
        expect(await store.getByKey(record!.key)).toMatchObject({ id });
      }
      expect(await store.get('3')).toBeNull();
      expect(await store.getByKey('00000000-0000-7000-8000-00000000000f')).toBeNull();
    });
  }

  it('discards one message of a group and leaves the rest of the group readable', async () => {
    const { schema, store } = await freshOutbox(driver);
    const ids = await insertHistoryOutOfOrder(schema, 300, 'time-ordered');
    const [gone, neighbour] = [ids[120]!, ids[121]!];
    expect(await store.discard(gone)).toBe('delivered');
    expect(await store.get(gone)).toBeNull();
    expect(await store.get(neighbour)).toMatchObject({ id: neighbour, state: 'delivered' });
    expect(await store.discard(gone)).toBeNull();
    expect((await store.stats(new Date())).delivered).toBe(299);
  });

  it('two discards in one group at once each take out their own message', async () => {
    const { schema, store } = await freshOutbox(driver);
    const ids = await insertHistoryOutOfOrder(schema, 300, 'time-ordered');
    const pair = [ids[10]!, ids[11]!];
    expect(await Promise.all(pair.map((id) => store.discard(id)))).toEqual([
      'delivered',
      'delivered',
    ]);
    for (const id of pair) expect(await store.get(id)).toBeNull();
    expect((await store.stats(new Date())).delivered).toBe(298);
  });

  it('reads by id and by key on the groups indexes, unpacking few groups', async () => {
    const { schema } = await freshOutbox(driver);
    const ids = await insertHistoryOutOfOrder(schema, 200_000, 'time-ordered');
    await database.pool.query(`ANALYZE ${schema}.delivered_groups`);
    const statements = operatorStatements(`"${schema}"`);
    const id = ids[123_456]!;
    const key = `00000000-0000-7000-8000-${Number(id).toString(16).padStart(12, '0')}`;
    const byId = await planOf(statements.readMessage, [id]);
    const byKey = await planOf(statements.readMessageByKey, [key]);
    expect(byId).toContain('delivered_groups_ids');
    expect(byKey).toContain('delivered_groups_keys');
    /** How many groups' messages the read unpacked, of 2,000. */
    const unpacked = (plan: string) =>
      Number(/Function Scan on unnest h \(actual [^)]*loops=(\d+)\)/.exec(plan)?.[1]);
    // The id multirange is exact: only the group that holds the id.
    expect(unpacked(byId), byId).toBe(1);
    // A key range is bounding: every group with a late retry spans back to the retry's key,
    // here about 50 groups.
    expect(unpacked(byKey), byKey).toBeGreaterThanOrEqual(1);
    expect(unpacked(byKey), byKey).toBeLessThanOrEqual(60);
  });
});
