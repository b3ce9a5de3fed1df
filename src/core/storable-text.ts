/**
 * Which strings PostgreSQL can store. JavaScript strings are UTF-16 and may hold things a UTF-8
 * database cannot: NUL (refused by `text` and by `jsonb`) and a lone surrogate (a half of a
 * surrogate pair, with no valid UTF-8 form; `jsonb` refuses its `\ud800` escape). Left to the
 * database, either fails the whole statement with a raw driver error; checked here, it is a
 * {@link ValidationError} naming the field, before anything is written.
 *
 * The core checks every string of a message (payload keys and values included). Apps use the
 * same rule for their own columns, so a name or SKU that the outbox would refuse is refused at
 * their edge too.
 */
import { ValidationError } from './errors.js';

/**
 * Why PostgreSQL cannot store `text`, or `undefined` when it can. Surrogate PAIRS (emoji and
 * other characters beyond U+FFFF) are fine; only an unpaired half is refused.
 *
 * @example
 * storableTextProblem('café 🎉'); // undefined
 * storableTextProblem('a\u0000b'); // 'contains NUL (character 1), which PostgreSQL cannot store'
 */
export function storableTextProblem(text: string): string | undefined {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0) return `contains NUL (character ${index}), which PostgreSQL cannot store`;
    if (code < 0xd800 || code > 0xdfff) continue;
    const next = text.charCodeAt(index + 1);
    if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      index++; // a high surrogate followed by a low one: one astral character
      continue;
    }
    const hex = code.toString(16).toUpperCase();
    return `contains a lone surrogate (U+${hex}, character ${index}), which PostgreSQL cannot store`;
  }
  return undefined;
}

/**
 * Throws {@link ValidationError} naming `field` when PostgreSQL cannot store `text` (see
 * {@link storableTextProblem}).
 *
 * @example
 * async function renameUser(db: SqlExecutor, id: string, name: string) {
 *   checkStorableText(name, 'name'); // before the UPDATE: a ValidationError naming the field
 *   await db.query('UPDATE users SET name = $1 WHERE id = $2', [name, id]);
 * }
 */
export function checkStorableText(text: string, field: string): void {
  const problem = storableTextProblem(text);
  if (problem !== undefined) throw new ValidationError(field, problem);
}
