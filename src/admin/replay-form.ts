/**
 * The replay selection a dashboard form carries. The first press comes from a list (its filter,
 * or its ticked rows) or a message's page, and is read into a {@link ReplaySelection}; the
 * confirmation page then carries that selection whole, as JSON in one hidden field, so the
 * second press replays exactly what was counted. Every refusal names the field and is read
 * before anything touches the store.
 */
import { isValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import {
  checkReplaySelection,
  REPLAY_STATES,
  type ReplaySelection,
  type ReplayState,
} from '../core/replay-selection.js';
import { DASHBOARD_PAGE_SIZE } from './dashboard-list-routes.js';
import { type FormBody, formText, formTexts } from './form-fields.js';
import { readListFilter } from './list-filter.js';

export type ReadSelection =
  | { ok: true; selection: ReplaySelection }
  | { ok: false; field: string; problem: string };

/**
 * The first press: `scope=matching` takes the list's filter (state, kind, error, ordering key,
 * from, until) as the selection; `scope=selected` the ticked `id`s of the list's state (at most a
 * page of them). Only dead (redrive) and delivered (resend) lists replay.
 */
export function readFirstPress(
  form: FormBody,
  kinds: readonly string[] | undefined,
): ReadSelection {
  const read = readListFilter((name) => formText(form, name), kinds);
  if (!read.ok) return { ok: false, field: read.field, problem: read.problem };
  if (formText(form, 'state') === undefined) return refuse('state', 'is missing');
  const state = read.filter.state as ReplayState;
  if (!REPLAY_STATES.includes(state)) {
    return refuse('state', `must be ${REPLAY_STATES.join(' or ')}: only those can be replayed`);
  }
  const scope = formText(form, 'scope');
  if (scope === 'selected') {
    const ids = formTexts(form, 'id');
    if (ids.length === 0) return refuse('id', 'tick at least one message');
    if (ids.length > DASHBOARD_PAGE_SIZE) {
      return refuse('id', `at most ${DASHBOARD_PAGE_SIZE} messages at once`);
    }
    if (!ids.every(isMessageId)) return refuse('id', 'each must be a message id');
    return { ok: true, selection: { state, ids: [...new Set(ids)] } };
  }
  if (scope !== 'matching') return refuse('scope', 'must be matching or selected');
  const { filter } = read;
  const selection: ReplaySelection = { state };
  if (filter.kind) selection.kinds = [filter.kind];
  if (filter.error) selection.errorContains = filter.error;
  if (filter.orderingKey) selection.orderingKeys = [filter.orderingKey];
  if (filter.from) selection.since = filter.from;
  if (filter.until) selection.until = filter.until;
  return { ok: true, selection };
}

/** The second press (and "continue"): the selection as the confirmation page wrote it. */
export function readCarriedSelection(form: FormBody): ReadSelection {
  const text = formText(form, 'selection');
  if (text === undefined) return refuse('selection', 'is missing');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse('selection', 'is not JSON');
  }
  try {
    return { ok: true, selection: checkReplaySelection(parsed) };
  } catch (error) {
    if (!isValidationError(error)) throw error;
    return refuse(error.field, error.message.slice(error.field.length + 2));
  }
}

/** A whole number of at least 1 from a form field, or null. */
export function readPositiveCount(form: FormBody, name: string): number | null {
  const text = formText(form, name) ?? '';
  return /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : null;
}

function refuse(field: string, problem: string): ReadSelection {
  return { ok: false, field, problem };
}
