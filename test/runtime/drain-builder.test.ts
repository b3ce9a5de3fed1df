/**
 * One drain builder: what a user sets on a drainer's setup reaches `drainOnce` as set, through
 * every entry point a runtime offers. Each field has a probe that reads, at the drain's ports
 * (the claims and settles its store sees, the sends its sender sees, the clock), a value that
 * only the field's setting produces and its default would not, so a layer that drops or replaces
 * the field fails that field's test.
 */
import { describe, expect, it } from 'vitest';
import type { DestinationChange } from '../../src/core/destination-health.js';
import type { DrainTracer } from '../../src/core/drain-tracing.js';
import { isOutboxError } from '../../src/core/errors.js';
import { type Logger, silentLogger } from '../../src/core/ports.js';
import { budgetedTimeouts, createDrainer, type DrainerOptions } from '../../src/runtime/drainer.js';
import { positionText } from '../../src/store/claim-position.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import {
  BUDGET_MS,
  ENTRY_POINTS,
  newWorld,
  outcomesOfClaim,
  PROBE_DESTINATION,
  runLambdaKit,
  runNodeSchedule,
  runWorkersKit,
  subrequests,
  type World,
  type WorldOptions,
} from './drain-entry-points.js';

const database = useTestDatabase();

/**
 * The timing probe. A row is sent only if its send timeout, round-trip reserve and settle window
 * fit in what is left of its lease (and of the deadline) when a lane takes it. With a lease of
 * the whole budget and a first claim that takes 39 s of the clock, 21 s are left: the defaults
 * (15 s + 2 s + 5 ms) fit and the row is sent; a 25 s send timeout, a 9 s round-trip reserve or a
 * 9 s settle window do not, and the row goes back unsent. Every value is within what a minute's
 * budget allows (half of it per send, a sixth per round trip), so no budget lowers it.
 */
const SLOW_PROBE: { lease: Partial<DrainerOptions>; world: WorldOptions } = {
  lease: { leaseMs: BUDGET_MS },
  world: { slowFirstClaimMs: 39_000 },
};

/** Every field of a drainer's setup but what it drains and purges with. */
type SetupField = Exclude<keyof DrainerOptions, 'store' | 'senders' | 'purge' | 'purgeWith'>;

interface FieldProbe {
  /** What the setting should make the drain do, for the test's name. */
  effect: string;
  settings: () => Partial<DrainerOptions>;
  world?: WorldOptions;
  /** Drains in a row (the clock moves 200 s between them). Default 1. */
  runs?: number;
  expectSeen(world: World): void;
}

/** Where the resume probe's drain starts: its walk of the ordering keys after `order-9`. */
const RESUME_PROBE = positionText({ walkAfter: 'order-9', fromCursor: 0 });

/** A logger that keeps its info lines. */
function recordingLogger(): Logger & { infos: string[] } {
  const infos: string[] = [];
  return { ...silentLogger, info: (message) => infos.push(message), infos };
}

/** What the onDestinationChange probe's hook was called with, in its latest run. */
let hookChanges: DestinationChange[] = [];

/** The spans the tracer probe's tracer was asked for, in its latest run, by name and key. */
let tracedSpans: string[] = [];
const recordingTracer: DrainTracer = {
  startRun() {
    tracedSpans.push('run');
    const noted = (name: string) => () => {
      tracedSpans.push(name);
      return () => {};
    };
    return {
      claim: noted('claim'),
      settle: noted('settle'),
      send(message) {
        tracedSpans.push(`send ${message.key}`);
        return { traceContext: undefined, end: () => {} };
      },
      end: () => {},
    };
  },
};

