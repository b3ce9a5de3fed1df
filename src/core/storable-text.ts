/**
 * Which strings PostgreSQL can store. JavaScript strings are UTF-16 and may hold things a UTF-8
 * database cannot: NUL (refused by `text` and by `jsonb`) and a lone surrogate (a half of a
 * surrogate pair, with no valid UTF-8 form; `jsonb` refuses its `\ud800` escape). Left to the
 * database, either fails the whole statement with a raw driver error; checked here, it is a
 * {@link ValidationError} naming the field, before anything is written.
 *
 * The core checks every string of a message (payload keys and values included). Apps use the
 * same rule for their own columns, so a name or SKU that the outbox would refuse is refused at
 * their edge too. Text the drain writes and nobody can correct first (a receiver's answer, a
 * provider's or a sender's error) is not refused but repaired: {@link storableText}.
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

/** Stands for what cannot be stored: a NUL, or half of a surrogate pair. */
const REPLACEMENT_CHARACTER = '\uFFFD';

/** Ends text that was cut, so an operator knows there was more. */
const CUT_MARK = '…';

/**
 * Whatever {@link storableText} would change: NUL and the other C0 controls but tab and newline,
 * DEL, the C1 controls, and every surrogate (a pair is kept, but needs a closer look).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const NOT_PLAIN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ud800-\udfff]/;

/**
 * `text` made storable by PostgreSQL and readable by an operator, in at most `maxLength` UTF-16
 * code units (`maxLength` >= 1):
 *
 * - NUL and lone surrogates (what PostgreSQL refuses) become U+FFFD;
 * - every other control character but `\n` and `\t` (C0, DEL, C1) is written as an escape such
 *   as `\u001b`, so a terminal or page showing it shows what was sent instead of obeying it;
 * - past `maxLength` the text is cut between two characters (never inside a surrogate pair or
 *   an escape) and ends in `…`, within `maxLength`.
 *
 * It reads no more of `text` than it keeps, so a megabyte costs what `maxLength` characters
 * cost. Applying it twice changes nothing more. Surrogate pairs (emoji) are kept.
 *
 * @example
 * storableText('err\u0000or', 100); // 'err\uFFFDor'
 * storableText('\u001b[31mred', 100); // '\\u001b[31mred' (a backslash, then u001b)
 * storableText('a🎉b', 3); // 'a…': a cut after two code units would keep half the emoji
 */
export function storableText(text: string, maxLength: number): string {
  if (text.length <= maxLength && !NOT_PLAIN.test(text)) return text;
  let kept = '';
  /** The length of `kept` at the last character boundary that leaves room for the cut mark. */
  let cutAt = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    let character: string;
    if (code >= 0xd800 && code <= 0xdbff && isLowSurrogate(text.charCodeAt(index + 1))) {
      character = text.slice(index, index + 2);
      index++;
    } else if (code === 0 || (code >= 0xd800 && code <= 0xdfff)) {
      character = REPLACEMENT_CHARACTER;
    } else if (isControl(code)) {
      character = `\\u${code.toString(16).padStart(4, '0')}`;
    } else {
      character = text[index]!;
    }
    if (kept.length + character.length > maxLength) return kept.slice(0, cutAt) + CUT_MARK;
    kept += character;
    if (kept.length < maxLength) cutAt = kept.length;
  }
  return kept;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** C0 but tab and newline, DEL, and C1. */
function isControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f);
}
