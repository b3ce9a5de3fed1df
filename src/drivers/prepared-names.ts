/**
 * Names for prepared statements, derived from the statement text so callers keep the port's
 * plain `query(text, params)`. A named statement is parsed and planned once per connection
 * instead of on every call: for the drain's claim and settle that planning is a large share of
 * the server's work per message (docs/benchmarks.md).
 *
 * Bounded on purpose: a text is prepared only once it has run {@link PREPARE_AFTER_RUNS}
 * times (one-off DDL and migrations never are), and at most {@link MAX_PREPARED_TEXTS}
 * distinct texts per executor ever get a name; everything past that runs unnamed, as before.
 * The server keeps each prepared statement for the life of the connection, so an unbounded
 * stream of distinct texts (an app's own ad hoc SQL through the same executor) must not turn
 * into an unbounded set of prepared statements.
 */

/** Runs of a text before it is prepared: the second run proves it repeats. */
export const PREPARE_AFTER_RUNS = 2;

/**
 * Distinct texts one executor prepares at most. The store has about twenty statements per
 * schema; this leaves room for a few schemas and an app's hot queries.
 */
export const MAX_PREPARED_TEXTS = 64;

/** Texts seen, counted until prepared; past the cap, no more are tracked. */
export interface PreparedNames {
  /** The name to run `text` under, or undefined to run it unnamed. */
  nameFor(text: string): string | undefined;
}

export function preparedNames(): PreparedNames {
  const named = new Map<string, string>();
  const usedNames = new Set<string>();
  const runs = new Map<string, number>();
  return {
    nameFor(text) {
      const name = named.get(text);
      if (name !== undefined) return name;
      if (named.size >= MAX_PREPARED_TEXTS) return undefined;
      const seen = (runs.get(text) ?? 0) + 1;
      if (seen < PREPARE_AFTER_RUNS) {
        // Bounded like the names: an executor fed endless distinct texts forgets the oldest.
        if (runs.size >= MAX_PREPARED_TEXTS * 4) runs.delete(runs.keys().next().value as string);
        runs.set(text, seen);
        return undefined;
      }
      runs.delete(text);
      const candidate = `outbox_${textHash(text)}`;
      // Two texts with one hash would make the driver refuse the second: leave it unnamed.
      if (usedNames.has(candidate)) return undefined;
      usedNames.add(candidate);
      named.set(text, candidate);
      return candidate;
    },
  };
}

/** FNV-1a, 64 bits as two 32-bit halves, hex: stable across processes and runtimes. */
function textHash(text: string): string {
  let low = 0x84222325;
  let high = 0xcbf29ce4;
  for (let i = 0; i < text.length; i++) {
    low ^= text.charCodeAt(i);
    // Multiply the 64-bit value by the FNV prime 0x100000001b3 in 32-bit halves.
    const lowProduct = Math.imul(low, 0x1b3);
    const carry = Math.floor(((low >>> 0) * 0x1b3) / 0x100000000);
    high = (Math.imul(high, 0x1b3) + Math.imul(low, 0x100) + carry) >>> 0;
    low = lowProduct >>> 0;
  }
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
}
