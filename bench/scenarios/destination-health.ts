/**
 * Scenario 13: what destination health costs the claim and the settle (issue 28: "claim cost
 * with 1,000 paused destinations within 1.2x of none"). One claim of 100 is timed on each table
 * below, all with the same healthy backlog, interleaved and rotated each round:
 *
 * - none: the healthy backlog alone, no destination paused;
 * - parked: 1,000 destinations paused by their own failures (five each, settled in groups of 32
 *   as a drain's were), whose waiting messages were ahead of the healthy ones in due order when
 *   the pauses opened, so each pause parked them at its end;
 * - ahead: 1,000 paused, with messages of theirs enqueued by a transaction that began before
 *   the pauses opened (so it did not see them, and parked nothing): due, and ahead of every
 *   healthy message, so each claim passes over all of them until a probing claim parks them;
 * - both again on a second connection with `plan_cache_mode = force_generic_plan`, which
 *   separates what the claim costs to plan from what it costs to run, and the first with
 *   `force_custom_plan`, where every claim is planned (as over Neon's HTTP driver);
 * - half-open: a few destinations whose pause ran out with nothing left to send them.
 *
 * Each timed claim runs in a transaction that is rolled back, so every claim of a table meets
 * the same rows: nothing it claimed piles up at the head of due order, and nothing deleted waits
 * for a vacuum. The steady figure is the CPU of the table's one backend during the claim. Then
 * settles of 32 deliveries, the happy path through the settle's health CTEs: messages with no
 * destination, to destinations with no health row, and to destinations with one and no failures.
 */
import { DEFAULT_FAILURES_TO_PAUSE } from '../../src/core/destination-health.js';
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { SYSTEMS } from '../systems/index.js';
import { claimRequest, OUTBOX_SCHEMA } from '../systems/outbox-relay.js';
import {
  type ClaimCase,
  destinationRows,
  type SettleCase,
  type Sizes,
} from './destination-rows.js';
import {
  type BacklogShape,
  type BenchTable,
  type BreakerTrip,
  backlogShape,
  claimKeys,
  enqueueTo,
  enqueueUnseeing,
  healthyDestination,
  leaveHalfOpen,
  openBenchTable,
  pausedDestination,
  recoverHealthyDestinations,
  SCENARIO_SETTLE_GROUP,
  tripBreaker,
} from './destination-tables.js';
import {
  explainPreparedClaim,
  type PlanChoice,
  planChoice,
  type Timed,
  timeClaim,
  timeSettle,
} from './destination-timing.js';
import type { FreshDatabase, Scenario, ScenarioContext } from './types.js';

const CLAIM_SIZE = 100;
/**
 * Untimed claims first: pgExecutor prepares a statement from its second run, and PostgreSQL
 * plans a prepared statement's first five executions with their values before it may keep a
 * generic plan; past both, every timed claim runs the plan a drain's connection settles on.
 */
const WARM_CLAIMS = 7;
const TIMED_CLAIMS = 40;
/** The deliveries one settle statement writes (SCENARIO_SETTLE_GROUP). */
const SETTLE_SIZE = SCENARIO_SETTLE_GROUP;
const TIMED_SETTLES = 40;
/** Messages waiting per paused destination, besides the five whose failures paused it. */
const WAITING_PER_PAUSED = 10;
/**
 * Half-open destinations with nothing to probe: a few receivers that stayed down until their
 * last messages went dead. Each costs every claim a scan of the due backlog
 * (docs/benchmarks.md, scenario 13).
 */
const HALF_OPEN_EMPTY = 10;
/**
 * The plan a second connection to a table forces: the generic plan where the claim's own
 * connection plans every claim afresh (so the difference is the planning), and a custom plan
 * beside the table with none paused (so the cases compare where every claim is planned).
 */
const FORCED_PLANS: Partial<Record<ClaimCase, 'generic' | 'custom'>> = {
  none: 'custom',
  parked: 'generic',
  ahead: 'generic',
};
const TABLES = [
  `${OUTBOX_SCHEMA}.messages`,
  `${OUTBOX_SCHEMA}.delivered_groups`,
  `${OUTBOX_SCHEMA}.destinations`,
];

