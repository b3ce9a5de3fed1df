/**
 * What the CLI prints reaches a terminal, and text from the database is anyone's: an ordering
 * key, an error a receiver wrote, a payload. A control character in it (ESC starting a sequence
 * that retitles the window, rewrites the screen or, on some terminals, answers back; the C1
 * CSI; a CR that overprints the line) would act on the operator's terminal instead of being
 * read. So every write of the CLI goes through {@link controlSafeSink}: each control character
 * but newline and tab is printed as its `\uXXXX` escape.
 *
 * The escape is JSON's own, so `--json` output stays valid JSON with the same values: inside
 * JSON text, control characters can only occur in strings, and `JSON.stringify` already writes
 * C0 ones this way (not DEL and C1, which this adds).
 */
import type { TextSink } from './cli-io.js';

/** C0 but newline and tab, DEL, and C1: what a terminal may take as a command. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` with each control character but newline and tab written as `\uXXXX`.
 *
 * @example
 * escapeControlCharacters('key\u001b[2J'); // 'key\\u001b[2J'
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(
    CONTROL_CHARACTERS,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `sink` with every write passed through {@link escapeControlCharacters}. */
export function controlSafeSink(sink: TextSink): TextSink {
  return { write: (text) => sink.write(escapeControlCharacters(text)) };
}
