/**
 * Field checks shared by the built-in payload validators. Each throws `ValidationError` naming
 * the field path, so an HTTP edge can answer 400 with the exact field.
 */
import { ValidationError } from '../core/errors.js';
import type { JsonValue } from '../core/message.js';

export type JsonObject = { [key: string]: JsonValue };

export function expectObject(value: JsonValue, field: string, what: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(field, `expected ${what}`);
  }
  return value;
}

/** A typo such as `replyto` must fail at enqueue, not silently drop the reply address. */
export function rejectUnknownProperties(
  payload: JsonObject,
  field: string,
  known: ReadonlySet<string>,
): void {
  for (const name of Object.keys(payload)) {
    if (!known.has(name)) {
      const expected = [...known].join(', ');
      throw new ValidationError(
        `${field}.${name}`,
        `unknown property (expected one of ${expected})`,
      );
    }
  }
}

/**
 * A string of 1 to `maxLength` characters with no control characters. Values that end up in a
 * header line must not smuggle CR or LF (header injection), and no legitimate name, address or
 * subject needs a control character.
 */
export function expectHeaderSafeString(value: JsonValue, field: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ValidationError(field, 'expected a non-empty string');
  }
  if (value.length > maxLength) {
    throw new ValidationError(field, `is ${value.length} characters; the limit is ${maxLength}`);
  }
  if (hasControlCharacter(value)) {
    throw new ValidationError(field, 'must not contain control characters such as CR or LF');
  }
  return value;
}

/** True when `value` holds a C0 control (CR, LF, NUL, tab, ...) or DEL. */
export function hasControlCharacter(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
