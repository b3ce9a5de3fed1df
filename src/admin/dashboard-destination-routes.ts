/**
 * Destination health on the dashboard, script-free, under the mount path:
 *
 * - `GET /dashboard/destinations?after=`: each destination with a health record, paused ones
 *   first, {@link DASHBOARD_DESTINATIONS_PAGE_SIZE} a page.
 * - `POST /dashboard/destinations/pause` (`destination`, `for`: `10m`, `1h` or
 *   `until-resumed`): pauses it (see destination-routes' `pauseDestination`), 303 back.
 * - `POST /dashboard/destinations/resume` (`destination`): resumes it, 303 back; one with no
 *   record changes nothing, and the page says so.
 *
 * A refused field is a 400 naming it, before anything is read or written.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { DestinationRecord } from '../core/destination-health.js';
import { isValidationError } from '../core/errors.js';
import { MAX_DESTINATION_NAME_LENGTH } from '../core/message.js';
import { checkedDestination, timedPauseEnd } from '../store/destination-store.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { type DestinationFlashCode, destinationFlashFromQuery } from './dashboard-flash.js';
import { frameOf, notice, pathsOf, refuse, render } from './dashboard-replies.js';
import { DASHBOARD_PAUSE_CHOICES, destinationsPage } from './destination-pages.js';
import { pauseDestination, resumeDestination } from './destination-routes.js';
import { type FormBody, formText } from './form-fields.js';

/** Destinations per page: the store's default list, more than most deployments have. */
export const DASHBOARD_DESTINATIONS_PAGE_SIZE = 100;

/** Registers the destinations page and its buttons on `app`, each behind `signedIn`. */
export function registerDestinationPages(
  app: Hono<AdminEnv>,
  admin: ResolvedAdmin,
  signedIn: MiddlewareHandler<AdminEnv>,
): void {
  const { store, clock } = admin;

  app.get('/dashboard/destinations', signedIn, async (c) => {
    const after = c.req.query('after') || undefined;
    const now = clock.now();
    let destinations: DestinationRecord[];
    try {
      destinations = await store
        .destinations()
        .list(now, { limit: DASHBOARD_DESTINATIONS_PAGE_SIZE, after });
    } catch (error) {
      if (!isValidationError(error)) throw error;
      return notice(c, 400, 'Bad request', 'Field after: must be a destination name.');
    }
    const last = destinations.at(-1);
    const paths = pathsOf(c);
    return render(
      c,
      200,
      destinationsPage(await frameOf(admin, c, now), {
        destinations,
        nextHref:
          last && destinations.length === DASHBOARD_DESTINATIONS_PAGE_SIZE
            ? `${paths.destinations}?${new URLSearchParams({ after: last.destination })}`
            : null,
        paged: after !== undefined,
        flash: destinationFlashFromQuery(c, destinations),
      }),
    );
  });

  app.post('/dashboard/destinations/pause', signedIn, async (c) => {
    const form = (await c.req.parseBody({ all: true })) as FormBody;
    const destination = formDestination(form);
    if (destination === null) return refuseDestination(c);
    const choice = DASHBOARD_PAUSE_CHOICES.find((each) => each.value === formText(form, 'for'));
    if (!choice) {
      const values = DASHBOARD_PAUSE_CHOICES.map((each) => each.value).join(', ');
      return refuse(c, 'for', `must be one of ${values}`);
    }
    const now = clock.now();
    const until = choice.forMs === undefined ? undefined : timedPauseEnd(now, choice.forMs);
    const record = await pauseDestination(admin, c, destination, now, until);
    return backToDestinations(c, 'paused', { destination, count: String(record.waiting) });
  });

  app.post('/dashboard/destinations/resume', signedIn, async (c) => {
    const form = (await c.req.parseBody({ all: true })) as FormBody;
    const destination = formDestination(form);
    if (destination === null) return refuseDestination(c);
    const record = await resumeDestination(admin, c, destination);
    if (record === null) return backToDestinations(c, 'missing', {});
    return backToDestinations(c, 'resumed', { destination, count: String(record.waiting) });
  });
}

/** The form's `destination` when it can be a destination's name, else null. */
function formDestination(form: FormBody): string | null {
  try {
    return checkedDestination(formText(form, 'destination'), 'destination');
  } catch (error) {
    if (!isValidationError(error)) throw error;
    return null;
  }
}

function refuseDestination(c: Context<AdminEnv>) {
  return refuse(
    c,
    'destination',
    `must be a destination name of 1 to ${MAX_DESTINATION_NAME_LENGTH} characters`,
  );
}

function backToDestinations(
  c: Context<AdminEnv>,
  done: DestinationFlashCode,
  params: Record<string, string>,
): Response {
  const query = new URLSearchParams({ done, ...params });
  return c.redirect(`${pathsOf(c).destinations}?${query}`, 303);
}
