/**
 * The admin API's replay routes, paths relative to the mount path, every one behind the admin
 * guard (401 without a credential, nothing read or written):
 *
 * - `POST /replays/dry-run` `{ selection, by? }`: the exact count and a sample; audited when
 *   anything matches.
 * - `POST /replays` `{ selection, by?, ratePerSecond?, batchSize?, budgetMs? }`: a replay,
 *   bounded by its budget. One that runs out is `stopped`; its `lastId` goes in the next
 *   request's `selection.afterId` to go on.
 * - `GET /replays?limit=&before=`: the audit rows, newest first.
 *
 * A `selection` is a {@link ReplaySelection} as JSON (times as ISO text). Bad input is a 400
 * naming the field; a selection that matches nothing writes nothing (`auditId: null`).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { isValidationError, ValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import {
  DEFAULT_REPLAY_BATCH_SIZE,
  DEFAULT_REPLAY_RATE_PER_SECOND,
  MAX_REPLAY_BATCH_SIZE,
  MAX_REPLAY_RATE_PER_SECOND,
  replayMessages,
} from '../core/replay.js';
import { checkReplaySelection } from '../core/replay-selection.js';
import { errorResponse, pathOfField } from '../http/json-errors.js';
import { DEFAULT_REPLAY_AUDIT_LIMIT, MAX_REPLAY_AUDIT_LIMIT } from '../store/replay-store.js';
import type { AdminAuth, AdminEnv, ResolvedAdmin } from './admin-options.js';

/** `POST /replays`: ten seconds unless asked, about 10,000 messages at the default rate. */
export const ADMIN_REPLAY_DEFAULT_BUDGET_MS = 10_000;
/** A minute: past that, a serverless request is likely cut off before the replay reports. */
export const ADMIN_REPLAY_MAX_BUDGET_MS = 60_000;

const BODY_FIELDS = new Set(['selection', 'by', 'ratePerSecond', 'batchSize', 'budgetMs']);

export function registerReplayRoutes(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  guard: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;

  app.post('/replays/dry-run', guard, async (c) =>
    answerOrBadBody(c, async () => {
      const body = await bodyOf(c, ['selection', 'by']);
      const report = await replayMessages({
        store: store.replays(),
        selection: checkReplaySelection(body.selection),
        requestedBy: requester(c.get('adminAuth'), body.by),
        dryRun: true,
        clock,
      });
      return c.json({ replay: report });
    }),
  );

  app.post('/replays', guard, async (c) =>
    answerOrBadBody(c, async () => {
      const body = await bodyOf(c, [...BODY_FIELDS]);
      const selection = checkReplaySelection(body.selection);
      const ratePerSecond = wholeIn(
        body.ratePerSecond,
        'ratePerSecond',
        1,
        MAX_REPLAY_RATE_PER_SECOND,
      );
      const batchSize = wholeIn(body.batchSize, 'batchSize', 1, MAX_REPLAY_BATCH_SIZE);
      const budgetMs = wholeIn(body.budgetMs, 'budgetMs', 100, ADMIN_REPLAY_MAX_BUDGET_MS);
      const report = await replayMessages({
        store: store.replays(),
        selection,
        requestedBy: requester(c.get('adminAuth'), body.by),
        ratePerSecond: ratePerSecond ?? DEFAULT_REPLAY_RATE_PER_SECOND,
        batchSize: batchSize ?? DEFAULT_REPLAY_BATCH_SIZE,
        budgetMs: budgetMs ?? ADMIN_REPLAY_DEFAULT_BUDGET_MS,
        signal: c.req.raw.signal,
        clock,
      });
      return c.json({ replay: report });
    }),
  );

  app.get('/replays', guard, async (c) =>
    answerOrBadBody(c, async () => {
      const limitText = c.req.query('limit');
      const before = c.req.query('before');
      const limit =
        limitText === undefined
          ? undefined
          : wholeIn(Number(limitText), 'limit', 1, MAX_REPLAY_AUDIT_LIMIT);
      if (before !== undefined && !isMessageId(before)) {
        throw new ValidationError('before', 'expected an audit row id');
      }
      const replays = await store.replays().listReplayAudits({ limit, beforeId: before });
      const last = replays.at(-1);
      return c.json({
        replays,
        nextBefore:
          last && replays.length === (limit ?? DEFAULT_REPLAY_AUDIT_LIMIT) ? last.id : null,
      });
    }),
  );
}

/**
 * Who the audit row names. The admin has one shared token, so the credential says how the
 * request came (API bearer token or a dashboard session, by the start of its id); `by`, when
 * given, says who the caller says it is, beside that.
 */
export function requester(auth: AdminAuth | undefined, by: unknown): string {
  const how =
    auth?.method === 'cookie'
      ? `admin dashboard (session ${auth.session.id.slice(0, 8)})`
      : 'admin api (bearer token)';
  if (by === undefined) return how;
  if (typeof by !== 'string' || by.trim() === '' || by.length > 100) {
    throw new ValidationError('by', 'expected a name of 1 to 100 characters');
  }
  return `${by} via ${how}`;
}

/** The JSON body as an object of known fields; anything else is a ValidationError. */
async function bodyOf(c: Context, fields: string[]): Promise<Record<string, unknown>> {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'expected a JSON object with a selection');
  }
  for (const name of Object.keys(body)) {
    if (!fields.includes(name)) {
      throw new ValidationError(name, `unknown field; expected ${fields.join(', ')}`);
    }
  }
  return body as Record<string, unknown>;
}

function wholeIn(value: unknown, field: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    throw new ValidationError(field, `expected an integer from ${min} to ${max}`);
  }
  return value as number;
}

/** Runs a route; a `ValidationError` from its input becomes a 400 naming the field. */
async function answerOrBadBody(c: Context, answer: () => Promise<Response>): Promise<Response> {
  try {
    return await answer();
  } catch (error) {
    if (isValidationError(error)) {
      const message = error.message.slice(error.field.length + 2);
      return errorResponse(c, 400, 'invalid request', [
        { path: pathOfField(error.field), message },
      ]);
    }
    throw error;
  }
}
