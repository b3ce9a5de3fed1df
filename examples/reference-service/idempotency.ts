import {
  type QueryResult,
  quoteSchema,
  type SqlExecutor,
  type Statement,
  UNIQUE_VIOLATION,
  violates,
} from 'outbox-relay';

/**
 * 24 hours: long enough to cover a client's retries across an outage, as payment APIs do;
 * short enough that the table stays small (expired keys are replaced on reuse).
 */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

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
    const result: QueryResult<{ request_hash: string; status: number; response: unknown }> =
      await this.db.query(
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
   * The statements that record a response, to place in the request's transaction: an expired
   * record under the same key is cleared first; a live one makes the INSERT fail with a unique
   * violation, which aborts the whole transaction (a concurrent duplicate lost the race).
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
}

/** True for the unique violation a concurrent duplicate of this key causes. */
export function isIdempotencyRace(error: unknown): boolean {
  return violates(error, UNIQUE_VIOLATION, 'idempotency_keys_pkey');
}
