/**
 * What a mutation is: a small, exact source edit that removes one mechanism, and the tests that
 * must fail without it. The lists are in mutation-list-sql.ts and mutation-list-runtime.ts, gathered in
 * mutation-list.ts; scripts/mutations.ts runs them.
 *
 * When a `find` stops matching exactly once, the runner fails naming the mutation: update the
 * edit to the moved source, never delete the mutation to make the run pass.
 */

export interface SourceEdit {
  /** Path from the repository root. */
  file: string;
  /** Exact text (or a pattern) that must occur exactly once in `file`. */
  find: string | RegExp;
  /** What replaces it; for a RegExp `find`, `$1` etc. refer to its groups. */
  replace: string;
}

export interface NamedTest {
  file: string;
  /** The test's own name (not its describe blocks), matched literally. */
  name: string;
  /** Only this driver's variant of a conformance test, when the mechanism is driver-independent. */
  driver?: 'node-pg' | 'neon-ws' | 'neon-http';
}

export interface Mutation {
  name: string;
  /** The row of the invariants table in docs/invariants.md this mutation attacks. */
  row: number;
  edits: SourceEdit[];
  /** At least one of these must fail with the edit applied. */
  tests: NamedTest[];
  /** For a mutation that makes a test hang: fail it sooner than the suite's 60 s timeout. */
  testTimeoutMs?: number;
}

export const DRAIN_TEST = 'test/store/drain.test.ts';
export const CRASH_TEST = 'test/store/crash.test.ts';

/** The node-pg variant of a test in test/store/drain.test.ts. */
export const drainTest = (name: string): NamedTest => ({
  file: DRAIN_TEST,
  name,
  driver: 'node-pg',
});

export const DEADLINE_TEST = drainTest(
  'returns before a 2 s deadline with every sent message settled and the rest released',
);

/** A store-level test of test/store/heads-claims.test.ts (node-pg, in no driver's describe). */
export const headsTest = (name: string): NamedTest => ({
  file: 'test/store/heads-claims.test.ts',
  name,
});

/** The node-pg variant of heads-claims.test.ts's drain, order checked at the receiver. */
export const HEADS_DRAIN_TEST: NamedTest = {
  file: 'test/store/heads-claims.test.ts',
  name: 'deliver each key in enqueue order and each message once, two claims on the wire',
  driver: 'node-pg',
};

export const CLAIM_CRASH_TEST: NamedTest = {
  file: CRASH_TEST,
  name: 'killed right after claiming: a later drain delivers everything once the lease passes',
  driver: 'node-pg',
};
