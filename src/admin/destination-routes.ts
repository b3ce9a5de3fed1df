/**
 * The admin API's destination health routes (docs/destinations.md), paths relative to the
 * mount path, every one behind the admin guard (401 without a credential, nothing read or
 * written):
 *
 * - `GET /destinations?limit=&after=`: each destination with a health record, paused ones
 *   first, then by name; `nextAfter` (the last name, when the page is full) goes in `after`.
 * - `POST /destinations/pause` `{ destination, forMs? }`: no message of it is claimed until
 *   the pause ends (without `forMs`: until resumed). A name with no record gets one.
 * - `POST /destinations/resume` `{ destination }`: ends its pause, whatever made it, and
 *   clears its failures; 404 when it has no record (it never failed, was never paused).
 *
 * Bad input is a 400 naming the field, and nothing is written. Each pause and resume is
 * logged (info) with who asked, as the credential tells it.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { DestinationRecord } from '../core/destination-health.js';
import { ValidationError } from '../core/errors.js';
import { errorResponse } from '../http/json-errors.js';
import {
  checkedDestination,
  DEFAULT_DESTINATION_LIMIT,
  MAX_DESTINATION_LIMIT,
  timedPauseEnd,
} from '../store/destination-store.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { answerOrBadRequest, bodyOf, wholeIn } from './api-requests.js';
import { requester } from './replay-routes.js';

export function registerDestinationRoutes(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  guard: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;

  app.get('/destinations', guard, async (c) =>
    answerOrBadRequest(c, async () => {
      const limitText = c.req.query('limit');
      const limit =
        limitText === undefined
          ? DEFAULT_DESTINATION_LIMIT
          : (wholeIn(Number(limitText), 'limit', 1, MAX_DESTINATION_LIMIT) as number);
      const after = c.req.query('after') || undefined;
      const destinations = await store.destinations().list(clock.now(), { limit, after });
      const nextAfter =
        destinations.length === limit ? (destinations.at(-1)?.destination ?? null) : null;
      return c.json({ destinations, nextAfter });
    }),
  );

  app.post('/destinations/pause', guard, async (c) =>
    answerOrBadRequest(c, async () => {
      const body = await bodyOf(c, ['destination', 'forMs'], 'a destination');
      const destination = requiredDestination(body.destination);
      const now = clock.now();
      const until = body.forMs === undefined ? undefined : timedPauseEnd(now, body.forMs);
      const record = await pauseDestination(admin, c, destination, now, until);
      return c.json({ destination: record });
    }),
  );

  app.post('/destinations/resume', guard, async (c) =>
    answerOrBadRequest(c, async () => {
      const body = await bodyOf(c, ['destination'], 'a destination');
      const destination = requiredDestination(body.destination);
      const record = await resumeDestination(admin, c, destination);
      if (record === null) {
        return errorResponse(c, 404, 'no such destination: it never failed and was never paused');
      }
      return c.json({ destination: record });
    }),
  );
}

/**
 * An operator's pause, from the API or the dashboard: the store's pause, logged with who asked
 * (the credential's kind and, for a session, the start of its id).
 */
export async function pauseDestination(
  admin: ResolvedAdmin,
  c: Context<AdminEnv>,
  destination: string,
  now: Date,
  until: Date | undefined,
): Promise<DestinationRecord> {
  const record = await admin.store.destinations().pause(destination, now, until);
  admin.logger.info('destination paused by an operator', {
    destination,
    pausedUntil: record.pausedUntil?.toISOString(),
    via: requester(c.get('adminAuth'), undefined),
  });
  return record;
}

/** An operator's resume, logged as {@link pauseDestination} is; null when it has no record. */
export async function resumeDestination(
  admin: ResolvedAdmin,
  c: Context<AdminEnv>,
  destination: string,
): Promise<DestinationRecord | null> {
  const record = await admin.store.destinations().resume(destination, admin.clock.now());
  if (record !== null) {
    admin.logger.info('destination resumed by an operator', {
      destination,
      via: requester(c.get('adminAuth'), undefined),
    });
  }
  return record;
}

function requiredDestination(value: unknown): string {
  if (value === undefined) {
    throw new ValidationError('destination', 'is required: a name, as GET /destinations lists it');
  }
  return checkedDestination(value, 'destination');
}
