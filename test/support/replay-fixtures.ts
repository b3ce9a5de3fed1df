/**
 * Dead messages written straight from SQL, many in one statement (generate_series), for replay
 * tests that need a backlog a drain would take minutes to leave behind.
 */
import type pg from 'pg';

/** SQL expressions over `g` (1 to count) for the columns a test varies. */
export interface DeadRows {
  kind?: string;
  payload?: string;
  orderingKey?: string;
  lastError?: string;
  deadAt?: string;
}

/**
 * Inserts `count` dead messages in one statement and returns how many. Each has spent its 3
 * attempts; keys are random uuids. Defaults: kind `test.kind`, a webhook payload to
 * https://hooks.example.com/orders/<g>, no ordering key, error "HTTP 503 from
 * hooks.example.com/orders", dead an hour ago.
 */
export async function insertDeadMessages(
  db: pg.Pool,
  schema: string,
  count: number,
  rows: DeadRows = {},
): Promise<number> {
  const result = await db.query(
    `INSERT INTO ${schema}.messages
       (key, kind, payload, ordering_key, state, attempts, max_attempts, due_at, last_error, dead_at)
     SELECT gen_random_uuid(), ${rows.kind ?? "'test.kind'"},
       ${rows.payload ?? `jsonb_build_object('url', 'https://hooks.example.com/orders/' || g, 'body', g)`},
       ${rows.orderingKey ?? 'NULL'}, 'dead', 3, 3, now() - interval '2 hours',
       ${rows.lastError ?? "'HTTP 503 from hooks.example.com/orders'"},
       ${rows.deadAt ?? "now() - interval '1 hour'"}
     FROM generate_series(1, $1::int) AS g`,
    [count],
  );
  return result.rowCount ?? 0;
}

/** Each state's count in `schema`, messages and history together. */
export async function stateCounts(db: pg.Pool, schema: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM ${schema}.all_messages GROUP BY state ORDER BY state`,
  );
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}

/** The audit rows of `schema`, oldest first. */
export async function auditRows(db: pg.Pool, schema: string): Promise<Record<string, unknown>[]> {
  const { rows } = await db.query(`SELECT * FROM ${schema}.replays ORDER BY id`);
  return rows;
}
