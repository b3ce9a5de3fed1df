/**
 * Mutations of the SQL: the claim, settle and purge statements, and the migrations. Each removes
 * a lock or clause whose reason src/store/statements.ts (or the migration) gives.
 */
import {
  CLAIM_CRASH_TEST,
  DEADLINE_TEST,
  drainTest,
  HEADS_DRAIN_TEST,
  headsTest,
  type Mutation,
  type NamedTest,
} from './mutation.js';

const STATEMENTS = 'src/store/statements.ts';
const SETTLE_STATEMENT = 'src/store/settle-statement.ts';
const CLAIM_STATEMENTS = 'src/store/claim-statements.ts';
const CLAIM_WALK = 'src/store/claim-walk.ts';
const CLAIM_HEADS = 'src/store/claim-heads.ts';
const CLAIM_CURSOR = 'src/store/claim-cursor.ts';
const OPERATOR_STATEMENTS = 'src/store/operator-statements.ts';
const REPLAY_STATEMENTS = 'src/store/replay-statements.ts';
const REPLAY_ORDER_TEST = 'test/store/replay-order.test.ts';
const DESTINATION_TEST = 'test/store/destination-health.test.ts';
const SKIP_LOCKED_TEST: NamedTest = {
  file: 'test/store/skip-locked.test.ts',
  name: 'a drain delivers the other due rows at once while another transaction holds one',
  driver: 'node-pg',
};

/** A test of test/store/continued-runs.test.ts's claim: node-pg only, in no driver's describe. */
function continuedTest(name: string): NamedTest {
  return { file: 'test/store/continued-runs.test.ts', name };
}

/** A test of test/store/ordering-runs.test.ts's claim: node-pg only, in no driver's describe. */
function runsTest(name: string): NamedTest {
  return { file: 'test/store/ordering-runs.test.ts', name };
}

