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
 *
 * Named statements need the server connection that prepared one to be the one that runs it
 * again. A pooler that hands each transaction whichever server connection is free, and does not
 * track prepared statements itself (PgBouncer in transaction mode before 1.21, or with
 * `max_prepared_statements = 0`), breaks that: a statement the client prepared is missing on the
 * next server connection (SQLSTATE 26000), or another client's is already there (42P05). The
 * executor then tells its names {@link PreparedNames.stopNaming}: from then on every executor
 * over that pool runs unnamed, and one warning says why (docs/deploy.md, "Behind a pooler").
 */
import type { Logger } from '../core/ports.js';
import { errorCode } from './postgres-errors.js';

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
  /**
   * Records that named statements do not survive on this target (`error` is the 26000 or 42P05
   * that showed it): every later {@link nameFor} over the same target, from any executor,
   * answers undefined. The first call per target writes one warning; later calls do nothing.
   */
  stopNaming(error: unknown): void;
}

export interface PreparedNamesOptions {
  /**
   * The pool or client the names are for. What {@link PreparedNames.stopNaming} learns is kept
   * per target, so every executor over one pool runs unnamed after the first finds out, and the
   * warning is written once per pool. Default: a target of this set of names alone.
   */
  target?: object;
  /** Where the one warning goes. Default: one `console.warn` line. */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * Targets where a named statement was lost. Weak, so a pool that is ended and dropped is
 * forgotten with it.
 */
const unnamedTargets = new WeakSet<object>();

const consoleWarning: Pick<Logger, 'warn'> = {
  warn: (message, fields) => {
    console.warn(fields === undefined ? message : `${message} ${JSON.stringify(fields)}`);
  },
};

export function preparedNames(options: PreparedNamesOptions = {}): PreparedNames {
  const target = options.target ?? {};
  const logger = options.logger ?? consoleWarning;
  const named = new Map<string, string>();
  const usedNames = new Set<string>();
  const runs = new Map<string, number>();
  return {
    stopNaming(error) {
      if (unnamedTargets.has(target)) return;
      unnamedTargets.add(target);
      logger.warn(lostNamesWarning(error), { sqlState: errorCode(error) });
    },
    nameFor(text) {
      if (unnamedTargets.has(target)) return undefined;
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

/** The one warning line: what happened, the likely cause, what was done and what to set. */
function lostNamesWarning(error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error);
  return (
    `named prepared statements do not survive on this database connection (${reason}): ` +
    'a pooler in transaction mode without prepared-statement support sits in front of it ' +
    '(PgBouncer before 1.21, or max_prepared_statements = 0). Every statement on this pool ' +
    'now runs unnamed. Set prepare: false (the CLI: OUTBOX_PREPARE=off) to start that way; ' +
    'see docs/deploy.md "Behind a pooler"'
  );
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