/** A probe per setup field: a field added to the setup without one does not compile. */
const PROBES: Record<SetupField, FieldProbe> = {
  batchSize: {
    effect: 'claims 3 rows at a time',
    settings: () => ({ batchSize: 3 }),
    world: { messages: 5 },
    expectSeen: ({ seen }) => expect(seen.claims[0]?.request.limit).toBe(3),
  },
  concurrency: {
    effect: 'sends 2 at a time',
    settings: () => ({ concurrency: 2 }),
    world: { messages: 4, sender: { holdUntilInFlight: 2 } },
    expectSeen: ({ seen }) => expect(seen.mostInFlight).toBe(2),
  },
  leaseMs: {
    effect: 'leases its rows for 90 s',
    settings: () => ({ leaseMs: 90_000 }),
    expectSeen: ({ seen }) => expect(seen.claims[0]?.request.leaseMs).toBe(90_000),
  },
  sendTimeoutMs: {
    effect: 'does not start a 25 s send with 21 s of lease left',
    settings: () => ({ ...SLOW_PROBE.lease, sendTimeoutMs: 25_000 }),
    world: SLOW_PROBE.world,
    expectSeen: ({ seen }) =>
      expect(outcomesOfClaim(seen, 0)).toMatchObject([{ outcome: 'release' }]),
  },
  roundTripReserveMs: {
    effect: 'keeps 9 s back for a round trip',
    settings: () => ({ ...SLOW_PROBE.lease, roundTripReserveMs: 9_000 }),
    world: SLOW_PROBE.world,
    expectSeen: ({ seen }) =>
      expect(outcomesOfClaim(seen, 0)).toMatchObject([{ outcome: 'release' }]),
  },
  settleGroupMs: {
    effect: 'keeps 9 s back for the settle window',
    settings: () => ({ ...SLOW_PROBE.lease, settleGroupMs: 9_000 }),
    world: SLOW_PROBE.world,
    expectSeen: ({ seen }) =>
      expect(outcomesOfClaim(seen, 0)).toMatchObject([{ outcome: 'release' }]),
  },
  backoff: {
    effect: 'retries a failed send 7 s later',
    settings: () => ({ backoff: { baseMs: 7_000, capMs: 7_000 } }),
    world: { sender: { fail: true } },
    expectSeen: ({ seen, clock }) => {
      const [outcome] = outcomesOfClaim(seen, 0);
      expect(outcome?.outcome === 'retry' && outcome.at.getTime()).toBe(
        clock.now().getTime() + 7_000,
      );
    },
  },
  destinationHealth: {
    effect: 'settles with a pause after 2 failures in a row',
    settings: () => ({ destinationHealth: { failuresToPause: 2 } }),
    expectSeen: ({ seen }) =>
      expect(seen.settles[0]?.options?.health).toMatchObject({ failuresToPause: 2 }),
  },
  onDestinationChange: {
    effect: 'calls the hook when its failures pause the receiver',
    settings: () => {
      hookChanges = [];
      return {
        onDestinationChange: (change) => {
          hookChanges.push(change);
        },
        destinationHealth: { failuresToPause: 1 },
      };
    },
    world: { sender: { fail: true } },
    expectSeen: () =>
      expect(hookChanges).toEqual([
        expect.objectContaining({ destination: PROBE_DESTINATION, change: 'paused' }),
      ]),
  },
  deadHeadBlocks: {
    effect: 'claims past a dead head',
    settings: () => ({ deadHeadBlocks: false }),
    expectSeen: ({ seen }) => expect(seen.claims[0]?.request.deadHeadBlocks).toBe(false),
  },
  prefetch: {
    effect: 'claims again only once a send has ended (no claim ahead)',
    settings: () => ({ prefetch: false, concurrency: 2, batchSize: 3 }),
    world: { messages: 6, sender: { holdUntilInFlight: 2 } },
    expectSeen: ({ seen }) => expect(seen.claims[1]?.sendsEnded).toBeGreaterThanOrEqual(1),
  },
  settleGroupSize: {
    // With a long settle window, only a full group is written before the end.
    effect: 'writes its outcomes once two wait',
    settings: () => ({ settleGroupSize: 2, settleGroupMs: 9_000 }),
    world: { messages: 4, sender: { holdUntilInFlight: 4 } },
    expectSeen: ({ seen }) =>
      expect(seen.settles.map(({ requests }) => requests.length)).toEqual([2, 2]),
  },
  subrequestBudget: {
    effect: 'makes at most 5 subrequests',
    settings: () => ({ subrequestBudget: 5 }),
    world: { messages: 5 },
    expectSeen: ({ seen }) => {
      expect(seen.sendsStarted).toBeGreaterThan(0);
      expect(subrequests(seen)).toBeLessThanOrEqual(5);
    },
  },
  clock: {
    effect: 'claims at the time of the clock given',
    settings: () => ({}),
    expectSeen: ({ seen, clock }) =>
      expect(seen.claims[0]?.request.now.getTime()).toBe(clock.now().getTime()),
  },
  logger: {
    effect: 'reports to the logger given',
    settings: () => ({ logger: recordingLogger() }),
    expectSeen: ({ setup }) =>
      expect((setup.logger as ReturnType<typeof recordingLogger>).infos).toContain(
        'drain finished',
      ),
  },
  newId: {
    effect: 'claims with the ids given',
    settings: () => {
      let n = 0;
      return { newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}` };
    },
    expectSeen: ({ seen }) =>
      expect(seen.claims[0]?.request.claimToken).toBe('00000000-0000-4000-8000-000000000001'),
  },
  tracer: {
    effect: 'opens the run’s, claims’, settles’ and sends’ spans on the tracer given',
    settings: () => {
      tracedSpans = [];
      return { tracer: recordingTracer };
    },
    expectSeen: ({ seen }) => {
      expect(tracedSpans.slice(0, 2)).toEqual(['run', 'claim']);
      expect(tracedSpans).toContain('settle');
      expect(tracedSpans.filter((span) => span.startsWith('send '))).toHaveLength(
        seen.sendsStarted,
      );
    },
  },
  resume: {
    effect: 'starts its first claim where the position given says',
    settings: () => ({ resume: { at: RESUME_PROBE } }),
    expectSeen: ({ seen }) => expect(seen.claims[0]?.request.resumeAt).toBe(RESUME_PROBE),
  },
  random: {
    effect: 'draws the second retry’s jitter from the source given',
    settings: () => ({ random: () => 0.25, backoff: { baseMs: 100_000, capMs: 1_000_000 } }),
    world: { sender: { fail: true } },
    runs: 2,
    expectSeen: ({ seen, clock }) => {
      const last = seen.settles.at(-1)?.requests.at(-1)?.settlement;
      // Attempt 2: a base of 100 s plus a quarter of the next 100 s.
      expect(last?.outcome === 'retry' && last.at.getTime()).toBe(clock.now().getTime() + 125_000);
    },
  },
};

async function drainThrough(
  entry: (typeof ENTRY_POINTS)[number],
  settings: Partial<DrainerOptions>,
  options: WorldOptions = {},
  runs = 1,
): Promise<World> {
  const world = await newWorld(database, settings, options);
  for (let run = 0; run < runs; run++) {
    if (run > 0) world.clock.advance(200_000);
    await entry.run(world);
  }
  return world;
}

describe.each(ENTRY_POINTS)('through $name', (entry) => {
  const probes = Object.entries(PROBES).filter(
    ([field]) => !(field === 'subrequestBudget' && entry.ownSubrequestBudget),
  );
  it.each(
    probes.map(
      ([field, probe]) => [`${field} reaches drainOnce: the drain ${probe.effect}`, probe] as const,
    ),
  )('%s', async (_name, probe) => {
    const world = await drainThrough(entry, probe.settings(), probe.world, probe.runs);
    probe.expectSeen(world);
  });

  // The probes above can fail: at the defaults the same worlds show the default's effect.
  it('at the default timeouts, the slow first claim’s row is still sent', async () => {
    const { seen } = await drainThrough(entry, SLOW_PROBE.lease, SLOW_PROBE.world);
    expect(outcomesOfClaim(seen, 0)).toMatchObject([{ outcome: 'delivered' }]);
  });

  it('with claim ahead on (the default), the second claim starts while the first sends run', async () => {
    const { seen } = await drainThrough(
      entry,
      { concurrency: 2, batchSize: 3 },
      { messages: 6, sender: { holdUntilInFlight: 2 } },
    );
    expect(seen.claims[1]?.sendsEnded).toBe(0);
  });
});

/** Entry points that run drain after drain, each run twice in a row. */
const RUN_TWICE: { name: string; run(world: World): Promise<void> }[] = [
  {
    name: 'a drainer',
    run: async ({ setup }) => {
      const drain = createDrainer(setup);
      await drain({ budgetMs: BUDGET_MS });
      await drain({ budgetMs: BUDGET_MS });
    },
  },
  {
    name: 'the Workers kit',
    run: (world) => runWorkersKit(world, { subrequestBudget: 1_000, drainBudgetMs: BUDGET_MS }, 2),
  },
  { name: 'the Lambda kit', run: (world) => runLambdaKit(world, 2 * BUDGET_MS, {}, 2) },
];

describe.each(RUN_TWICE)('$name, run twice', (entry) => {
  it('starts its second run where its first one stopped', async () => {
    const world = await newWorld(database, {});
    await entry.run(world);
    // A run's first claim resumes only from a position an earlier run left.
    const [first, ...later] = world.seen.claims.map(({ request }) => request.resumeAt);
    expect(first).toBeUndefined();
    expect(later.length).toBeGreaterThan(1);
    expect(later.every((resumeAt) => resumeAt !== undefined)).toBe(true);
  });
});

/** Every scheduled entry point, made to purge in its next run. */
const SCHEDULED_PURGES: { name: string; run(world: World): Promise<void> }[] = [
  {
    name: 'the Workers kit on its purge cron',
    run: (world) => runWorkersKit(world, { subrequestBudget: 1_000, purgeCron: '* * * * *' }),
  },
  {
    name: 'the Lambda kit at its purge minute',
    run: (world) =>
      runLambdaKit(world, BUDGET_MS, { purgeMinute: world.clock.now().getUTCMinutes() }),
  },
  { name: 'the Node schedule on its first tick', run: (world) => runNodeSchedule(world) },
];

describe.each(SCHEDULED_PURGES)('the purge of $name', (entry) => {
  it("deletes by the setup's retention, at its clock, then runs its purgeWith", async () => {
    const purgedWith: Date[] = [];
    const world = await newWorld(database, {
      purge: { deliveredOlderThanMs: 60_000, deadOlderThanMs: null, limit: 7 },
      purgeWith: async (now) => {
        purgedWith.push(now);
        return {};
      },
    });
    await entry.run(world);
    expect(world.seen.purges).toEqual([
      expect.objectContaining({
        now: world.clock.now(),
        deliveredOlderThanMs: 60_000,
        deadOlderThanMs: undefined,
        limit: 7,
      }),
    ]);
    expect(purgedWith).toEqual([world.clock.now()]);
  });
});

describe('the budget rule', () => {
  const clock = fakeClock();

  it('keeps a send timeout and round-trip reserve that fit the budget, however much smaller than the defaults', () => {
    expect(
      budgetedTimeouts(30_000, clock, { sendTimeoutMs: 3_000, roundTripReserveMs: 300 }),
    ).toEqual({
      deadline: new Date(clock.now().getTime() + 30_000),
      sendTimeoutMs: 3_000,
      roundTripReserveMs: 300,
    });
  });

  it('lowers each to half and a sixth of the budget only when it does not fit, and fills in only what is unset', () => {
    expect(
      budgetedTimeouts(6_000, clock, { sendTimeoutMs: 5_000, roundTripReserveMs: 1_500 }),
    ).toMatchObject({ sendTimeoutMs: 3_000, roundTripReserveMs: 1_000 });
    expect(budgetedTimeouts(60_000, clock)).toMatchObject({
      sendTimeoutMs: 15_000,
      roundTripReserveMs: 2_000,
    });
    expect(budgetedTimeouts(6_000, clock)).toMatchObject({
      sendTimeoutMs: 3_000,
      roundTripReserveMs: 1_000,
    });
  });

  it('refuses by name a settle window the budget cannot fit, before claiming anything', async () => {
    const world = await newWorld(database, { settleGroupMs: 400 });
    const error = await createDrainer(world.setup)({ budgetMs: 1_000 }).catch((e: unknown) => e);
    expect(isOutboxError(error) && error.code).toBe('OUTBOX_CONFIGURATION');
    expect((error as Error).message).toBe(
      'createDrainer: a budget of 1000 ms cannot fit one claim, send and settle: sendTimeoutMs (500) + 2 x roundTripReserveMs (166) + settleGroupMs (400) = 1232 ms; lower settleGroupMs or give each drain more time',
    );
    expect(world.seen.claims).toHaveLength(0);
    // The same settle window fits a budget of three seconds.
    await createDrainer(world.setup)({ budgetMs: 3_000 });
    expect(outcomesOfClaim(world.seen, 0)).toMatchObject([{ outcome: 'delivered' }]);
  });

  it('refuses settings left under the old `defaults` field rather than drain without them', () => {
    const setup = {
      store: {},
      senders: {},
      defaults: { batchSize: 5 },
    } as unknown as DrainerOptions;
    expect(() => createDrainer(setup)).toThrow(/`defaults` is gone/);
  });
});
