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
import type { Hono, MiddlewareHandler } from 'hono';
import { ValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import {
  DEFAULT_REPLAY_BATCH_SIZE,
  DEFAULT_REPLAY_RATE_PER_SECOND,
  MAX_REPLAY_BATCH_SIZE,
  MAX_REPLAY_RATE_PER_SECOND,
  replayMessages,
} from '../core/replay.js';
import { checkReplaySelection } from '../core/replay-selection.js';
import { DEFAULT_REPLAY_AUDIT_LIMIT, MAX_REPLAY_AUDIT_LIMIT } from '../store/replay-store.js';
import type { AdminAuth, AdminEnv, ResolvedAdmin } from './admin-options.js';
import { answerOrBadRequest, bodyOf, wholeIn } from './api-requests.js';

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
    answerOrBadRequest(c, async () => {
      const body = await bodyOf(c, ['selection', 'by'], 'a selection');
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
    answerOrBadRequest(c, async () => {
      const body = await bodyOf(c, [...BODY_FIELDS], 'a selection');
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
    answerOrBadRequest(c, async () => {
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
