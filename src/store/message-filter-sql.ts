/**
 * The filters operators' lists, bulk actions and replay share, as SQL fragments: one place for
 * what "matches the filter" means, so a replay takes exactly what a list filtered alike shows.
 */

/** Where each filter's parameter sits in a statement. */
export interface FilterParameters {
  kind: string;
  error: string;
  orderingKey: string;
  from: string;
  until: string;
}

/** The lists' filter parameters: after kind ($1) and the cursor and limit ($2-$4). */
export const LIST_FILTERS: FilterParameters = {
  kind: '$1',
  error: '$5',
  orderingKey: '$6',
  from: '$7',
  until: '$8',
};

/** The bulk actions' filter parameters: after the state ($1) and the limit ($2). */
export const ACTION_FILTERS: FilterParameters = {
  kind: '$3',
  error: '$4',
  orderingKey: '$5',
  from: '$6',
  until: '$7',
};

/**
 * Whether the last error of alias `a` holds the text `param`, in any case: the one test lists,
 * bulk actions and replay share, so a replay takes exactly what a list filtered alike shows.
 * strpos, not LIKE, so a `%` or `_` an operator types is matched as itself.
 */
export function lastErrorContains(a: string, param: string): string {
  return `strpos(lower(${a}.last_error), lower(${param})) > 0`;
}

/**
 * The filters every list and every "all that match" action shares, on rows of alias `a` and
 * the time column `time` the list orders by: the kind, a substring of the last error (in any
 * case: {@link lastErrorContains}), the ordering key, from (inclusive) and until (exclusive).
 * Each is null for none.
 */
export function filterClauses(a: string, time: string, p: FilterParameters = LIST_FILTERS): string {
  return `AND (${p.kind}::text IS NULL OR ${a}.kind = ${p.kind}::text)
        AND (${p.error}::text IS NULL OR ${lastErrorContains(a, `${p.error}::text`)})
        AND (${p.orderingKey}::text IS NULL OR ${a}.ordering_key = ${p.orderingKey}::text)
        AND (${p.from}::timestamptz IS NULL OR ${time} >= ${p.from}::timestamptz)
        AND (${p.until}::timestamptz IS NULL OR ${time} < ${p.until}::timestamptz)`;
}
