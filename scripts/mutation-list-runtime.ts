/**
 * Mutations outside the SQL: the drain loop and its settings, the retry policy, validation,
 * the HTTP driver's transaction, the pg executor behind a pooler, and the reference service's
 * after-commit kick.
 */
import {
  CRASH_TEST,
  DEADLINE_TEST,
  drainTest,
  headsTest,
  type Mutation,
  type NamedTest,
} from './mutation.js';

const DRAIN = 'src/core/drain.ts';
const DRAIN_RUN = 'src/core/drain-run.ts';
const DRAIN_SENDS = 'src/core/drain-sends.ts';
const SQS_TEST = 'test/senders/sqs-sender.test.ts';
const SEND = 'src/core/send-outcome.ts';
const APP_TEST = 'test/reference-service/app.test.ts';
const BUDGET_TEST_FILE = 'test/store/subrequest-budget.test.ts';
const PG_DRIVER = 'src/drivers/node-pg.ts';
const LOST_NAMES_TEST = 'test/drivers/lost-prepared-statements.test.ts';
const LEASE_TEST_FILE = 'test/store/settle-leases.test.ts';
const REFUSALS_TEST_FILE = 'test/store/settle-refusals.test.ts';

/** A request's trace through a webhook and an SQS message to their receivers. */
const TRACE_TEST: NamedTest = {
  file: 'test/tracing/opentelemetry.test.ts',
  name: "puts the receiver's span in the trace of the request that enqueued the message",
};

/** A drain test in test/store/claim-cursor.test.ts (node-pg only, so no driver to pick). */
const cursorTest = (name: string): NamedTest => ({ file: 'test/store/claim-cursor.test.ts', name });
const keylessTest = (name: string): NamedTest => ({
  file: 'test/store/keyless-claims.test.ts',
  name,
});
const batchTest = (name: string): NamedTest => ({
  file: 'test/store/batch-sends.test.ts',
  name,
  driver: 'node-pg',
});
const continuedDrainTest = (name: string): NamedTest => ({
  file: 'test/store/continued-runs.test.ts',
  name,
  driver: 'node-pg',
});
const runsDrainTest = (name: string): NamedTest => ({
  file: 'test/store/ordering-runs.test.ts',
  name,
  driver: 'node-pg',
});

