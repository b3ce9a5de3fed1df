/**
 * A JavaScript array as PostgreSQL's array literal (`{"a","b",NULL}`), for drivers that cannot be
 * trusted to send an array parameter as one: the statement's own cast (`$1::uuid[]`) then reads
 * it, whatever the driver thinks the value's type is.
 */

/**
 * Every element is quoted, so the element type's own input function reads it (`"7"` as an
 * integer, `"2026-01-01T00:00:00.000Z"` as a timestamptz); `null` and `undefined` become NULL, a
 * `Date` its ISO time, an inner array a nested literal.
 *
 * @example
 * postgresArrayLiteral(['a', null, 'say "hi"']); // '{"a",NULL,"say \\"hi\\""}'
 */
export function postgresArrayLiteral(values: readonly unknown[]): string {
  const elements = values.map((value) => {
    if (value === null || value === undefined) return 'NULL';
    if (Array.isArray(value)) return postgresArrayLiteral(value);
    const text = value instanceof Date ? value.toISOString() : String(value);
    return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  });
  return `{${elements.join(',')}}`;
}