/** What the scenario collects while it builds and times, for the rows and the results file. */
interface Collected {
  claims: Timed<ClaimCase>[];
  settles: Timed<SettleCase>[];
  shapes: Partial<Record<ClaimCase, BacklogShape>>;
  trips: Partial<Record<ClaimCase, BreakerTrip>>;
  plans: Partial<Record<ClaimCase, string>>;
  planChoices: Partial<Record<ClaimCase, PlanChoice>>;
}

export const destinationHealthScenario: Scenario = {
  id: '13',
  aliases: ['destinations'],
  title: 'Destination health: claim with 1,000 paused destinations, and the settle’s health CTEs',
  async run(context) {
    const paused = scaled(context.config, 1000, 10);
    const sizes: Sizes = {
      claimSize: CLAIM_SIZE,
      settleSize: SETTLE_SIZE,
      healthy: scaled(context.config, 10_000, 1000),
      // Every settle needs a group claimed first, warm-ups included, at any scale.
      settleBacklog: scaled(context.config, 10_000, (WARM_CLAIMS + TIMED_SETTLES) * SETTLE_SIZE),
      paused,
      waiting: paused * WAITING_PER_PAUSED,
      halfOpen: HALF_OPEN_EMPTY,
    };
    const collected: Collected = {
      claims: [],
      settles: [],
      shapes: {},
      trips: {},
      plans: {},
      planChoices: {},
    };
    // Each database and connection is listed as soon as it is open, so the finally below
    // closes it whatever fails.
    const databases: FreshDatabase[] = [];
    const tables: BenchTable[] = [];
    const open = async (database: FreshDatabase, recordDestination = true) => {
      const table = await openBenchTable(database.url, recordDestination);
      tables.push(table);
      return table;
    };
    const fresh = async () => {
      const database = await context.freshDatabase(SYSTEMS['outbox-relay']);
      databases.push(database);
      return database;
    };
    try {
      for (const claimCase of ['none', 'parked', 'ahead', 'healed', 'half-open'] as const) {
        context.progress(`13 destinations: building the "${claimCase}" table`);
        const database = await fresh();
        const table = await open(database);
        const trip = await buildClaimTable(claimCase, table, database.url, sizes);
        if (trip) collected.trips[claimCase] = trip;
        await context.vacuumAnalyze(database.url, TABLES);
        collected.shapes[claimCase] = await checkedShape(claimCase, table, sizes);
        collected.claims.push(timed(claimCase, table));
        const forced = FORCED_PLANS[claimCase];
        if (forced) {
          const second = await open(database);
          await second.client.query(`SET plan_cache_mode = force_${forced}_plan`);
          const forcedCase = `${claimCase}, ${forced} plan` as ClaimCase;
          collected.claims.push(timed(forcedCase, second));
        }
      }
      for (const settleCase of ['no destination', 'no health row', 'health row'] as const) {
        context.progress(`13 destinations: building the settle table "${settleCase}"`);
        const database = await fresh();
        const table = await open(database, settleCase !== 'no destination');
        if (settleCase === 'health row') await recoverHealthyDestinations(table);
        await enqueueTo(table, sizes.settleBacklog, healthyDestination);
        await context.vacuumAnalyze(database.url, TABLES);
        collected.settles.push(timed(settleCase, table));
      }
      await context.postgres.admin.query('CHECKPOINT');
      await timeEverything(context, collected);
      for (const claim of collected.claims) {
        collected.planChoices[claim.case] = await planChoice(claim.table);
        collected.plans[claim.case] = await explainPreparedClaim(claim.table, CLAIM_SIZE);
      }
    } finally {
      for (const table of tables) await table.close();
      for (const database of databases) await database.dispose();
    }
    const { claims, settles, ...details } = collected;
    return destinationRows(sizes, claims, settles, details);
  },
};

