/**
 * The bounds a settle sends with its deliveries for their history group: the ids as runs of
 * consecutive ids, and the smallest and largest key, in PostgreSQL's own order.
 */
import { describe, expect, it } from 'vitest';
import { historyBounds } from '../../src/store/history-groups.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();

const key = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`;

describe('history bounds', () => {
  it('are none without deliveries', () => {
    expect(historyBounds([])).toBeNull();
  });

  it('merge consecutive ids into runs, whatever order the deliveries came in', () => {
    const ids = ['12', '3', '10', '4', '11', '5', '99', '3'];
    const bounds = historyBounds(ids.map((id, n) => ({ id, key: key(n) })));
    expect(bounds?.ids).toBe('{[3,5],[10,12],[99,99]}');
  });

  it('order ids as numbers past 2^53 and across lengths', () => {
    const ids = ['9007199254740993', '9007199254740992', '999', '1000'];
    const bounds = historyBounds(ids.map((id, n) => ({ id, key: key(n) })));
    expect(bounds?.ids).toBe('{[999,1000],[9007199254740992,9007199254740993]}');
  });

  it('take the smallest and largest key as PostgreSQL orders uuids', async () => {
    const keys = [
      'ffffffff-0000-4000-8000-000000000000',
      '0190c3f0-0000-7000-8000-000000000001',
      'A0000000-0000-4000-8000-000000000000',
      '0190c3f0-0000-7000-8000-000000000000',
      '9fffffff-ffff-4fff-bfff-ffffffffffff',
    ];
    const bounds = historyBounds(keys.map((each, n) => ({ id: String(n + 1), key: each })));
    const { rows } = await database.pool.query<{ smallest: string; largest: string }>(
      'SELECT min(k::text)::uuid::text AS smallest, max(k::text)::uuid::text AS largest FROM unnest($1::uuid[]) k',
      [keys],
    );
    expect(bounds).toMatchObject({ smallestKey: rows[0]!.smallest, largestKey: rows[0]!.largest });
    expect(bounds).toMatchObject({
      smallestKey: '0190c3f0-0000-7000-8000-000000000000',
      largestKey: 'ffffffff-0000-4000-8000-000000000000',
    });
  });

  it('make an int8multirange PostgreSQL reads back as the same ids', async () => {
    // 1,000 to 1,299 in a shuffled order, without every 50th: runs with gaps between.
    const ids = Array.from({ length: 300 }, (_, n) => 1_000 + ((n * 7) % 300))
      .filter((id) => id % 50 !== 0)
      .map(String);
    const bounds = historyBounds(ids.map((id, n) => ({ id, key: key(n) })));
    const candidates = Array.from({ length: 400 }, (_, n) => String(950 + n));
    const { rows } = await database.pool.query<{ id: string }>(
      'SELECT id::text FROM unnest($2::bigint[]) id WHERE $1::int8multirange @> id ORDER BY id',
      [bounds!.ids, candidates],
    );
    expect(rows.map((row) => row.id)).toEqual([...ids].sort());
  });
});
