import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isValidationError, type Statement } from 'outbox-relay';
import { errorResponse, type Issue, pathOfField } from 'outbox-relay/admin';
import { FOREIGN_KEY_VIOLATION, UNIQUE_VIOLATION, violates } from 'outbox-relay/sql';
import type { AppEnv, ResolvedDeps } from './app-deps.js';
import {
  type IdempotencyRecords,
  isIdempotencyRace,
  isValidIdempotencyKey,
  requestHash,
  type StoredResponse,
} from './idempotency.js';

/** What a route commits: domain rows and messages together, and the response it answers. */
export interface Write {
  statements: Statement[];
  messageKeys: string[];
  response: StoredResponse;
  /**
   * What an Idempotency-Key replay answers, when it must differ from `response`: a reply that
   * carries a secret is stored without it (the table is plain text and replays are unauthenticated
   * by nature: whoever holds the key gets the answer).
   */
  replay?: StoredResponse;
}

/** A request the route refuses after reading the database (e.g. an unknown user). */
export type Rejection = { rejection: { status: ContentfulStatusCode; body: object } };

export function rejection(
  status: ContentfulStatusCode,
  error: string,
  issues?: Issue[],
): Rejection {
  return { rejection: { status, body: issues ? { error, issues } : { error } } };
}

/**
 * Runs a write at most once per Idempotency-Key: a replay with the same body returns the first
 * response and writes nothing; the same key with another body is a 422. The key's record, the
 * write's statements and its messages commit in ONE transaction, the record first (see
 * `IdempotencyRecords.recordStatements`): concurrent requests with one key wait for the first
 * to finish, then replay its answer. Then the kick drains the new messages in the background.
 */
export async function commitOnce(
  c: Context<AppEnv>,
  deps: ResolvedDeps,
  route: string,
  input: unknown,
  plan: () => Promise<Write | Rejection>,
): Promise<Response> {
  const key = c.req.header('idempotency-key');
  const now = deps.clock.now();
  let hash: string | undefined;
  const records = deps.idempotency;
  if (key !== undefined) {
    if (!isValidIdempotencyKey(key)) {
      return errorResponse(c, 400, 'invalid Idempotency-Key', [
        { path: ['Idempotency-Key'], message: 'expected 1 to 255 printable ASCII characters' },
      ]);
    }
    hash = await requestHash(route, input);
    const earlier = await replayOrConflict(c, records, route, key, hash, now);
    if (earlier) return earlier;
  }

  let write: Write | Rejection;
  try {
    write = await plan();
  } catch (error) {
    if (isValidationError(error)) {
      return errorResponse(c, 400, 'invalid request body', [
        { path: pathOfField(error.field), message: error.message },
      ]);
    }
    throw error;
  }
  if ('rejection' in write) {
    return c.json(write.rejection.body, write.rejection.status);
  }

  const statements: Statement[] = [];
  if (key !== undefined && hash !== undefined) {
    const stored = write.replay ?? write.response;
    statements.push(...records.recordStatements(route, key, hash, stored, now));
  }
  statements.push(...write.statements);
  try {
    await deps.db.batch(statements);
  } catch (error) {
    if (key !== undefined && hash !== undefined && isIdempotencyRace(error)) {
      // A concurrent request with this key committed first: answer as its replay.
      const earlier = await replayOrConflict(c, records, route, key, hash, now);
      if (earlier) return earlier;
    }
    const known = domainConflict(error);
    if (known) return errorResponse(c, known.status, known.error, known.issues);
    throw error;
  }
  deps.kickAfterCommit(c, write.messageKeys);
  return c.json(write.response.body as object, write.response.status as ContentfulStatusCode);
}

async function replayOrConflict(
  c: Context<AppEnv>,
  records: IdempotencyRecords,
  route: string,
  key: string,
  hash: string,
  now: Date,
): Promise<Response | undefined> {
  const earlier = await records.lookup(route, key, hash, now);
  if (earlier.kind === 'mismatch') {
    return errorResponse(c, 422, 'Idempotency-Key was already used with a different request', [
      { path: ['Idempotency-Key'], message: 'reuse a key only to retry the identical request' },
    ]);
  }
  if (earlier.kind === 'replay') {
    c.header('Idempotent-Replayed', 'true');
    return c.json(earlier.response.body as object, earlier.response.status as ContentfulStatusCode);
  }
  return undefined;
}

/** The reference service's constraint violations that are the caller's doing, as 4xx answers. */
function domainConflict(
  error: unknown,
): { status: ContentfulStatusCode; error: string; issues: Issue[] } | undefined {
  if (violates(error, UNIQUE_VIOLATION, 'users_email_unique')) {
    return {
      status: 409,
      error: 'email already registered',
      issues: [{ path: ['email'], message: 'a user with this email exists' }],
    };
  }
  if (violates(error, FOREIGN_KEY_VIOLATION)) {
    // The user was deleted between the route's read and its write.
    return {
      status: 422,
      error: 'unknown user',
      issues: [{ path: ['userId'], message: 'no such user' }],
    };
  }
  return undefined;
}
