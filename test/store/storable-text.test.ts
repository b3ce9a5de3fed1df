/**
 * storableText, the one rule every error the drain stores goes through (via the settlement
 * constructors): NUL and lone surrogates replaced, control characters escaped, cut between
 * characters within the limit. No database: the real-PostgreSQL side is
 * test/senders/hostile-receivers.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeError } from '../../src/core/errors.js';
import { dead, MAX_ERROR_LENGTH, retry } from '../../src/core/settlement.js';
import { storableText } from '../../src/core/storable-text.js';
import { expectStorableAndReadable } from '../support/stored-text.js';

const MIB = 1024 * 1024;

/** Any UTF-16 string: lone surrogates, NUL and every control character included. */
const anyUnits = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 0xffff }),
      fc.integer({ min: 0xd800, max: 0xdfff }),
      fc.integer({ min: 0, max: 0x9f }),
    ),
    { maxLength: 300 },
  )
  .map((codes) => String.fromCharCode(...codes));

describe('storableText', () => {
  it('replaces NUL with U+FFFD', () => {
    expect(storableText('err\0or', 100)).toBe('err\uFFFDor');
    expect(storableText('\0\0', 100)).toBe('\uFFFD\uFFFD');
  });

  it('replaces lone high and low surrogates with U+FFFD, and keeps valid pairs', () => {
    expect(storableText('a\ud83d', 100)).toBe('a\uFFFD'); // high at the end
    expect(storableText('a\ud83db', 100)).toBe('a\uFFFDb'); // high before a non-surrogate
    expect(storableText('a\ude00b', 100)).toBe('a\uFFFDb'); // low alone
    expect(storableText('\ude00\ud83d', 100)).toBe('\uFFFD\uFFFD'); // a pair the wrong way round
    expect(storableText('\ud83d\ud83d\ude00', 100)).toBe('\uFFFD😀'); // high, then a pair
    expect(storableText('café 😀 𝄞 🎉', 100)).toBe('café 😀 𝄞 🎉');
  });

  it('escapes control characters but newline and tab, readably', () => {
    expect(storableText('\u001b[31mred\u001b[0m', 100)).toBe('\\u001b[31mred\\u001b[0m');
    expect(storableText('a\rb\u0007c\u007fd\u0085e\u009bf', 100)).toBe(
      'a\\u000db\\u0007c\\u007fd\\u0085e\\u009bf',
    );
    expect(storableText('line one\n\tline two', 100)).toBe('line one\n\tline two');
  });

  it('returns text within the limit and already plain unchanged', () => {
    const plain = 'webhook to http://127.0.0.1:1 answered HTTP 500: {"error":"boom"}';
    expect(storableText(plain, plain.length)).toBe(plain);
  });

  it('cuts at the limit with a mark, never between the halves of a pair or inside an escape', () => {
    for (let limit = 1; limit <= 24; limit++) {
      for (let shift = 0; shift < 4; shift++) {
        const text = `${'a'.repeat(shift)}😀b🎉\u001bc𝄞d${'e'.repeat(20)}`;
        const cut = storableText(text, limit);
        expect(cut.length).toBeLessThanOrEqual(limit);
        expectStorableAndReadable(cut, limit);
        expect(cut.endsWith('…')).toBe(true);
        const kept = cut.slice(0, -1);
        // What is kept is the whole output for a prefix of the text, so no escape was cut.
        expect(storableText(text, 1000).startsWith(kept)).toBe(true);
        expect(kept).not.toMatch(/\\(u[0-9a-f]{0,3})?$/);
      }
    }
    expect(storableText('a😀b', 3)).toBe('a…'); // a cut after 2 units would keep half the pair
    expect(storableText('😀😀', 2)).toBe('…');
    expect(storableText('a😀', 3)).toBe('a😀');
    expect(storableText('ab😀c', 4)).toBe('ab…');
  });

  it('bounds 1 MiB of control characters to the limit', () => {
    const flood = Array.from({ length: MIB }, (_, index) => String.fromCharCode(index % 0xa0)).join(
      '',
    );
    const stored = storableText(flood, MAX_ERROR_LENGTH);
    expect(stored.length).toBeLessThanOrEqual(MAX_ERROR_LENGTH);
    expect(stored.endsWith('…')).toBe(true);
    expect(stored.startsWith('\uFFFD\\u0001\\u0002')).toBe(true);
    expectStorableAndReadable(stored);
    expect(storableText('\ud800'.repeat(MIB), 10)).toBe(`${'\uFFFD'.repeat(9)}…`);
  });

  it('for any UTF-16 string and limit: storable, readable, within the limit, and stable when applied again', () => {
    let cutSome = false;
    fc.assert(
      fc.property(anyUnits, fc.integer({ min: 1, max: 400 }), (text, limit) => {
        const stored = storableText(text, limit);
        expectStorableAndReadable(stored, limit);
        expect(storableText(stored, limit)).toBe(stored);
        const whole = storableText(text, Number.POSITIVE_INFINITY);
        if (stored !== whole) {
          cutSome = true;
          expect(stored.endsWith('…')).toBe(true);
          expect(whole.startsWith(stored.slice(0, -1))).toBe(true);
        }
      }),
      { numRuns: 1_000, examples: [['\0\ud800\u001b'.repeat(100), 7]] },
    );
    expect(cutSome).toBe(true);
  });
});

describe('the settlements that carry text', () => {
  it('retry and dead store their text through storableText, within MAX_ERROR_LENGTH', () => {
    const at = new Date();
    expect(retry(at, 'err\0or \ud800')).toEqual({
      outcome: 'retry',
      at,
      error: 'err\uFFFDor \uFFFD',
    });
    const reason = dead(`permanent failure: ${'\u0000\u001b'.repeat(MIB)}`);
    expect(reason.outcome).toBe('dead');
    const text = reason.outcome === 'dead' ? reason.reason : '';
    expect(text.length).toBeLessThanOrEqual(MAX_ERROR_LENGTH);
    expect(text.startsWith('permanent failure: \uFFFD\\u001b')).toBe(true);
    expectStorableAndReadable(text);
  });

  it('describeError describes a thrown value that resists being turned into text', () => {
    expect(describeError(Object.create(null))).toMatch(/cannot be turned into text/);
    const sly = new Error('x');
    Object.defineProperty(sly, 'message', {
      get() {
        throw new Error('gotcha');
      },
    });
    expect(describeError(sly)).toMatch(/cannot be turned into text/);
    expect(describeError(new Error('a\0b'))).toBe('Error: a\0b'); // repaired by the settlement
  });
});
