/**
 * What every error the drain stores must be, checked independently of the code that makes it
 * so: storable by PostgreSQL, with no control character but newline and tab, and bounded.
 */
import { expect } from 'vitest';
import { MAX_ERROR_LENGTH } from '../../src/core/settlement.js';
import { storableTextProblem } from '../../src/core/storable-text.js';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_BUT_NEWLINE_AND_TAB = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** `text` is storable, readable, and at most `maxLength` (default MAX_ERROR_LENGTH) long. */
export function expectStorableAndReadable(
  text: string | null | undefined,
  maxLength = MAX_ERROR_LENGTH,
): asserts text is string {
  expect(typeof text).toBe('string');
  expect(storableTextProblem(text!)).toBeUndefined();
  expect(text).not.toMatch(CONTROL_BUT_NEWLINE_AND_TAB);
  expect(text!.length).toBeLessThanOrEqual(maxLength);
}
