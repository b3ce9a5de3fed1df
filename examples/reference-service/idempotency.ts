import type { SqlExecutor, Statement } from 'outbox-relay';
import { quoteSchema, UNIQUE_VIOLATION, violates } from 'outbox-relay/sql';

/**
 * 24 hours: long enough to cover a client's retries across an outage, as payment APIs do;
 * short enough that the table stays small. After it a key is forgotten: reused, it starts a new
 * request, and the scheduled purge ({@link idempotencyPurge}) deletes its record.
 */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Expired records deleted per purge: one short statement that holds few row locks, run on every
 * scheduled purge, keeps up with thousands of keyed writes an hour; a backlog clears over runs.
 */
export const DEFAULT_IDEMPOTENCY_PURGE_LIMIT = 5_000;

/** Keys are opaque to us; 255 printable characters holds any UUID or ULID with a prefix. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export type IdempotencyLookup =
  | { kind: 'new' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'mismatch' };

export function isValidIdempotencyKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** SHA-256 of the route and the validated body: the same request, however it was spaced. */
export async function requestHash(route: string, body: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(`${route}\n${JSON.stringify(body)}`);
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * Idempotency-Key records, kept in the same database and written in the same transaction as the
 * request's domain rows and messages: a replay either finds the whole effect committed or none.
 */
export class IdempotencyRecords {
  private readonly table: string;

  constructor(
    private readonly db: SqlExecutor,
    appSchema: string,
    private readonly ttlMs: number = DEFAULT_IDEMPOTENCY_TTL_MS,
  ) {
    this.table = `${quoteSchema(appSchema)}.idempotency_keys`;
  }

  async lookup(route: string, key: string, hash: string, now: Date): Promise<IdempotencyLookup> {
    const result = await this.db.query(
      `SELECT request_hash, status, response FROM ${this.table}
       WHERE route = $1 AND key = $2 AND expires_at > $3`,
      [route, key, now],
    );
    const row = result.rows[0];
    if (!row) return { kind: 'new' };
    if (row.request_hash !== hash) return { kind: 'mismatch' };
    return { kind: 'replay', response: { status: Number(row.status), body: row.response } };
  }

  /**
   * The statements that claim the key and record its response, to place FIRST in the request's
   * transaction, before any domain write. An expired record under the same key is cleared; a
   * live one makes the INSERT fail with a unique violation, which aborts the whole transaction.
   *
   * Being first is what makes concurrent duplicates safe: the INSERT takes the key's unique
   * index entry, so a concurrent request with the same key blocks on it until this transaction
   * ends, then fails on the key (never on a domain constraint such as the email) and replays
   * the committed answer; if this transaction rolled back instead, it proceeds as the first.
   * Nothing is claimed outside the transaction, so a crash leaves no stuck claim.
   */
  recordStatements(
    route: string,
    key: string,
    hash: string,
    response: StoredResponse,
    now: Date,
  ): Statement[] {
    return [
      {
        name: 'clearExpiredIdempotencyKey',
        text: `DELETE FROM ${this.table} WHERE route = $1 AND key = $2 AND expires_at <= $3`,
        params: [route, key, now],
      },
      {
        name: 'recordIdempotencyKey',
        text: `INSERT INTO ${this.table} (key, route, request_hash, status, response, created_at, expires_at)
          VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
        params: [
          key,
          route,
          hash,
          response.status,
          JSON.stringify(response.body),
          now,
          new Date(now.getTime() + this.ttlMs),
        ],
      },
    ];
  }

  /**
   * Deletes up to `limit` records that expired at or before `now`; returns how many. One
   * statement, oldest first, so it works over Neon HTTP and a backlog clears over several runs.
   */
  async purgeExpired(now: Date, limit = DEFAULT_IDEMPOTENCY_PURGE_LIMIT): Promise<number> {
    const { rowCount } = await this.db.query(
      `DELETE FROM ${this.table} WHERE (route, key) IN (
         SELECT route, key FROM ${this.table} WHERE expires_at <= $1
         ORDER BY expires_at LIMIT $2)`,
      [now, limit],
    );
    return rowCount;
  }
}

/**
 * The reference service's clean-up for the scheduled purge (`DrainerOptions.purgeWith`): deletes
 * expired Idempotency-Key records, reported as `idempotencyKeys`.
 *
 * @example
 * const drainer: DrainerOptions = { store, senders, purgeWith: idempotencyPurge(db) };
 */
export function idempotencyPurge(
  db: SqlExecutor,
  appSchema = 'app',
): (now: Date) => Promise<Record<string, number>> {
  const records = new IdempotencyRecords(db, appSchema);
  return async (now) => ({ idempotencyKeys: await records.purgeExpired(now) });
}

/** True for the unique violation a concurrent duplicate of this key causes. */
export function isIdempotencyRace(error: unknown): boolean {
  return violates(error, UNIQUE_VIOLATION, 'idempotency_keys_pkey');
}
