/**
 * The dashboard list's filter as the operator sets it: read from a list page's query string or
 * from an action form's hidden fields (the same names), checked field by field, and written
 * back into links and forms. A refusal names the field, so the page can say which one is wrong;
 * nothing is read from the store or written to it on a refused filter.
 */
import { isValidKindName } from '../core/message.js';
import { MESSAGE_STATES, type MessageState } from '../core/outbox-store.js';
import type { MessageFilter } from '../store/postgres-store.js';

/**
 * Characters of error text or ordering key a filter may hold. Enough for any message fragment
 * one searches by; and small enough that a selection form (50 ids, the filter carried along,
 * each character up to 9 bytes once form-encoded) stays under the 4 KiB form body limit.
 */
export const FILTER_TEXT_MAX_CHARS = 100;

/** The filter's fields as text, as the form shows them: `''` where unset. */
export interface ListFilterFields {
  state: MessageState;
  kind: string;
  error: string;
  orderingKey: string;
  /** UTC, as a `datetime-local` input writes it: `2026-12-02T01:05`. */
  from: string;
  until: string;
}

export type ListFilterField = keyof ListFilterFields;

export type ReadFilter =
  | { ok: true; filter: MessageFilter; fields: ListFilterFields }
  | { ok: false; field: ListFilterField; problem: string; fields: ListFilterFields };

/** A `datetime-local` value: minutes, or seconds too. */
const LOCAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/;

/**
 * Reads a filter from `value(name)` (a query string's or a form's fields). `kinds`: the kinds the
 * dashboard offers; a kind outside them is refused. Without `kinds`, any well-formed kind name.
 */
export function readListFilter(
  value: (name: ListFilterField) => string | undefined,
  kinds: readonly string[] | undefined,
): ReadFilter {
  const text = (name: ListFilterField) => (value(name) ?? '').trim();
  const fields: ListFilterFields = {
    state: 'pending',
    kind: text('kind'),
    error: text('error'),
    orderingKey: text('orderingKey'),
    from: text('from'),
    until: text('until'),
  };
  const refuse = (field: ListFilterField, problem: string): ReadFilter => ({
    ok: false,
    field,
    problem,
    fields,
  });
  const state = text('state') || 'pending';
  if (!MESSAGE_STATES.includes(state as MessageState)) {
    return refuse('state', `must be one of ${MESSAGE_STATES.join(', ')}`);
  }
  fields.state = state as MessageState;
  if (fields.kind && kinds && !kinds.includes(fields.kind)) {
    return refuse('kind', `must be one of the configured kinds: ${kinds.join(', ')}`);
  }
  if (fields.kind && !isValidKindName(fields.kind)) {
    return refuse('kind', 'must be a kind name: lower-case letters, digits and . _ : -');
  }
  for (const field of ['error', 'orderingKey'] as const) {
    if (fields[field].length > FILTER_TEXT_MAX_CHARS) {
      return refuse(field, `must be at most ${FILTER_TEXT_MAX_CHARS} characters`);
    }
  }
  const from = readTime(fields.from);
  if (from === null) return refuse('from', 'must be a UTC time like 2026-12-02T01:05');
  const until = readTime(fields.until);
  if (until === null) return refuse('until', 'must be a UTC time like 2026-12-02T01:05');
  if (from && until && until <= from) return refuse('until', 'must be later than from');
  return {
    ok: true,
    fields,
    filter: {
      state: fields.state,
      kind: fields.kind || undefined,
      error: fields.error || undefined,
      orderingKey: fields.orderingKey || undefined,
      from,
      until,
    },
  };
}

/** Undefined for an empty field, null for one that is not a real UTC time. */
function readTime(text: string): Date | undefined | null {
  if (text === '') return undefined;
  if (!LOCAL_TIME.test(text)) return null;
  const withSeconds = text.length === 16 ? `${text}:00` : text;
  const at = new Date(`${withSeconds}.000Z`);
  // Round trip, so 2026-02-31 is refused rather than read as a day in March.
  if (Number.isNaN(at.getTime()) || at.toISOString().slice(0, 19) !== withSeconds) return null;
  return at;
}

/** The filter as query parameters, unset fields left out: for links and redirects. */
export function filterQuery(fields: ListFilterFields): URLSearchParams {
  const query = new URLSearchParams({ state: fields.state });
  for (const name of ['kind', 'error', 'orderingKey', 'from', 'until'] as const) {
    if (fields[name]) query.set(name, fields[name]);
  }
  return query;
}
