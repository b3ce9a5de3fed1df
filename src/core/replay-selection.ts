/**
 * What a replay selects, and the one check every entry point runs on it (the CLI's flags and the
 * admin API's JSON both end here), so a bad selection is a `ValidationError` naming the field
 * before anything is read or written.
 */
import { ValidationError } from './errors.js';
import { isMessageId } from './message-id.js';

/** The states a replay takes messages from: dead ones are redriven, delivered ones resent. */
export type ReplayState = 'dead' | 'delivered';

export const REPLAY_STATES: readonly ReplayState[] = ['dead', 'delivered'];

/**
 * Which messages a replay takes. Every field given narrows it (they are ANDed); only `state` is
 * required. Lists match any of their values.
 */
export interface ReplaySelection {
  state: ReplayState;
  kinds?: readonly string[];
  /**
   * Where the message goes. A webhook (a payload with a string `url`): its URL without the
   * scheme starts with this (`hooks.example.com/orders`; a scheme given here is dropped). An
   * email (a payload with `to`, `cc` or `bcc`): one of its recipients contains this
   * (`@example.com`). Compared without regard to case.
   */
  destination?: string;
  orderingKeys?: readonly string[];
  /** The last error contains this text, without regard to case; `%` and `_` are plain text. */
  errorContains?: string;
  /** `dead_at` (dead) or `delivered_at` (delivered) at or after this. */
  since?: Date;
  /** ... and before this. */
  until?: Date;
  ids?: readonly string[];
  /** Only ids above this one: where a stopped replay left off (its `lastId`). */
  afterId?: string;
}

/** Values per list field at most: an explicit list is for a handful, a filter for the rest. */
export const MAX_SELECTION_VALUES = 1000;

/** Text fields at most this long: kinds and ordering keys are shorter, URLs and errors too. */
const MAX_SELECTION_TEXT = 2048;

const KIND_FORMAT = /^[a-z][a-z0-9_.:-]{0,62}$/;

const FIELDS: ReadonlySet<string> = new Set([
  'state',
  'kinds',
  'destination',
  'orderingKeys',
  'errorContains',
  'since',
  'until',
  'ids',
  'afterId',
]);

/**
 * A checked selection from untrusted input (parsed JSON, or the CLI's flags gathered into one
 * object): dates as ISO strings or Dates, lists as arrays of strings. Unknown fields are refused,
 * so a misspelt filter never widens a replay to everything.
 *
 * @example
 * checkReplaySelection({ state: 'dead', kinds: ['webhook'], errorContains: 'HTTP 503' });
 */
export function checkReplaySelection(input: unknown, field = 'selection'): ReplaySelection {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationError(field, 'expected an object with at least a state');
  }
  const given = input as Record<string, unknown>;
  for (const name of Object.keys(given)) {
    if (!FIELDS.has(name)) {
      throw new ValidationError(
        `${field}.${name}`,
        `unknown field; expected ${[...FIELDS].join(', ')}`,
      );
    }
  }
  const state = given.state;
  if (!REPLAY_STATES.includes(state as ReplayState)) {
    throw new ValidationError(`${field}.state`, `expected one of ${REPLAY_STATES.join(', ')}`);
  }
  const selection: ReplaySelection = { state: state as ReplayState };
  const kinds = textList(given.kinds, `${field}.kinds`, (kind) => KIND_FORMAT.test(kind));
  if (kinds) selection.kinds = kinds;
  const orderingKeys = textList(
    given.orderingKeys,
    `${field}.orderingKeys`,
    (key) => key.length <= 200,
  );
  if (orderingKeys) selection.orderingKeys = orderingKeys;
  const ids = textList(given.ids, `${field}.ids`, isMessageId);
  if (ids) selection.ids = ids;
  const destination = text(given.destination, `${field}.destination`);
  if (destination !== undefined) {
    const bare = destination.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
    if (bare === '') {
      throw new ValidationError(`${field}.destination`, 'expected a host and path, or a recipient');
    }
    selection.destination = bare;
  }
  const errorContains = text(given.errorContains, `${field}.errorContains`);
  if (errorContains !== undefined) selection.errorContains = errorContains;
  const since = time(given.since, `${field}.since`);
  if (since) selection.since = since;
  const until = time(given.until, `${field}.until`);
  if (until) selection.until = until;
  if (since && until && since.getTime() >= until.getTime()) {
    throw new ValidationError(`${field}.until`, 'must be later than since');
  }
  if (given.afterId !== undefined) {
    if (typeof given.afterId !== 'string' || !isMessageId(given.afterId)) {
      throw new ValidationError(`${field}.afterId`, 'expected a message id');
    }
    selection.afterId = given.afterId;
  }
  return selection;
}

/** The selection as JSON for the audit row and the API: dates as ISO text, absent fields left out. */
export function selectionJson(selection: ReplaySelection): Record<string, unknown> {
  return JSON.parse(JSON.stringify(selection)) as Record<string, unknown>;
}

function textList(
  value: unknown,
  field: string,
  valid: (text: string) => boolean,
): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SELECTION_VALUES) {
    throw new ValidationError(field, `expected a list of 1 to ${MAX_SELECTION_VALUES} values`);
  }
  for (const [index, each] of value.entries()) {
    if (typeof each !== 'string' || each === '' || !valid(each)) {
      throw new ValidationError(
        `${field}[${index}]`,
        `is not a valid value: ${JSON.stringify(each)}`,
      );
    }
  }
  return [...new Set(value as string[])];
}

function text(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_SELECTION_TEXT) {
    throw new ValidationError(field, `expected text of 1 to ${MAX_SELECTION_TEXT} characters`);
  }
  return value;
}

function time(value: unknown, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const parsed =
    value instanceof Date
      ? new Date(value.getTime())
      : typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)
        ? new Date(value)
        : new Date(Number.NaN);
  if (Number.isNaN(parsed.getTime())) {
    throw new ValidationError(field, 'expected an ISO 8601 time, such as 2026-12-01T09:00:00Z');
  }
  return parsed;
}
