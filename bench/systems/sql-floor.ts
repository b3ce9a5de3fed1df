/**
 * The raw-SQL floor: the least a SKIP LOCKED queue can do per message on this database. No
 * lease, no claim token, no attempts, no ordering, no kinds: one claim statement and one settle
 * statement per batch, in a tight loop. Whatever a real system adds costs time above this.
 */
import pg from 'pg';
import { forEachWithConcurrency } from '../lib/concurrency.js';
import { benchPool } from '../lib/postgres.js';
import { benchPayload, ENQUEUE_CHUNK, type QueueHandle, type QueueSystem } from './types.js';

const SCHEMA_SQL = `
  CREATE SCHEMA floor;
  -- state: 0 due, 1 claimed, 2 done.
  CREATE TABLE floor.jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload jsonb NOT NULL,
    state smallint NOT NULL DEFAULT 0,
    due_at timestamptz NOT NULL DEFAULT now(),
    done_at timestamptz
  );
  -- Partial, like every real system's claim index: done rows are not in it.
  CREATE INDEX jobs_due ON floor.jobs (due_at, id) WHERE state = 0;`;

/** $1 batch size. Claim N ids with SKIP LOCKED and mark them in the same statement. */
export const FLOOR_CLAIM = `
  UPDATE floor.jobs SET state = 1
  WHERE id IN (
    SELECT id FROM floor.jobs
    WHERE state = 0 AND due_at <= now()
    ORDER BY due_at, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED)
  RETURNING id, payload`;

/** $1 ids. One settle UPDATE for the whole batch. */
export const FLOOR_SETTLE = `
  UPDATE floor.jobs SET state = 2, done_at = now() WHERE id = ANY($1::bigint[])`;

export const sqlFloorSystem: QueueSystem = {
  id: 'sql-floor',
  label: 'raw-SQL floor',
  version: '-',
  settings: {
    claim:
      'UPDATE ... WHERE id IN (SELECT id ... ORDER BY due_at, id LIMIT n FOR UPDATE SKIP LOCKED) RETURNING id, payload',
    settle: 'UPDATE ... SET state = done WHERE id = ANY($1): one statement per batch',
    loop: 'claim, send the batch with `concurrency` in flight, settle; until a claim is empty',
    purge: 'DELETE FROM floor.jobs WHERE state = done',
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
      async enqueue(count) {
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
        let delivered = 0;
        while (performance.now() < deadline) {
          const { rows } = await pool.query<{ id: string; payload: unknown }>(FLOOR_CLAIM, [
            request.batchSize,
          ]);
          if (rows.length === 0) break;
          await forEachWithConcurrency(rows, request.concurrency, (row) =>
            request.send(row.payload),
          );
          await pool.query(FLOOR_SETTLE, [rows.map((row) => row.id)]);
          delivered += rows.length;
        }
        return { delivered, elapsedMs: performance.now() - startedAt };
      },
      async unfinished() {
        const result = await pool.query<{ n: string }>(
          'SELECT count(*) AS n FROM floor.jobs WHERE state < 2',
        );
        return Number(result.rows[0]!.n);
      },
      async claim(limit) {
        const result = await pool.query(FLOOR_CLAIM, [limit]);
        return result.rowCount ?? 0;
      },
      async insertHistory(rows) {
        await pool.query(
          `INSERT INTO floor.jobs (payload, state, due_at, done_at)
           SELECT jsonb_build_object('orderId', g, 'event', 'order.created',
               'note', 'outbox-relay benchmark message'),
             2,
             now() - interval '1 day' + g * interval '1 millisecond',
             now() - interval '1 day' + g * interval '1 millisecond' + interval '50 milliseconds'
           FROM generate_series(1, $1::integer) AS g`,
          [rows],
        );
      },
      async purge() {
        await pool.query('DELETE FROM floor.jobs WHERE state = 2');
      },
      async tables() {
        return ['floor.jobs'];
      },
      close: () => pool.end(),
    };
  },
};