export const RUNTIME_MUTATIONS: readonly Mutation[] = [
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
    name: 'skip the deadline check before a send',
    row: 5,
    edits: [
      {
        file: DRAIN_SENDS,
        find: "  if (run.timeLeftMs() - reserve < settings.sendTimeoutMs) return 'deadline';\n",
        replace: '',
      },
      {
        file: DRAIN_SENDS,
        find: "  if (next.lease.endsAt - now - reserve < settings.sendTimeoutMs) return 'lease';\n",
        replace: '',
      },
    ],
    tests: [DEADLINE_TEST],
  },
  {
    name: "send a run's follower before the one ahead of it is done",
    row: 11,
    edits: [
      {
        file: DRAIN_RUN,
        find: "run.queue.findIndex((queued) => queued.turn !== 'ahead')",
        replace: 'run.queue.findIndex(() => true)',
      },
    ],
    tests: [
      runsDrainTest(
        'sends a run in order in one lane at a time, and after a failure sends nothing behind it',
      ),
      drainTest('delivers each ordering key in enqueue order while sends fail at random'),
    ],
  },
  {
    name: "send a run's follower after the one ahead of it failed",
    row: 11,
    edits: [
      {
        file: DRAIN,
        find: "const why = next.turn === 'drop' ? 'behind' : reasonNotToSend(next, run);",
        replace: 'const why = reasonNotToSend(next, run);',
      },
    ],
    tests: [
      runsDrainTest(
        'sends a run in order in one lane at a time, and after a failure sends nothing behind it',
      ),
    ],
  },
  {
    name: 'a continuing run goes without waiting for the row it comes behind',
    row: 11,
    edits: [
      {
        file: DRAIN_RUN,
        find: 'if (last?.message.id === behind) return last;',
        replace: 'if (last?.message.id === behind) return undefined;',
      },
    ],
    tests: [
      continuedDrainTest(
        'claims the next run of a deep key while the last is out, and sends each row only after the one before it was delivered',
      ),
      continuedDrainTest(
        'sends nothing of a continuing run when the row it comes behind fails, and releases it unspent',
      ),
    ],
  },
  {
    name: 'a continuing run behind a row that was not delivered goes anyway',
    row: 11,
    edits: [
      {
        file: DRAIN_RUN,
        find: "before.outcome === undefined ? 'ahead' : before.outcome === 'delivered' ? 'go' : 'drop';",
        replace: "before.outcome === undefined ? 'ahead' : 'go';",
      },
    ],
    tests: [
      {
        file: 'src/core/drain-run.test.ts',
        name: 'puts a continuing run behind the held run it names: waiting, at once when that row was delivered, dropped when it was not',
      },
    ],
  },
  {
    name: 'a continuing run behind another row than the held run ends at is kept',
    row: 11,
    edits: [
      {
        file: DRAIN_RUN,
        find: "  if (last?.message.id === behind) return last;\n  queued.turn = 'drop';",
        replace: '  if (last) return last;',
      },
    ],
    tests: [
      {
        file: 'src/core/drain-run.test.ts',
        name: 'drops a continuing run behind a row that is not the last of the held run',
      },
    ],
  },
  {
    name: 'claim beside a claim that walks the keys',
    row: 11,
    edits: [
      {
        file: DRAIN,
        find: '  const unkeyedOnly = run.walkingKeys && run.keyedClaimsOnWire > 0;\n',
        replace: '  const unkeyedOnly = false;\n',
      },
    ],
    tests: [
      {
        file: 'test/store/claims-on-wire.test.ts',
        name: "claims one at a time while claims take ordering keys' runs, and keeps each key in enqueue order",
        driver: 'node-pg',
      },
    ],
  },
  {
    name: "a claim beside the runs' claim sends the walk back to where its request started",
    row: 11,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: '    if (beside && this.walkReturned !== undefined) next.walkAfter = this.walkReturned;\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/ordering-runs.test.ts',
        name: "beside the runs' claim, takes unkeyed rows only, leaves the next claim walking, and keeps the walk where the runs' claim left it",
      },
    ],
  },
  {
    name: "a claim beside the runs' claim takes keyed rows",
    row: 11,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: '    if (request.unkeyedOnly === true) return this.unkeyedBeside(positioned, shared, position);\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/claims-on-wire.test.ts',
        name: "puts a claim without keyed rows beside each claim of keys' runs while unkeyed messages wait, and keeps each key in enqueue order",
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a batch takes a row whose run is waiting on the row ahead of it',
    row: 11,
    edits: [
      {
        file: DRAIN_SENDS,
        find: "      queued.turn !== 'ahead' &&\n",
        replace: '',
      },
    ],
    tests: [
      batchTest(
        'never puts two messages of one ordering key in one batch, and sends each key in order',
      ),
    ],
  },
  {
    name: "a batch's results settle every row as its first",
    row: 15,
    edits: [
      {
        file: DRAIN_SENDS,
        find: 'recordOutcome(run, settles, queued, results[index]!, durationMs);',
        replace: 'recordOutcome(run, settles, queued, results[0]!, durationMs);',
      },
    ],
    tests: [
      batchTest(
        'settles each message of a partly failed batch on its own: delivered, retried, set aside',
      ),
    ],
  },
  {
    name: 'under a budget, claim one row a request whatever a batch carries',
    row: 10,
    edits: [
      {
        file: DRAIN,
        find: '      sendsAffordable(run) * settings.rowsPerSend,\n',
        replace: '      sendsAffordable(run),\n',
      },
    ],
    tests: [
      {
        file: 'test/store/batch-sends.test.ts',
        name: 'claims by what a request carries: 50 subrequests send 500 messages or more, and never one over the budget',
      },
    ],
  },
  {
    name: "an SQS FIFO message's group is not its ordering key",
    row: 11,
    edits: [
      {
        file: 'src/senders/sqs/sqs-sender.ts',
        find: 'message.orderingKey ?? unorderedGroupId ?? message.key,',
        replace: 'unorderedGroupId ?? message.key,',
      },
    ],
    tests: [
      {
        file: SQS_TEST,
        name: 'keeps each ordering key in order on a FIFO queue, its key the group and the message key the deduplication id',
      },
    ],
  },
  {
    name: "an SQS entry refused for the sender's fault is retried",
    row: 15,
    edits: [
      {
        file: 'src/senders/aws-batch-errors.ts',
        find: "listed ?? (failure.SenderFault === false ? 'transient' : 'rejected');",
        replace: "'transient';",
      },
    ],
    tests: [
      {
        file: SQS_TEST,
        name: 'settles a batch SQS partly refused message by message: the ones too long for the queue set aside, the rest delivered',
      },
    ],
  },
  {
    name: 'a queue message carries its row id instead of its message key',
    row: 7,
    edits: [
      {
        file: 'src/senders/cloudflare-queues/index.ts',
        find: 'return { id: message.key, kind: message.kind, payload: message.payload };',
        replace: 'return { id: message.id, kind: message.kind, payload: message.payload };',
      },
    ],
    tests: [
      {
        file: 'test/senders/cloudflare-queues.test.ts',
        name: 'delivers 1000 committed messages through a local queue, 500 or more an invocation under 50 subrequests, and none rolled back',
      },
    ],
  },
  {
    name: 'wait for a sender that ignores its AbortSignal',
    row: 5,
    edits: [
      {
        file: SEND,
        find: 'timedOut ? (result) => finish(timedOut(result)) : (finish as (result: SendResult) => void),',
        replace: '() => {},',
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
        file: 'src/core/resolved-settings.ts',
        find: 'if (sendAndSettleMs >= settings.leaseMs) {',
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
    name: 'a new key per attempt',
    row: 7,
    edits: [
      {
        file: SEND,
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
    name: 'keep sending after an abort',
    row: 9,
    edits: [
      {
        file: DRAIN_SENDS,
        find: 'if (options.signal?.aborted || run.failure) return',
        replace: 'if (run.failure) return',
      },
    ],
    tests: [
      drainTest('on abort, finishes the sends in flight, releases the rest and reports aborted'),
    ],
  },
  {
    name: 'skip the subrequest budget before a send',
    row: 10,
    edits: [
      {
        file: DRAIN_SENDS,
        find: "if (request && (run.budgetRefused || budgetLeft(run) < 1)) return 'budget';",
        replace: "if (request && run.budgetRefused) return 'budget';",
      },
    ],
    tests: [
      {
        file: BUDGET_TEST_FILE,
        name: "does not start a send the budget cannot pay for once a sender's own requests have eaten it",
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
        find: '      sendsAffordable(run) * settings.rowsPerSend,\n',
        replace: '',
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
    name: 'a second claim leaves out the rows the first may bring',
    row: 10,
    edits: [
      {
        file: 'src/core/drain-budget.ts',
        find: '    Math.ceil(run.queue.length / rowsPerSend) -\n    Math.ceil(run.rowsOnWire / rowsPerSend)\n',
        replace: '    Math.ceil(run.queue.length / rowsPerSend)\n',
      },
    ],
    tests: [
      {
        file: 'test/store/claims-on-wire.test.ts',
        name: 'keeps two claims on the wire under a large budget, within it',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a claim keeps no settle write free for its lease',
    row: 10,
    edits: [
      {
        file: 'src/core/drain-budget.ts',
        find: '  return run.unsettledClaims + run.claimsOnWire;',
        replace: '  return run.unsettledClaims > 0 || run.claimsOnWire > 0 ? 1 : 0;',
      },
    ],
    tests: [
      {
        file: LEASE_TEST_FILE,
        name: 'pays for the writes leases force: a budget of 50 is never overrun (batches of 3)',
      },
      {
        file: LEASE_TEST_FILE,
        name: 'pays for the writes leases force: a budget of 30 is never overrun (batches of 4)',
      },
    ],
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
        file: SEND,
        find: 'if (permanent) return dead(',
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
    name: 'an empty claim ends the drain while earlier rows are unrecorded',
    row: 20,
    edits: [
      {
        file: DRAIN,
        find: '    run.lastClaimFound = found || unrecorded;',
        replace: '    run.lastClaimFound = found;',
      },
    ],
    tests: [
      {
        file: 'test/store/claims-on-wire.test.ts',
        name: 'does not end the drain on an empty claim while earlier rows are unrecorded',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'never claim from the start within a backlog',
    row: 20,
    edits: [
      {
        file: 'src/store/claim-position.ts',
        find: 'position.fromCursor < CLAIMS_PER_FULL_SCAN - 1',
        replace: 'true',
      },
    ],
    tests: [
      cursorTest(
        'a row that comes due behind the cursor goes out with the next scan from the start',
      ),
    ],
  },
  {
    name: 'a claim out of a backlog starts at the cursor',
    row: 20,
    edits: [
      {
        file: 'src/store/claim-position.ts',
        find: 'return request.backlog === true && position.fromCursor',
        replace: 'return position.fromCursor',
      },
    ],
    tests: [
      {
        file: 'test/store/claim-cursor.test.ts',
        name: 'take rows after the cursor first, top up from the start, and name the last row taken',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: "a drain's first claim starts at an earlier drain's cursor",
    row: 20,
    edits: [
      {
        file: DRAIN,
        find: ' && run.report.batches > run.claimsOnWire;',
        replace: ';',
      },
    ],
    tests: [
      cursorTest('a drain that resumes where another stopped scans its first claim from the start'),
    ],
  },
  {
    name: 'a drain forgets where it stopped',
    row: 11,
    edits: [
      {
        file: DRAIN,
        find: '    if (run.options.resume) run.options.resume.at = result.resumeAt;\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/ordering-runs.test.ts',
        name: 'drains that share where they left off serve the keys in turn; one of its own starts at the first key',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a drainer forgets where its last run stopped',
    row: 11,
    edits: [
      {
        file: 'src/runtime/drainer.ts',
        find: 'setup.resume === undefined ? { ...setup, resume: {} } : setup',
        replace: 'setup',
      },
    ],
    tests: [
      {
        file: 'test/runtime/drain-builder.test.ts',
        name: 'starts its second run where its first one stopped',
      },
    ],
  },
  {
    name: 'the Workers kit forgets where its last invocation stopped',
    row: 11,
    edits: [
      {
        file: 'src/runtime/cloudflare-workers.ts',
        find: '{ resume, ...(await setup(env, ctx)) }',
        replace: 'await setup(env, ctx)',
      },
    ],
    tests: [
      {
        file: 'test/runtime/drain-builder.test.ts',
        name: 'starts its second run where its first one stopped',
      },
    ],
  },
  {
    name: 'the Lambda kit forgets where its last invocation stopped',
    row: 11,
    edits: [
      {
        file: 'src/runtime/aws-lambda.ts',
        find: '{ resume, ...built }',
        replace: 'built',
      },
    ],
    tests: [
      {
        file: 'test/runtime/drain-builder.test.ts',
        name: 'starts its second run where its first one stopped',
      },
    ],
  },
  {
    name: 'a partial claim ends the drain like a short one',
    row: 20,
    edits: [
      {
        file: DRAIN,
        find: ' || result.partial === true;',
        replace: ';',
      },
    ],
    tests: [
      keylessTest('a drain delivers a keyed message enqueued after a full claim it could not send'),
    ],
  },
  {
    name: 'a short claim that left keyed rows out is never partial',
    row: 20,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: "if (keyed === 'none' && rows.length < request.limit && keyedWaiting) result.partial = true;",
        replace: '',
      },
    ],
    tests: [
      keylessTest('a drain delivers a keyed message enqueued after a full claim it could not send'),
    ],
  },
  {
    name: 'claims taking heads never go back to the walk',
    row: 11,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: "        this.headsRetry = Math.min(2 * this.headsRetry, HEADS_RETRY_MOST);\n      }\n      return 'walk';",
        replace:
          "        this.headsRetry = Math.min(2 * this.headsRetry, HEADS_RETRY_MOST);\n      }\n      return 'heads';",
      },
    ],
    tests: [
      headsTest(
        'come back partial when their window ends among held-back rows, and the claims after them walk',
      ),
    ],
  },
  {
    name: 'a claim taking heads resumes before the keyed rows it took',
    row: 20,
    edits: [
      {
        file: 'src/store/message-rows.ts',
        find: '(keyedInDueOrder || row.ordering_key === null)',
        replace: '(row.ordering_key === null)',
      },
    ],
    tests: [
      headsTest(
        'follow a walk that came back full of short runs over many keys, and take heads in due order',
      ),
    ],
  },
  {
    name: 'a claim taking heads held back by its window is not partial',
    row: 20,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: '    if (heldBack) result.partial = true;\n',
        replace: '',
      },
    ],
    tests: [
      headsTest(
        'come back partial when their window ends among held-back rows, and the claims after them walk',
      ),
    ],
  },
  {
    name: 'an empty claim that left keyed rows out is taken for one that says none waits',
    row: 20,
    edits: [
      {
        file: 'src/store/due-claim.ts',
        find: '? flags?.keyed_waiting !== false :',
        replace: '? rows[0]?.keyed_waiting === true :',
      },
    ],
    tests: [keylessTest('an empty claim that left keyed rows out says whether one waits')],
  },
  {
    name: 'a settle write takes every waiting outcome, whatever its size',
    row: 21,
    edits: [
      {
        file: 'src/store/settle-size.ts',
        find: '  const most = Math.min(requests.length, MAX_SETTLE_OUTCOMES);',
        replace: '  const most = requests.length;',
      },
      {
        file: 'src/store/settle-size.ts',
        find: '    if (bytes >= MAX_SETTLE_PAYLOAD_BYTES) return taken + 1;\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/settle-size.test.ts',
        name: 'a drain writes outcomes that piled up in settles of at most 1,000, one history group each',
      },
      {
        file: 'test/store/settle-size.test.ts',
        name: 'a drain writes large payloads in settles of about 8 MB of payload at most',
      },
    ],
  },
  {
    name: "store a sender's error as it came",
    row: 22,
    edits: [
      {
        file: 'src/core/settlement.ts',
        find: 'return storableText(error, MAX_ERROR_LENGTH) as ErrorText;',
        replace: 'return error as ErrorText;',
      },
    ],
    tests: [
      {
        file: 'test/senders/hostile-receivers.test.ts',
        name: "a custom sender's error with NUL, lone surrogates or 1 MiB of control characters is stored readable, beside deliveries in the same settle",
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'kick before the commit',
    row: 19,
    edits: [
      {
        file: 'examples/reference-service/commit-once.ts',
        find: '  try {\n    await deps.db.batch(statements);',
        replace:
          '  deps.kickAfterCommit(c, write.messageKeys);\n  try {\n    await deps.db.batch(statements);',
      },
      {
        file: 'examples/reference-service/commit-once.ts',
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
  {
    name: 'a lost statement name is not run again unnamed',
    row: 23,
    edits: [
      {
        file: PG_DRIVER,
        find: 'if (name === undefined || !namedStatementLost(error, name)) throw error;',
        replace: 'throw error;',
      },
    ],
    tests: [
      {
        file: LOST_NAMES_TEST,
        name: 'runs again unnamed, once, and the pool stays unnamed with one warning',
      },
    ],
  },
  {
    name: 'keep naming statements after a lost name',
    row: 23,
    edits: [
      {
        file: 'src/drivers/prepared-names.ts',
        find: '      if (unnamedTargets.has(target)) return undefined;\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: LOST_NAMES_TEST,
        name: 'runs again unnamed, once, and the pool stays unnamed with one warning',
      },
    ],
  },
  {
    name: 'restart a batch whose COMMIT failed',
    row: 23,
    edits: [
      {
        file: PG_DRIVER,
        find: '    if (lostName !== undefined) names!.stopNaming(lostName);',
        replace:
          "    if (errorCode(error) === '26000') lostName = error;\n    if (lostName !== undefined) names!.stopNaming(lostName);",
      },
    ],
    tests: [
      {
        file: LOST_NAMES_TEST,
        name: 'a failing COMMIT is not repeated, even when its error names the statement',
      },
    ],
  },
  {
    name: "a budget replaces the setup's timeouts",
    row: 24,
    edits: [
      {
        file: 'src/runtime/drainer.ts',
        find: 'fittedTimeouts(request.budgetMs, clock, settings)',
        replace: 'fittedTimeouts(request.budgetMs, clock, {})',
      },
    ],
    tests: [
      {
        file: 'test/cli/config-drain.test.ts',
        name: 'a send timeout smaller than the budget allows is kept, not replaced by the default',
      },
      {
        file: 'test/runtime/drain-builder.test.ts',
        name: 'sendTimeoutMs reaches drainOnce: the drain does not start a 25 s send with 21 s of lease left',
      },
    ],
  },
  {
    name: 'outcomes wait past their leases for a full group',
    row: 25,
    edits: [
      {
        file: 'src/core/settle-groups.ts',
        find: '      this.#waiting[0]!.lease.endsAt - settings.roundTripReserveMs - settings.clock.now().getTime(),\n',
        replace: '      MAX_TIMER_MS,\n',
      },
    ],
    tests: [
      {
        file: LEASE_TEST_FILE,
        name: 'an outcome is written before its lease ends, under a budget',
      },
      {
        file: LEASE_TEST_FILE,
        name: 'two overlapping drains with a 1 s lease send every message once',
      },
    ],
  },
  {
    name: 'a refused settle group fails the run instead of being split',
    row: 26,
    edits: [
      {
        file: 'src/core/settle-writes.ts',
        find: "  if (failed.reason !== 'refused') {",
        replace: '  if (true) {',
      },
    ],
    tests: [
      {
        file: REFUSALS_TEST_FILE,
        name: 'one outcome the database refuses does not take the others of its group with it',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a settle that may pass is split instead of tried again',
    row: 26,
    edits: [
      {
        file: 'src/core/settle-writes.ts',
        find: "  if (error.retryable === true) return 'may pass';",
        replace: "  if (error.retryable === true) return 'refused';",
      },
    ],
    tests: [
      {
        file: REFUSALS_TEST_FILE,
        name: 'a write that fails in a way that may pass is tried again whole',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a settle no retry can pass is tried again',
    row: 26,
    edits: [
      {
        file: 'src/core/settle-writes.ts',
        find: "code.slice(0, 2)) ? 'refused' : 'fails again';",
        replace: "code.slice(0, 2)) ? 'refused' : 'may pass';",
      },
    ],
    tests: [
      {
        file: REFUSALS_TEST_FILE,
        name: 'a write refused for a reason no part of it can pass fails the drain at once, untried again',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a failed drain run is recorded without its code',
    row: 29,
    edits: [
      {
        file: 'src/core/drain-record.ts',
        find: 'errorCode: run.failure ? drainErrorCode(run.failure.error) : null,',
        replace: 'errorCode: null,',
      },
    ],
    tests: [
      {
        file: 'test/admin/metrics.test.ts',
        name: 'counts drain runs in the duration histogram and a drain failing on a database fault under its code',
      },
    ],
  },
  {
    name: "the run's record is not kept free in the budget",
    row: 29,
    edits: [
      {
        file: 'src/core/drain-budget.ts',
        find: 'report.roundTrips + report.sends + report.senderSubrequests + recordOwed;',
        replace: 'report.roundTrips + report.sends + report.senderSubrequests;',
      },
    ],
    tests: [
      {
        file: BUDGET_TEST_FILE,
        name: 'a drain that records its run keeps a subrequest for the record and still stays within a budget of 10',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a claimed message comes without its trace context',
    row: 34,
    edits: [
      {
        file: 'src/store/message-rows.ts',
        find: '  if (row.traceparent) claimed.traceContext = traceContextOf(row);\n',
        replace: '',
      },
    ],
    tests: [
      {
        file: 'test/store/trace-context.test.ts',
        name: 'hands each message its own trace context, or none, and keeps it in delivered history',
        driver: 'node-pg',
      },
    ],
  },
  {
    name: 'a webhook goes without its trace headers',
    row: 34,
    edits: [
      {
        file: 'src/senders/webhook/webhook-sender.ts',
        find: '          ...traceHeaders(message.traceContext),\n',
        replace: '',
      },
    ],
    tests: [TRACE_TEST],
  },
  {
    name: 'a queue message goes without its trace attributes',
    row: 34,
    edits: [
      {
        file: 'src/senders/aws-batch-calls.ts',
        find: 'return { [keyAttribute]: message.key, ...traceHeaders(message.traceContext) };',
        replace: 'return { [keyAttribute]: message.key };',
      },
    ],
    tests: [TRACE_TEST],
  },
];
