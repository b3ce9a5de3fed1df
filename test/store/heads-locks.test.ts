/**
 * What a claim taking heads locks (src/store/claim-heads.ts): its scan locks each row as it
 * reads it and checks whether the row is its key's head after, so a row it read and did not
 * take stays locked until the claim's transaction ends. A claim beside it steps over that row
 * without waiting, and the row, still pending, is taken by a later claim once it is a head. The
 * first claim runs here in a transaction left open, as a claim would be while its commit is on
 * the wire.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimResult } from '../../src/core/outbox-store.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import type { Outbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import {
  claimOf10,
  freshOutbox,
  keysTaken,
  settleDelivered,
  walkKeysNext,
  watchedClaims,
} from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

const database = useTestDatabase();

/** The rows of `ids` another connection can lock now, as a claim's FOR UPDATE SKIP LOCKED can. */
async function lockable(outbox: Outbox, ids: readonly string[]): Promise<string[]> {
  const client = await database.pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string }>(
      `SELECT id::text FROM ${outbox.schema}.messages WHERE id = ANY($1::bigint[])
       ORDER BY id FOR UPDATE SKIP LOCKED`,
      [ids],
    );
    return rows.map((row) => row.id);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('a claim taking heads, its transaction open', () => {
  const driver = useDriver('node-pg', database);
  let client: pg.PoolClient;
  let besideClient: pg.PoolClient;

  beforeEach(async () => {
    client = await database.pool.connect();
    besideClient = await database.pool.connect();
    // A claim beside the open one must step over what it locked, never wait for it: a wait
    // fails it here (55P03) rather than hanging the test.
    await besideClient.query("SET lock_timeout = '2s'");
  });
  afterEach(async () => {
    await client.query('ROLLBACK').catch(() => {});
    await besideClient.query('RESET lock_timeout');
    client.release();
    besideClient.release();
  });

  it('keeps a row it read and did not take locked; a claim beside it steps over the row, and a later one takes it once it is a head', async () => {
    const { outbox } = await freshOutbox(driver);
    // Due order: ten keys of one message (the walk's), then key zz's two messages, then twenty
    // keys of one. The claim taking heads reads zz's first (a head: taken), zz's second (behind
    // it: locked, not taken) and the next nine heads.
    const startMs = Date.now() - 60_000;
    const keys = [
      ...Array.from({ length: 10 }, (_, n) => `key-${String(n).padStart(3, '0')}`),
      'zz',
      'zz',
      ...Array.from({ length: 20 }, (_, n) => `key-${String(n + 10).padStart(3, '0')}`),
    ];
    const messageKeys = await outbox.enqueue(
      driver.db,
      keys.map((orderingKey, n) => ({
        kind: 'test.kind',
        payload: { n },
        orderingKey,
        dueAt: new Date(startMs + n),
      })),
    );
    const { rows } = await database.pool.query<{ id: string }>(
      `SELECT id::text FROM ${outbox.schema}.messages WHERE key = $1`,
      [messageKeys[11]],
    );
    const zzSecond = rows[0]!.id;

    await client.query('BEGIN');
    const first = watchedClaims(outbox, pgExecutor(client));
    await walkKeysNext(first.store);
    const walked = await first.store.claim(claimOf10());
    const heads = await first.store.claim(claimOf10({ resumeAt: walked.resumeAt }));
    expect(first.ways.slice(-2)).toEqual(['walk', 'heads']);
    expect(keysTaken(walked)).toEqual(messageKeys.slice(0, 10));
    expect(keysTaken(heads)).toEqual([messageKeys[10], ...messageKeys.slice(12, 21)]);
    expect(await lockable(outbox, [zzSecond])).toEqual([]);

    // Beside it, on another connection, a store's claims: they wait for nothing, step over
    // every row the open claim locked, and take the rest.
    const beside = watchedClaims(outbox, pgExecutor(besideClient));
    const besideTaken: string[] = [];
    let resumeAt: ClaimResult['resumeAt'];
    for (let n = 0; n < 5; n++) {
      const result = await beside.store.claim(claimOf10({ resumeAt }));
      besideTaken.push(...keysTaken(result));
      resumeAt = result.resumeAt;
      if (result.claimed.length === 0) break;
    }
    expect(besideTaken.sort()).toEqual(messageKeys.slice(21).sort());

    // Committed, the row it did not take is free again and still pending; once zz's first is
    // delivered it is a head, and the next claim beside takes it, though its cursor has passed.
    await client.query('COMMIT');
    expect(await lockable(outbox, [zzSecond])).toEqual([zzSecond]);
    await settleDelivered(first.store, heads.claimed);
    const after = await beside.store.claim(claimOf10({ resumeAt }));
    expect(keysTaken(after)).toEqual([messageKeys[11]]);
  });
});