/** Fills `table` for `claimCase`; the breaker's trip when pauses opened. */
async function buildClaimTable(
  claimCase: Exclude<ClaimCase, `${string} plan`>,
  table: BenchTable,
  url: string,
  sizes: Sizes,
): Promise<BreakerTrip | undefined> {
  const toPaused = (index: number) => pausedDestination(index, sizes.paused);
  const failing = sizes.paused * DEFAULT_FAILURES_TO_PAUSE;
  switch (claimCase) {
    case 'none':
      await enqueueTo(table, sizes.healthy, healthyDestination);
      return undefined;
    case 'parked': {
      // Waiting messages first, then the healthy backlog, then the messages whose failures
      // pause their destinations, claimed by key so the claims do not take the rows ahead of
      // them: when each pause opens, its waiting messages are within the first 10,000 due rows.
      await enqueueTo(table, sizes.waiting, toPaused);
      await enqueueTo(table, sizes.healthy, healthyDestination);
      const keys = await enqueueTo(table, failing, toPaused);
      return tripBreaker(table, await claimKeys(table, keys));
    }
    case 'ahead': {
      // The pauses open on an empty backlog while an app's transaction that began before them
      // enqueues for the paused destinations: it does not see the pauses, so nothing parks
      // what it writes (an enqueue that sees a pause parks its message at the pause's end).
      // The failed messages come back after their backoff, then the healthy ones arrive.
      const keys = await enqueueTo(table, failing, toPaused);
      const trip = await enqueueUnseeing(
        url,
        async () => tripBreaker(table, await claimKeys(table, keys)),
        sizes.waiting,
        toPaused,
      );
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, trip.retriedBy - Date.now()) + 50),
      );
      await enqueueTo(table, sizes.healthy, healthyDestination);
      return trip;
    }
    case 'healed': {
      // As "ahead", then the claims that probe, as a drain makes first in a run and every 5 s
      // after: each parks the open destinations' messages in the first 10,000 rows of due
      // order, so two park the 11,000. They name a kind no message has, so they claim nothing
      // and every healthy message stays due for the timed claims.
      const trip = await buildClaimTable('ahead', table, url, sizes);
      for (let claim = 0; claim < 2; claim++) {
        await table.store.claim({
          ...claimRequest(CLAIM_SIZE),
          kinds: ['bench.none'],
          probe: true,
        });
      }
      return trip;
    }
    case 'half-open':
      await leaveHalfOpen(table, sizes.halfOpen);
      await enqueueTo(table, sizes.healthy, healthyDestination);
      return undefined;
  }
}

/** The table's backlog, checked against what its case promises. */
async function checkedShape(
  claimCase: ClaimCase,
  table: BenchTable,
  sizes: Sizes,
): Promise<BacklogShape> {
  const shape = await backlogShape(table);
  const expectedPaused = {
    none: 0,
    parked: sizes.paused,
    ahead: sizes.paused,
    healed: sizes.paused,
    'half-open': sizes.halfOpen,
  };
  const problems = [
    shape.healthyDue !== sizes.healthy &&
      `${shape.healthyDue} of ${sizes.healthy} healthy messages due`,
    shape.pausedDestinations !== expectedPaused[claimCase as keyof typeof expectedPaused] &&
      `${shape.pausedDestinations} destinations paused`,
    claimCase === 'half-open' && shape.halfOpen !== sizes.halfOpen && `${shape.halfOpen} half-open`,
    claimCase !== 'half-open' && shape.halfOpen !== 0 && `${shape.halfOpen} half-open`,
  ].filter((problem) => problem !== false);
  if (problems.length > 0) throw new Error(`"${claimCase}" table: ${problems.join(', ')}`);
  return shape;
}

function timed<Case>(timedCase: Case, table: BenchTable): Timed<Case> {
  return { case: timedCase, table, wallMs: [], cpuMicros: [] };
}

/** Every claim case round by round, then every settle case, each round in rotated order. */
async function timeEverything(context: ScenarioContext, collected: Collected): Promise<void> {
  const { claims, settles } = collected;
  context.progress(
    `13 destinations: ${TIMED_CLAIMS} claims of ${CLAIM_SIZE} on each of ${claims.length} connections, interleaved, order rotated each round`,
  );
  for (let round = 1; round <= WARM_CLAIMS + TIMED_CLAIMS; round++) {
    for (const claim of rotated(claims, round)) {
      await timeClaim(claim, CLAIM_SIZE, round > WARM_CLAIMS);
    }
  }
  context.progress(
    `13 destinations: ${TIMED_SETTLES} settles of ${SETTLE_SIZE} deliveries on each of ${settles.length} tables, interleaved`,
  );
  for (let round = 1; round <= WARM_CLAIMS + TIMED_SETTLES; round++) {
    for (const settle of rotated(settles, round)) {
      await timeSettle(settle, SETTLE_SIZE, round > WARM_CLAIMS);
    }
  }
}
