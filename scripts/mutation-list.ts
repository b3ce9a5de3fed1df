/**
 * The mutations behind docs/invariants.md: each removes (or bends) ONE mechanism with a small,
 * exact source edit, and names the tests that must fail without it. `npm run test:mutations`
 * applies each to a scratch copy and runs only those tests (scripts/mutations.ts).
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

const STATEMENTS = 'src/store/statements.ts';
const DRAIN = 'src/core/drain.ts';
const DRAIN_TEST = 'test/store/drain.test.ts';
const CRASH_TEST = 'test/store/crash.test.ts';
const APP_TEST = 'test/reference-service/app.test.ts';

const drainTest = (name: string): NamedTest => ({ file: DRAIN_TEST, name, driver: 'node-pg' });
const DEADLINE_TEST = drainTest(
  'returns before a 2 s deadline with every sent message settled and the rest released',
);
const BUDGET_TEST_FILE = 'test/store/subrequest-budget.test.ts';
const CLAIM_CRASH_TEST: NamedTest = {
  file: CRASH_TEST,
  name: 'killed right after claiming: a later drain delivers everything once the lease passes',
  driver: 'node-pg',
};

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'HTTP batch outside a transaction',
    row: 1,
    edits: [
      {
        file: 'src/drivers/neon-http.ts',
        find: `const results = await sql.transaction(
          statements.map((statement) => neonHttpQuery(sql, statement)) as never[],
          { fullResults: true },
        );`,
        replace: `const results: any[] = [];
        for (const statement of statements) {
          results.push(await sql.query(statement.text, statement.params as never[], { fullResults: true }));
        }`,
      },
    ],
    tests: [
      {
        file: APP_TEST,
        name: 'a fault between the domain insert and the outbox insert leaves neither row',
        driver: 'neon-http',
      },
    ],
  },
  {
    name: 'accept an unknown kind',
    row: 2,
    edits: [
      { file: 'src/core/message.ts', find: 'if (!kinds.has(kind)) {', replace: 'if (false) {' },
    ],
    tests: [
      {
        file: 'test/store/enqueue.test.ts',
        name: 'rejects an unknown kind with a ValidationError naming the field and writes nothing',
      },
    ],
  },
  {
    name: 'dedupe conflict returns nothing',
    row: 3,
    edits: [
      {
        file: STATEMENTS,
        find: 'DO UPDATE SET dedupe_key = excluded.dedupe_key',
        replace: 'DO NOTHING',
      },
    ],
    tests: [
      {
        file: 'test/store/enqueue.test.ts',
        name: 'yields one message for one dedupe key, across calls and within a call',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'drop SKIP LOCKED',
    row: 4,
    edits: [{ file: STATEMENTS, find: 'FOR UPDATE OF m SKIP LOCKED', replace: 'FOR UPDATE OF m' }],
    tests: [
      {
        file: 'test/store/skip-locked.test.ts',
        name: 'a drain delivers the other due rows at once while another transaction holds one',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'drop FOR UPDATE',
    row: 4,
    edits: [{ file: STATEMENTS, find: 'FOR UPDATE OF m SKIP LOCKED', replace: '' }],
    tests: [drainTest('8 overlapping drains over 10,000 messages send every key exactly once')],
  },
  {
    name: 'claim rows whose lease is live',
    row: 4,
    edits: [
      {
        file: STATEMENTS,
        find: /(WHERE m\.state IN \('pending', 'claimed'\)\s+)AND m\.due_at <= \$1/,
        replace: "$1AND (m.due_at <= $$1 OR m.state = 'claimed')",
      },
    ],
    tests: [CLAIM_CRASH_TEST],
  },
  {
    name: 'skip the deadline check before a send',
    row: 5,
    edits: [{ file: DRAIN, find: ' || room < settings.sendTimeoutMs', replace: '' }],
    tests: [DEADLINE_TEST],
  },
  {
    name: 'wait for a sender that ignores its AbortSignal',
    row: 5,
    edits: [
      {
        file: DRAIN,
        find: 'return await Promise.race([sent, timedOut]);',
        replace: 'return await sent;',
      },
    ],
    tests: [drainTest('cuts loose a sender that ignores its AbortSignal, and records a retry')],
    testTimeoutMs: 10_000,
  },
  {
    name: 'accept a lease shorter than a send and its settle',
    row: 5,
    edits: [
      {
        file: 'src/core/drain-settings.ts',
        find: 'if (settings.sendTimeoutMs + settings.roundTripReserveMs >= settings.leaseMs) {',
        replace: 'if (false) {',
      },
    ],
    tests: [
      {
        file: 'test/store/drain-settings.test.ts',
        name: 'refuses a lease that a send plus its settle could outlast, and claims nothing',
      },
    ],
    // With the check gone the drain claims, finds no room to send, releases, and claims again.
    testTimeoutMs: 10_000,
  },
  {
    name: 'never re-claim an expired lease',
    row: 6,
    edits: [
      {
        file: STATEMENTS,
        find: /WHERE m\.state IN \('pending', 'claimed'\)(\s+AND m\.due_at <= \$1)/,
        replace: "WHERE m.state IN ('pending')$1",
      },
    ],
    tests: [CLAIM_CRASH_TEST],
  },
  {
    name: 'a new key per attempt',
    row: 7,
    edits: [
      {
        file: DRAIN,
        find: 'key: message.key,\n    kind: message.kind,\n    payload: message.payload,',
        replace:
          'key: message.key + "/" + message.attempts,\n    kind: message.kind,\n    payload: message.payload,',
      },
    ],
    tests: [
      {
        file: CRASH_TEST,
        name: 'killed after sending but before settling: each message goes out again with the same key',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'drop the claim-token guard in the settle',
    row: 8,
    edits: [{ file: STATEMENTS, find: /\n\s+AND m\.claim_token = o\.claim_token/, replace: '' }],
    tests: [
      drainTest(
        'a settle after another drain re-claimed the row changes nothing and counts as stale',
      ),
    ],
  },
  {
    name: 'release without uncounting the attempt',
    row: 9,
    edits: [
      {
        file: STATEMENTS,
        find: 'THEN m.attempts - 1 ELSE m.attempts END',
        replace: 'THEN m.attempts ELSE m.attempts END',
      },
    ],
    tests: [DEADLINE_TEST],
  },
  {
    name: 'release keeps the lease',
    row: 9,
    edits: [
      {
        file: STATEMENTS,
        find: "WHEN o.outcome IN ('retry', 'release') THEN o.due_at",
        replace: "WHEN o.outcome IN ('retry') THEN o.due_at",
      },
    ],
    tests: [DEADLINE_TEST],
  },
  {
    name: 'keep sending after an abort',
    row: 9,
    edits: [{ file: DRAIN, find: 'if (options.signal?.aborted || ', replace: 'if (' }],
    tests: [
      drainTest('on abort, finishes the sends in flight, releases the rest and reports aborted'),
    ],
  },
  {
    name: 'skip the subrequest budget before a send',
    row: 10,
    edits: [{ file: DRAIN, find: ' || budgetLeft(run) < 1) {', replace: ') {' }],
    tests: [
      {
        file: BUDGET_TEST_FILE,
        name: 'stays within a budget of 20 sending one at a time while the next batch is claimed ahead',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'claim a batch larger than the budget left',
    row: 10,
    edits: [
      {
        file: DRAIN,
        find: 'settings.maxMessages - report.claimed, budgetLeft(run))',
        replace: 'settings.maxMessages - report.claimed)',
      },
    ],
    tests: [
      {
        file: BUDGET_TEST_FILE,
        name: 'claims no more rows than the budget leaves room to send',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'drop the ordering-key head check',
    row: 11,
    edits: [
      {
        file: STATEMENTS,
        find: 'AND (m.ordering_key IS NULL OR NOT EXISTS (',
        replace: 'AND (m.ordering_key IS NULL OR true OR NOT EXISTS (',
      },
    ],
    tests: [drainTest('delivers each ordering key in enqueue order while sends fail at random')],
  },
  {
    name: 'a dead head never blocks',
    row: 12,
    edits: [
      {
        file: STATEMENTS,
        find: "OR (earlier.state = 'dead' AND $6::boolean))",
        replace: "OR (earlier.state = 'dead' AND $6::boolean AND false))",
      },
    ],
    tests: [drainTest('a dead head holds back the rest of its ordering key unless told otherwise')],
  },
  {
    name: 'count the attempt at settle instead of claim',
    row: 13,
    edits: [
      {
        file: STATEMENTS,
        find: 'attempts = least(m.attempts + 1, m.max_attempts),',
        replace: 'attempts = m.attempts,',
      },
      {
        file: STATEMENTS,
        find: "attempts = CASE WHEN o.outcome = 'release' THEN m.attempts - 1 ELSE m.attempts END,",
        replace:
          "attempts = CASE WHEN o.outcome = 'release' THEN m.attempts ELSE least(m.attempts + 1, m.max_attempts) END,",
      },
    ],
    tests: [drainTest('sets aside at claim a message whose final attempt was never settled')],
  },
  {
    name: 'backoff without a cap',
    row: 14,
    edits: [
      {
        file: 'src/core/retry-policy.ts',
        find: 'const ceiling = Math.min(cap, base * 2 ** ',
        replace: 'const ceiling = Math.min(Infinity, base * 2 ** ',
      },
    ],
    tests: [
      drainTest(
        'backs off with growing, jittered, capped delays, honours retry-after, then sets aside',
      ),
    ],
  },
  {
    name: 'ignore a retry-after hint',
    row: 14,
    edits: [
      {
        file: 'src/core/retry-policy.ts',
        find: 'Math.round(Math.max(jittered, hinted))',
        replace: 'Math.round(jittered)',
      },
    ],
    tests: [
      drainTest(
        'backs off with growing, jittered, capped delays, honours retry-after, then sets aside',
      ),
    ],
  },
  {
    name: 'retry a permanent failure',
    row: 15,
    edits: [
      {
        file: DRAIN,
        find: 'if (isPermanentDeliveryError(error)) return dead(',
        replace: 'if (false) return dead(',
      },
    ],
    tests: [
      drainTest(
        'sets a permanent failure aside after one attempt, and an operator retry delivers it',
      ),
    ],
  },
  {
    name: 'drop the known-states CHECK',
    row: 16,
    edits: [
      {
        file: 'src/store/migrations.generated.ts',
        find: "CONSTRAINT messages_state_known\\n    CHECK (state IN ('pending', 'claimed', 'delivered', 'dead')),",
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/migrate.test.ts',
        name: 'CHECK constraints refuse rows in an impossible state',
      },
    ],
  },
  {
    name: 'migrate without the advisory lock',
    row: 17,
    edits: [
      {
        file: 'src/store/migrate.ts',
        find: "text: 'SELECT pg_advisory_xact_lock(hashtext($1))',",
        replace: "text: 'SELECT hashtext($1)',",
      },
    ],
    tests: [
      {
        file: 'test/store/migrate.test.ts',
        name: 'two concurrent migrations leave one correct schema and no error',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'purge without a bound',
    row: 18,
    edits: [
      {
        file: STATEMENTS,
        find: /(ORDER BY delivered_at, id\s+)LIMIT \$2/,
        replace: '$1LIMIT greatest($$2, 1000000)',
      },
    ],
    tests: [
      {
        file: 'test/store/admin.test.ts',
        name: 'purges old delivered and dead rows in bounded statements and keeps the rest',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'kick before the commit',
    row: 19,
    edits: [
      {
        file: 'examples/reference-service/domain-routes.ts',
        find: '  try {\n    await deps.db.batch(statements);',
        replace:
          '  deps.kickAfterCommit(c, write.messageKeys);\n  try {\n    await deps.db.batch(statements);',
      },
      {
        file: 'examples/reference-service/domain-routes.ts',
        find: '  deps.kickAfterCommit(c, write.messageKeys);\n  return c.json(',
        replace: '  return c.json(',
      },
    ],
    tests: [
      {
        file: APP_TEST,
        name: 'kicks only after the commit, and the kick sends what the commit wrote',
        driver: 'neon-ws',
      },
    ],
  },
];
