/** Outbox rows in any state, written directly, for tests of the operator commands. */
import type pg from 'pg';
import type { MessageState } from '../../src/core/outbox-store.js';

export interface MessageRowOptions {
  kind?: string;
  /** How long ago the row reached its state (delivered_at, dead_at) or became due. */
  ageMs?: number;
}

/**
 * Inserts one row in `state`, satisfying the table's CHECK constraints; returns its id. Times
 * are cut to milliseconds, as the library writes them: list cursors carry JS Dates.
 */
export async function insertMessageIn(
  pool: pg.Pool,
  state: MessageState,
  options: MessageRowOptions = {},
): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO outbox.messages
       (key, kind, payload, state, attempts, due_at, claim_token, claimed_at, lease_expires_at,
        delivered_at, dead_at, last_error)
     SELECT gen_random_uuid(), $1, '{"url":"https://example.com/","body":{}}'::jsonb, $2::text,
       CASE WHEN $2 = 'pending' THEN 0 ELSE 1 END,
       at,
       CASE WHEN $2 = 'claimed' THEN gen_random_uuid() END,
       CASE WHEN $2 = 'claimed' THEN now() END,
       CASE WHEN $2 = 'claimed' THEN now() + interval '2 minutes' END,
       CASE WHEN $2 = 'delivered' THEN at END,
       CASE WHEN $2 = 'dead' THEN at END,
       CASE WHEN $2 = 'dead' THEN 'permanent failure: test' END
     FROM (SELECT date_trunc('milliseconds', now() - $3 * interval '1 millisecond') AS at) AS times
     RETURNING id`,
    [options.kind ?? 'webhook', state, options.ageMs ?? 0],
  );
  return String(rows[0]!.id);
}
