/**
 * The raw-SQL floor: the fastest correct SKIP LOCKED drain we can write in plain SQL, at the
 * same batch size and durability (synchronous commit, every settle committed) as the systems it
 * is compared with. Whatever a real system adds costs time above this.
 *
 * "Correct" means what any at-least-once queue must give: overlapping drains never take the
 * same row (SKIP LOCKED), a row is removed only after its send succeeded, and a drain that dies
 * loses nothing (its rows come back when their lease passes). What it leaves out: claim tokens,
 * attempts, ordering keys, kinds, retries, history.
 *
 * What makes it fast:
 * - pipelined: ONE statement per batch deletes the previous batch (its sends succeeded) and
 *   claims the next, so a batch costs one round trip and one commit;
 * - prepared: every statement is a named prepared statement, planned once per connection;
 * - settle by delete: no new row version and no index entries for a finished row;
 * - a HOT claim: the lease column is in no index, so marking a row claimed can stay on its page
 *   without touching an index (fillfactor leaves that room).
 */
import pg from 'pg';
import { forEachWithConcurrency } from '../lib/concurrency.js';
import { benchPool } from '../lib/postgres.js';
import {
  benchPayload,
  ENQUEUE_CHUNK,
  type QueueHandle,
  type QueueSystem,
  refuseOrderingKeys,
} from './types.js';

/**
 * Room left on each page for the claim's new row version, so it can be a HOT update. Measured
 * with BENCH_ONLY=1 at scale 0.1 against 100 (no room); see docs/benchmarks.md.
 */
export const FLOOR_FILLFACTOR = 85;

const SCHEMA_SQL = `
  CREATE SCHEMA floor;
  CREATE TABLE floor.jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload jsonb NOT NULL,
    due_at timestamptz NOT NULL DEFAULT now(),
    -- The lease: null or passed = claimable. In no index, so claims can be HOT updates.
    locked_until timestamptz
  ) WITH (fillfactor = ${FLOOR_FILLFACTOR});
  -- The claim walks this in due order; claimed rows are skipped by the lease check on the heap
  -- tuple, and at most one batch per drain is ever claimed at once.
  CREATE INDEX jobs_due ON floor.jobs (due_at, id);`;

/** How long a claim holds its rows before another drain may take them. */
const FLOOR_LEASE = '2 minutes';

/**
 * $1 ids of the previous batch (all sent), $2 batch size. Deletes the previous batch and claims
 * the next in one statement. Both parts see the same snapshot, in which the previous batch is
 * still leased, so the claim cannot pick those rows up again.
 */
export const FLOOR_SETTLE_AND_CLAIM = `
  WITH settled AS (DELETE FROM floor.jobs WHERE id = ANY($1::bigint[]))
  UPDATE floor.jobs SET locked_until = now() + interval '${FLOOR_LEASE}'
  WHERE id = ANY(ARRAY(
    SELECT id FROM floor.jobs
    WHERE due_at <= now() AND (locked_until IS NULL OR locked_until < now())
    ORDER BY due_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED))
  RETURNING id, payload`;

type ClaimedRow = { id: string; payload: unknown };

/** A named (prepared) statement: parsed and planned once per connection. */
function settleAndClaim(settledIds: readonly string[], limit: number) {
  return {
    name: 'floor_settle_and_claim',
    text: FLOOR_SETTLE_AND_CLAIM,
    values: [settledIds, limit],
  };
}

export const sqlFloorSystem: QueueSystem = {
  id: 'sql-floor',
  label: 'raw-SQL floor',
  version: '-',
  settings: {
    statement:
      'one prepared statement per batch: WITH settled AS (DELETE previous batch) UPDATE SET locked_until = now() + lease WHERE id = ANY(ARRAY(SELECT ... ORDER BY due_at, id LIMIT n FOR UPDATE SKIP LOCKED)) RETURNING id, payload',
    loop: 'send the batch with `concurrency` in flight, then settle it and claim the next in one round trip; until a claim is empty',
    table: `lease column outside every index (HOT claims), fillfactor ${FLOOR_FILLFACTOR}, settle by DELETE`,
    purge: 'none needed: delivered rows are deleted at settle',
  },
  async install(url) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(SCHEMA_SQL);
    } finally {
      await client.end();
    }
  },
  async open(url): Promise<QueueHandle> {
    const pool = benchPool(url, 10);
    return {
      async enqueue(count, options) {
        refuseOrderingKeys('sql-floor', options);
        for (let start = 0; start < count; start += ENQUEUE_CHUNK) {
          const size = Math.min(ENQUEUE_CHUNK, count - start);
          const payloads = Array.from({ length: size }, (_, i) =>
            JSON.stringify(benchPayload(start + i)),
          );
          await pool.query('INSERT INTO floor.jobs (payload) SELECT unnest($1::jsonb[])', [
            payloads,
          ]);
        }
      },
      async drain(request) {
        const startedAt = performance.now();
        const deadline = startedAt + request.timeLimitMs;
        // One connection for the whole drain, so the statement is prepared once.
        const client = await pool.connect();
        let delivered = 0;
        try {
          let sent: string[] = [];
          while (performance.now() < deadline) {
            const { rows } = await client.query<ClaimedRow>(
              settleAndClaim(sent, request.batchSize),
            );
            delivered += sent.length;
            if (rows.length === 0) break;
            await forEachWithConcurrency(rows, request.concurrency, (row) =>
              request.send(row.payload),
            );
            sent = rows.map((row) => row.id);
          }
        } finally {
          client.release();
        }
        return { delivered, elapsedMs: performance.now() - startedAt };
      },
      async unfinished() {
        const result = await pool.query<{ n: string }>('SELECT count(*) AS n FROM floor.jobs');
        return Number(result.rows[0]!.n);
      },
      async claim(limit) {
        const result = await pool.query<ClaimedRow>(settleAndClaim([], limit));
        return result.rowCount ?? 0;
      },
      async purge() {
        // Nothing to do: a delivered row is gone the moment its batch is settled.
      },
      async tables() {
        return ['floor.jobs'];
      },
      close: () => pool.end(),
    };
  },
};