export const SQL_MUTATIONS: readonly Mutation[] = [
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
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'LIMIT ${limit}\n    FOR UPDATE OF m SKIP LOCKED',
        replace: 'LIMIT ${limit}\n    FOR UPDATE OF m',
      },
      {
        file: CLAIM_STATEMENTS,
        find: 'FOR UPDATE OF m SKIP LOCKED`,\n      parameter:',
        replace: 'FOR UPDATE OF m`,\n      parameter:',
      },
    ],
    tests: [SKIP_LOCKED_TEST],
  },
  {
    name: 'drop FOR UPDATE',
    row: 4,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'LIMIT ${limit}\n    FOR UPDATE OF m SKIP LOCKED',
        replace: 'LIMIT ${limit}',
      },
      {
        file: CLAIM_STATEMENTS,
        find: 'FOR UPDATE OF m SKIP LOCKED`,\n      parameter:',
        replace: '`,\n      parameter:',
      },
    ],
    tests: [
      drainTest('8 overlapping drains over 10,000 messages send every key exactly once'),
      // Deterministic where the overlap above is a (near-certain) race: without the row lock in
      // the SELECT, the UPDATE itself waits for the held row.
      SKIP_LOCKED_TEST,
    ],
  },
  {
    name: 'claim rows whose lease is live',
    row: 4,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: "AND (${a}.state = 'pending' OR (${a}.state = 'claimed' AND ${a}.lease_expires_at <= ${dueBy}))",
        replace: "AND (${a}.state = 'pending' OR ${a}.state = 'claimed')",
      },
    ],
    tests: [CLAIM_CRASH_TEST],
  },
  {
    name: 'never re-claim an expired lease',
    row: 6,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: "AND (${a}.state = 'pending' OR (${a}.state = 'claimed' AND ${a}.lease_expires_at <= ${dueBy}))",
        replace: "AND (${a}.state = 'pending')",
      },
    ],
    tests: [CLAIM_CRASH_TEST],
  },
  {
    name: 'settle without proving the drain still owns the row',
    row: 8,
    edits: [
      {
        file: SETTLE_STATEMENT,
        // Each outcome's row found by id alone, at whatever version it has now.
        find: "SELECT o.*, o.outcome = 'delivered' AND m.dedupe_key IS NULL AS moves",
        replace:
          "SELECT o.id, m.ctid AS row_id, o.claim_token, o.outcome, o.due_at, o.error,\n          o.outcome = 'delivered' AND m.dedupe_key IS NULL AS moves",
      },
      {
        file: SETTLE_STATEMENT,
        find: 'SELECT dedupe_key',
        replace: 'SELECT ctid, dedupe_key',
      },
      {
        file: SETTLE_STATEMENT,
        find: 'WHERE m.ctid = o.row_id\n            AND m.id = o.id\n            AND m.claim_token = o.claim_token\n          LIMIT 1) m',
        replace: 'WHERE m.id = o.id\n          LIMIT 1) m',
      },
      {
        file: SETTLE_STATEMENT,
        find: '\n          AND m.claim_token = ANY ($4::uuid[])',
        replace: '',
      },
      {
        file: SETTLE_STATEMENT,
        find: '\n          AND m.claim_token = o.claim_token\n          AND NOT o.moves',
        replace: '\n          AND NOT o.moves',
      },
    ],
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
        file: SETTLE_STATEMENT,
        find: 'THEN m.attempts - 1 ELSE m.attempts END',
        replace: 'THEN m.attempts ELSE m.attempts END',
      },
    ],
    tests: [DEADLINE_TEST],
  },
  {
    name: 'release postpones the row instead of leaving it due now',
    row: 9,
    edits: [
      {
        file: SETTLE_STATEMENT,
        find: "WHEN o.outcome IN ('retry', 'release') THEN o.due_at",
        replace:
          "WHEN o.outcome = 'retry' THEN o.due_at WHEN o.outcome = 'release' THEN o.due_at + interval '1 hour'",
      },
    ],
    tests: [DEADLINE_TEST],
  },
  {
    name: "drop the kick's ordering-key head check",
    row: 11,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: '`(m.ordering_key IS NULL OR NOT EXISTS (',
        replace: '`(m.ordering_key IS NULL OR true OR NOT EXISTS (',
      },
    ],
    tests: [runsTest("takes for a kick no row whose key's head is unfinished")],
  },
  {
    name: 'a claim taking heads takes keyed rows without the head check',
    row: 11,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: '          isHead: orderingHead,',
        replace:
          "          isHead: orderingHead.replace('OR NOT EXISTS', 'OR true OR NOT EXISTS'),",
      },
    ],
    tests: [
      headsTest(
        'never take a message while an earlier one of its key is pending or claimed, whatever its due time',
      ),
      HEADS_DRAIN_TEST,
    ],
  },
  {
    name: 'a claim taking heads reads the due order past its window',
    row: 11,
    edits: [
      {
        file: CLAIM_HEADS,
        find: '  const window = HEADS_WINDOW_PER_ROW * limit;',
        replace: '  const window = 1000 * HEADS_WINDOW_PER_ROW * limit;',
      },
    ],
    tests: [
      headsTest('read at most their window of the due order, however deep the backlog held back'),
    ],
  },
  {
    name: 'a run takes followers that may not be claimed',
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: "bool_and(f.ordering_key = ${key} AND ${claimable('f', cn)})",
        replace: 'bool_and(f.ordering_key = ${key})',
      },
    ],
    tests: [
      runsTest(
        "counts only a run's claimable rows against the limit, so the keys after it still get theirs",
      ),
    ],
  },
  {
    name: 'a run goes on past a row whose attempts are spent',
    row: 11,
    edits: [{ file: CLAIM_WALK, find: 'WHERE f.open AND f.unspent', replace: 'WHERE f.open' }],
    tests: [
      runsTest(
        'ends a run before a row not yet due, of a kind it has no sender for, or whose attempts are spent',
      ),
    ],
  },
  {
    name: "a run's follower scan reads on into the next key's rows",
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: "bool_and(f.ordering_key = ${key} AND ${claimable('f', cn)})",
        replace: "bool_and(${claimable('f', cn)})",
      },
    ],
    tests: [
      runsTest(
        "ends a run at its key's last row: a short key's run takes none of the next key's rows",
      ),
    ],
  },
  {
    name: "a run's followers are kept without its head locked",
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: 'WHERE r.locked_through = r.ord',
        replace: 'WHERE r.id IS NOT NULL',
      },
    ],
    tests: [
      runsTest(
        'takes nothing behind a head another transaction holds, and nothing behind a head out on a live lease',
      ),
    ],
  },
  {
    name: 'continue behind a held run whatever token holds its last row',
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: 'AND l.claim_token = h.token AND ',
        replace: 'AND ',
      },
    ],
    tests: [
      continuedTest(
        "continues nothing behind a row not claimed under the token given, of another key, or a run that does not hold the key's head",
      ),
    ],
  },
  {
    name: "continue a held run that does not hold its key's head",
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: 'AND s.id BETWEEN h.first AND h.last ',
        replace: '',
      },
    ],
    tests: [
      continuedTest(
        "continues nothing behind a row not claimed under the token given, of another key, or a run that does not hold the key's head",
      ),
    ],
  },
  {
    name: 'say caught up while the runs taken go on',
    row: 11,
    edits: [
      {
        file: CLAIM_WALK,
        find: '\n      AND NOT ${runsGoOn})`;',
        replace: ')`;',
      },
    ],
    tests: [
      runsTest(
        'says it caught up only when every key was visited, every run taken to its end and every due unkeyed row',
      ),
    ],
  },
  {
    name: "one deep key fills the claim before other keys' turns",
    row: 11,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'ORDER BY share, sort_due, step, ord',
        replace: 'ORDER BY sort_due, step, ord',
      },
    ],
    tests: [
      runsTest(
        'merges unkeyed rows in due order with the runs, and one deep key takes no more than its share',
      ),
    ],
  },
  {
    name: 'a dead head never blocks',
    row: 12,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: "OR (earlier.state = 'dead' AND $4::boolean))",
        replace: "OR (earlier.state = 'dead' AND $4::boolean AND false))",
      },
      {
        file: CLAIM_WALK,
        find: 'AND ($4::boolean OR ${alias}.dead_at IS NULL)',
        replace: 'AND ${alias}.dead_at IS NULL',
      },
    ],
    tests: [drainTest('a dead head holds back the rest of its ordering key unless told otherwise')],
  },
  {
    name: "the walk's descent lands on a dead head where dead heads do not block",
    row: 12,
    edits: [
      {
        file: CLAIM_WALK,
        find: "WHERE ${after === null ? '' : `h.ordering_key > ${after} AND `}${inOrder('h')}",
        replace:
          "WHERE ${after === null ? '' : `h.ordering_key > ${after} AND `}h.ordering_key IS NOT NULL AND h.delivered_at IS NULL",
      },
    ],
    tests: [
      drainTest('a dead head holds back the rest of its ordering key unless told otherwise'),
      runsTest('walks on past a key left with dead messages only, where dead heads do not block'),
    ],
  },
  {
    name: 'count the attempt at settle instead of claim',
    row: 13,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'attempts = least(m.attempts + 1, m.max_attempts),',
        replace: 'attempts = m.attempts,',
      },
      {
        file: SETTLE_STATEMENT,
        find: "attempts = CASE WHEN o.outcome = 'release' THEN m.attempts - 1 ELSE m.attempts END,",
        replace:
          "attempts = CASE WHEN o.outcome = 'release' THEN m.attempts ELSE least(m.attempts + 1, m.max_attempts) END,",
      },
    ],
    tests: [drainTest('sets aside at claim a message whose final attempt was never settled')],
  },
  {
    name: 'the state-machine CHECK lets an unknown state through',
    row: 16,
    edits: [
      {
        file: 'src/store/migrations.generated.ts',
        find: 'ELSE false\\n    END);',
        replace: 'ELSE true\\n    END);',
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
        name: 'a second migration waits for one in progress, then finds it done',
      },
    ],
  },
  {
    name: 'purge without a bound',
    row: 18,
    edits: [
      {
        file: STATEMENTS,
        find: 'LIMIT $2\n          FOR UPDATE SKIP LOCKED)\n        RETURNING m.id\n      ),\n      room AS',
        replace:
          'LIMIT 1000000\n          FOR UPDATE SKIP LOCKED)\n        RETURNING m.id\n      ),\n      room AS',
      },
      {
        file: STATEMENTS,
        find: 'LIMIT greatest(0, (SELECT messages FROM room))',
        replace: 'LIMIT 1000000',
      },
      {
        file: STATEMENTS,
        find: 'WHERE g.before < (SELECT messages FROM room))',
        replace: 'WHERE g.before < 1000000)',
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
    name: 'a claim that left keyed rows out never says one waits',
    row: 20,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: '(${firstKeyStatement(messages)}) IS NOT NULL AS keyed_waiting',
        replace: 'false AS keyed_waiting',
      },
    ],
    tests: [
      {
        file: 'test/store/keyless-claims.test.ts',
        name: 'take a keyed message enqueued meanwhile on the claim after the next',
      },
    ],
  },
  {
    name: 'a claim after a cursor ignores it',
    row: 20,
    edits: [
      {
        file: CLAIM_CURSOR,
        find: "part(`AND (m.due_at, m.id) > ${CURSOR_AT}`, String(limit), 'ahead')",
        replace: "part('', String(limit), 'ahead')",
      },
    ],
    tests: [
      {
        file: 'test/store/claim-cursor.test.ts',
        name: 'take rows after the cursor first, top up from the start, and name the last row taken',
        driver: 'node-pg',
      },
      {
        file: 'test/store/claim-plan.test.ts',
        name: 'starts its scan of the due index at the cursor, and looks from the start only when short',
      },
    ],
  },
  {
    name: 'a short claim after a cursor does not look from the start',
    row: 20,
    edits: [
      {
        file: CLAIM_CURSOR,
        find: '${name} AS (SELECT * FROM ahead UNION ALL SELECT * FROM behind),',
        replace: '${name} AS (SELECT * FROM ahead),',
      },
    ],
    tests: [
      {
        file: 'test/store/claim-cursor.test.ts',
        name: 'a row that comes due behind the cursor as the backlog runs out still goes out in this drain',
      },
    ],
  },
  {
    name: 'a discard in history takes out the whole group',
    row: 21,
    edits: [
      {
        file: OPERATOR_STATEMENTS,
        find: 'size = g.size - 1,',
        replace: 'size = 0,',
      },
      {
        file: OPERATOR_STATEMENTS,
        find: 'WHERE kept.id <> $1)',
        replace: 'WHERE false)',
      },
    ],
    tests: [
      {
        file: 'test/store/history-reads.test.ts',
        name: 'discards one message of a group and leaves the rest of the group readable',
      },
    ],
  },
  {
    name: 'a read by id in history looks only at groups, not at their messages',
    row: 21,
    edits: [
      {
        file: OPERATOR_STATEMENTS,
        find: 'WHERE g.ids @> $1::bigint AND h.id = $1`,',
        replace: 'WHERE g.ids @> $1::bigint`,',
      },
    ],
    tests: [
      {
        file: 'test/store/history-reads.test.ts',
        name: 'finds every message by id and key, out-of-order ids included (time-ordered keys)',
      },
    ],
  },
  {
    name: 'purge deletes counted minutes without folding them into the totals',
    row: 27,
    edits: [
      {
        file: STATEMENTS,
        find: 'SELECT kind, sum(delivered), sum(failed), sum(dead) FROM gone',
        replace: 'SELECT kind, sum(delivered), sum(failed), sum(dead) FROM gone WHERE false',
      },
    ],
    tests: [
      {
        file: 'test/admin/metrics.test.ts',
        name: 'counters do not drop when purge deletes the minutes they were counted in',
      },
    ],
  },
  {
    name: 'held messages count as due and in the lag',
    row: 28,
    edits: [
      {
        file: OPERATOR_STATEMENTS,
        find: "count(*) FILTER (WHERE state = 'pending' AND takeable AND NOT held) AS due,",
        replace: "count(*) FILTER (WHERE state = 'pending' AND takeable) AS due,",
      },
      {
        file: OPERATOR_STATEMENTS,
        find: 'min(due_at) FILTER (WHERE takeable AND NOT held) AS oldest_due_at',
        replace: 'min(due_at) FILTER (WHERE takeable) AS oldest_due_at',
      },
    ],
    tests: [
      {
        file: 'test/store/held-stats.test.ts',
        name: 'a dead head holding five followers while drains are healthy makes them held, not due, and no lag',
      },
    ],
  },
  {
    name: 'a replay walks a stretch newest first',
    row: 30,
    edits: [
      {
        file: REPLAY_STATEMENTS,
        find: 'ORDER BY h.id LIMIT $11',
        replace: 'ORDER BY h.id DESC LIMIT $11',
      },
      {
        file: REPLAY_STATEMENTS,
        find: 'ORDER BY id LIMIT $11',
        replace: 'ORDER BY id DESC LIMIT $11',
      },
    ],
    tests: [
      {
        file: REPLAY_ORDER_TEST,
        name: 'a resent follower never passes its resent head, however drains interleave with batches',
      },
    ],
  },
  {
    name: 'a resend gives the message a new id',
    row: 30,
    edits: [{ file: REPLAY_STATEMENTS, find: "  ['id', 'a.id'],\n", replace: '' }],
    tests: [
      {
        file: REPLAY_ORDER_TEST,
        name: 'a resent delivered head goes before a follower enqueued after it, under its original key',
      },
    ],
  },
  {
    name: 'a redrive gives the message a new key',
    row: 31,
    edits: [
      {
        file: REPLAY_STATEMENTS,
        find: "SET state = 'pending', attempts = 0, due_at = $10, dead_at = NULL",
        replace:
          "SET key = gen_random_uuid(), state = 'pending', attempts = 0, due_at = $10, dead_at = NULL",
      },
    ],
    tests: [
      {
        file: REPLAY_ORDER_TEST,
        name: 'redriven dead heads go out before the followers they held, under their original keys',
      },
    ],
  },
  {
    name: 'a resend gives the message a new key',
    row: 31,
    edits: [
      {
        file: REPLAY_STATEMENTS,
        find: "['key', 'a.key']",
        replace: "['key', 'gen_random_uuid()']",
      },
    ],
    tests: [
      {
        file: 'test/store/replay.test.ts',
        name: 'resends delivered messages: out of their history group, back into messages with id and key, and dedupe-kept rows in place',
      },
      {
        file: REPLAY_ORDER_TEST,
        name: 'a resent follower never passes its resent head, however drains interleave with batches',
      },
    ],
  },
  {
    name: 'a failed attempt is not recorded in its settle',
    row: 32,
    edits: [
      {
        file: SETTLE_STATEMENT,
        find: "attempt_log = ${appendedAttemptLog('$8::timestamptz')}",
        replace: 'attempt_log = m.attempt_log',
      },
    ],
    tests: [
      {
        file: 'test/store/attempt-history.test.ts',
        name: 'records a failed attempt in the one settle statement that records its outcome',
      },
    ],
  },
  {
    name: "delivered history leaves a message's failed attempts behind",
    row: 32,
    edits: [
      {
        file: 'src/store/history-groups.ts',
        find: 'mv.created_at, mv.attempt_log, o.status,',
        replace: 'mv.created_at, NULL::jsonb, o.status,',
      },
    ],
    tests: [
      {
        file: 'test/store/attempt-history.test.ts',
        name: 'carries the failures into delivered history with the delivery, and a dedupe-kept row too',
      },
    ],
  },
  {
    name: 'the claim does not consult the pause',
    row: 33,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'WHEN d.paused_until IS NOT NULL THEN ${PAUSED}',
        replace: 'WHEN false THEN ${PAUSED}',
      },
    ],
    tests: [
      {
        file: DESTINATION_TEST,
        name: 'pauses a destination after five failures in a row, and claims only the others’ messages',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'the probe lets everything through',
    row: 33,
    edits: [
      {
        file: CLAIM_STATEMENTS,
        find: 'WHEN d.paused_until IS NOT NULL THEN ${PAUSED}',
        replace: 'WHEN d.paused_until > (SELECT now FROM claim_now) THEN ${PAUSED}',
      },
    ],
    tests: [
      {
        file: DESTINATION_TEST,
        name: 'sends one probe when the pause ends, to only one of two overlapping claims',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'enqueue parks nothing for an open pause',
    row: 33,
    edits: [
      {
        file: 'src/store/statements.ts',
        find: 'WHERE d.destination = i.destination AND d.paused_until > now()',
        replace: 'WHERE false',
      },
    ],
    tests: [
      {
        file: DESTINATION_TEST,
        name: 'parks what arrives for a paused destination at enqueue, and what failed as it paused at the next claim that probes',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'two claims probe one destination at once',
    row: 33,
    edits: [
      {
        file: 'src/store/claim-probes.ts',
        find: 'AND (d.probe_until IS NULL OR d.probe_until <= $1)',
        replace: '',
      },
    ],
    tests: [
      {
        file: DESTINATION_TEST,
        name: 'sends one probe when the pause ends, to only one of two overlapping claims',
        driver: 'node-pg',
      },
    ],
  },
];
