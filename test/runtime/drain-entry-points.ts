/**
 * Every way a runtime builds a drain from a user's setup: the one builder and each entry point
 * built on it (the kits, the kick, the admin's `POST /drain`, the schedule and the loop). Each
 * runs over real PostgreSQL with a store that records what the drain asks of it, a sender that
 * records what the drain hands it, and a clock the test moves. What a test reads there is what
 * `drainOnce` made of its options: nothing stands in for the drain.
 */
import { vi } from 'vitest';
import { outboxAdmin } from '../../src/admin/index.js';
import type {
  ClaimRequest,
  OutboxStore,
  SettleOptions,
  SettleRequest,
} from '../../src/core/outbox-store.js';
import { type BatchSqlExecutor, type Logger, silentLogger } from '../../src/core/ports.js';
import type { PurgeRequest, PurgeStore } from '../../src/core/purge.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import {
  DEFAULT_SAFETY_MARGIN_MS,
  type LambdaScheduledOptions,
  lambdaScheduledHandler,
} from '../../src/runtime/aws-lambda.js';
import {
  WORKERS_PAID_SUBREQUESTS,
  type WorkerExecutionContext,
  type WorkersScheduledOptions,
  workersScheduledHandler,
} from '../../src/runtime/cloudflare-workers.js';
import { runDrainLoop } from '../../src/runtime/drain-loop.js';
import {
  createDrainer,
  type DrainerOptions,
  runScheduledDrain,
} from '../../src/runtime/drainer.js';
import { type KickOptions, kickAfterCommit } from '../../src/runtime/kick.js';
import {
  type DrainSchedule,
  type DrainScheduleOptions,
  startDrainSchedule,
} from '../../src/runtime/node.js';
import type { TestDatabase } from '../support/database.js';
import { type FakeClock, fakeClock } from '../support/drain-fixtures.js';
import { waitFor } from '../support/wait-for.js';

export const KIND = 'probe.kind';
/** Every probe message goes to one receiver, so failures pause it. */
export const PROBE_DESTINATION = 'https://probe.example';
const outbox = createOutbox({
  kinds: { [KIND]: true },
  destinations: { [KIND]: () => PROBE_DESTINATION },
});

/**
 * A minute: the most the admin's `POST /drain` takes, given to every entry point so they all
 * drain in the same time (a send may get up to 30 s of it, a round trip up to 10 s).
 */
export const BUDGET_MS = 60_000;

const ADMIN_TOKEN = 'drain-builder-admin-token-0123456789';

/** What the drain did, as seen from its ports. */
export interface Seen {
  /** Every claim, with how many sends had ended when it started. */
  claims: { request: ClaimRequest; sendsEnded: number }[];
  settles: { requests: readonly SettleRequest[]; now: Date; options?: SettleOptions }[];
  /** Every purge the store was asked for. */
  purges: PurgeRequest[];
  sendsStarted: number;
  sendsEnded: number;
  inFlight: number;
  mostInFlight: number;
  /** What a failure an entry point reports instead of throwing (a kick's, a schedule's). */
  failures: unknown[];
}

export interface SenderPlan {
  /** Every send fails (retryable). */
  fail?: boolean;
  /**
   * Sends wait until this many have been in flight at once (with a deadline), then one turn
   * more, so every send a drain starts together is in flight together.
   */
  holdUntilInFlight?: number;
}

/** A drain's world: its clock, what it was seen doing, and the keys of what was enqueued. */
export interface World {
  /** The test database, as the admin reads it. */
  db: BatchSqlExecutor;
  clock: FakeClock;
  seen: Seen;
  keys: string[];
  /** The setup an entry point is given: the recording store and sender, the clock, `settings`. */
  setup: DrainerOptions;
}

export interface WorldOptions {
  messages?: number;
  sender?: SenderPlan;
  /** Moves the clock on by this much as the first claim returns: a slow claim's round trip. */
  slowFirstClaimMs?: number;
}

/** Empties the outbox, enqueues `messages` and builds the recording setup around `settings`. */
export async function newWorld(
  database: TestDatabase,
  settings: Partial<DrainerOptions>,
  options: WorldOptions = {},
): Promise<World> {
  const db = pgExecutor(database.pool);
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.destinations',
  );
  const keys = await outbox.enqueue(
    db,
    Array.from({ length: options.messages ?? 1 }, (_, n) => ({ kind: KIND, payload: { n } })),
  );
  const clock = fakeClock();
  const seen: Seen = {
    claims: [],
    settles: [],
    purges: [],
    sendsStarted: 0,
    sendsEnded: 0,
    inFlight: 0,
    mostInFlight: 0,
    failures: [],
  };
  const real = outbox.store(db);
  const store: OutboxStore & PurgeStore = {
    settleFits: (requests) => real.settleFits(requests),
    async claim(request) {
      seen.claims.push({ request, sendsEnded: seen.sendsEnded });
      const result = await real.claim(request);
      if (seen.claims.length === 1 && options.slowFirstClaimMs) {
        clock.advance(options.slowFirstClaimMs);
      }
      return result;
    },
    async settle(requests, now, options) {
      seen.settles.push({ requests: [...requests], now, options });
      return real.settle(requests, now, options);
    },
    purge: (request) => {
      seen.purges.push(request);
      return real.purge(request);
    },
  };
  const send = recordingSend(seen, options.sender ?? {});
  return { db, clock, seen, keys, setup: { store, senders: { [KIND]: send }, clock, ...settings } };
}

function recordingSend(seen: Seen, plan: SenderPlan): Sender {
  return async () => {
    seen.sendsStarted += 1;
    seen.inFlight += 1;
    seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight);
    try {
      const hold = plan.holdUntilInFlight;
      if (hold !== undefined) {
        // Once as many were in flight at once, every send goes on: a barrier, not a turnstile.
        await waitFor(`${hold} sends in flight`, () => seen.mostInFlight >= hold, 5_000);
        // One more turn, so a lane the drain should not have had could start its send too.
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (plan.fail) throw new Error('the receiver answered 503');
    } finally {
      seen.inFlight -= 1;
      seen.sendsEnded += 1;
    }
  };
}

/** The outcomes written for the rows of the `index`th claim. */
export function outcomesOfClaim(seen: Seen, index: number): SettleRequest['settlement'][] {
  const token = seen.claims[index]?.request.claimToken;
  return seen.settles
    .flatMap(({ requests }) => requests)
    .filter((request) => request.message.claimToken === token)
    .map((request) => request.settlement);
}

export interface EntryPoint {
  name: string;
  /** Whether the entry point has a subrequest budget of its own, which wins over the setup's. */
  ownSubrequestBudget?: boolean;
  /** One drain through this entry point; rejects with whatever failure it met. */
  run(world: World): Promise<void>;
}

/** A logger that keeps what an entry point reports instead of throwing. */
function failureLogger(world: World): Logger {
  const keep = (_message: string, fields?: Record<string, unknown>) => {
    world.seen.failures.push(fields?.error ?? _message);
  };
  return { ...silentLogger, warn: keep, error: keep };
}

function executionContext(pending: Promise<unknown>[] = []): WorkerExecutionContext {
  return {
    waitUntil: (promise) => {
      pending.push(promise);
    },
    passThroughOnException: () => {},
    props: {},
  };
}

/** Runs `work` with the kits' one JSON line per run kept off the test output. */
async function quietly(work: () => Promise<unknown>): Promise<void> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  const error = vi.spyOn(console, 'error').mockImplementation(() => {});
  try {
    await work();
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** Cron invocations of one `workersScheduledHandler`, one after another (never the purge cron). */
export function runWorkersKit(
  world: World,
  options: WorkersScheduledOptions,
  invocations = 1,
): Promise<void> {
  const handler = workersScheduledHandler(() => world.setup, { purgeCron: false, ...options });
  return quietly(async () => {
    for (let run = 0; run < invocations; run++) {
      await handler(
        { cron: '* * * * *', scheduledTime: world.clock.now().getTime() },
        {},
        executionContext(),
      );
    }
  });
}

/**
 * Invocations of one `lambdaScheduledHandler`, one after another, each with `remainingMs` left as
 * it starts, on the clock.
 */
export function runLambdaKit(
  world: World,
  remainingMs: number,
  options: LambdaScheduledOptions = {},
  invocations = 1,
): Promise<void> {
  const handler = lambdaScheduledHandler(() => world.setup, { purgeMinute: false, ...options });
  return quietly(async () => {
    for (let run = 0; run < invocations; run++) {
      const startedAt = world.clock.now().getTime();
      const remaining = () => remainingMs - (world.clock.now().getTime() - startedAt);
      await handler(
        { time: new Date(startedAt).toISOString() },
        { getRemainingTimeInMillis: remaining },
      );
    }
  });
}

/**
 * One tick of `startDrainSchedule` (its drain, and its purge unless `purgeIntervalMs: false`),
 * then a stop; rejects with the tick's failure.
 */
export async function runNodeSchedule(
  world: World,
  options: Pick<DrainScheduleOptions, 'purgeIntervalMs'> = {},
): Promise<void> {
  const purges = options.purgeIntervalMs !== false;
  const schedule: DrainSchedule = startDrainSchedule(world.setup, {
    ...options,
    budgetMs: BUDGET_MS,
    intervalMs: 60_000,
    logRuns: false,
    onError: ({ error }) => {
      world.seen.failures.push(error);
      void schedule.stop();
    },
    onTick: () => {
      if (!purges) void schedule.stop();
    },
    onPurge: () => void schedule.stop(),
  });
  await schedule.stopped;
  if (world.seen.failures.length > 0) throw world.seen.failures[0];
}

/** A kick of every enqueued key, awaited as Workers' `waitUntil` would; rejects if it failed. */
export async function runKick(
  world: World,
  options: Omit<KickOptions, 'logger'> = {},
): Promise<void> {
  const pending: Promise<unknown>[] = [];
  kickAfterCommit(
    { executionCtx: executionContext(pending) },
    createDrainer(world.setup),
    world.keys,
    { ...options, logger: failureLogger(world) },
  );
  await Promise.all(pending);
  if (world.seen.failures.length > 0) throw world.seen.failures[0];
}

/** An operator's `POST /drain` with `body`, through the mounted admin; rejects unless 200. */
export async function postDrain(world: World, body: Record<string, unknown>): Promise<void> {
  const admin = outboxAdmin({
    store: outbox.store(world.db),
    token: ADMIN_TOKEN,
    drain: createDrainer(world.setup),
  });
  const response = await admin.request('/drain', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) {
    throw new Error(`POST /drain answered ${response.status}: ${await response.text()}`);
  }
}

/** Every subrequest the drain made: its claims, its settles and its sends. */
export function subrequests(seen: Seen): number {
  return seen.claims.length + seen.settles.length + seen.sendsStarted;
}

export const ENTRY_POINTS: readonly EntryPoint[] = [
  {
    name: 'createDrainer',
    run: async ({ setup }) => {
      await createDrainer(setup)({ budgetMs: BUDGET_MS });
    },
  },
  {
    name: 'createDrainer with no budget (outbox drain --once)',
    run: async ({ setup }) => {
      await createDrainer(setup)({});
    },
  },
  {
    name: 'runScheduledDrain',
    run: async ({ setup }) => {
      await runScheduledDrain(setup, { budgetMs: BUDGET_MS });
    },
  },
  {
    name: 'the Workers kit',
    ownSubrequestBudget: true,
    run: (world) =>
      runWorkersKit(world, {
        subrequestBudget: WORKERS_PAID_SUBREQUESTS,
        drainBudgetMs: BUDGET_MS,
      }),
  },
  {
    name: 'the Lambda kit',
    run: (world) => runLambdaKit(world, BUDGET_MS + DEFAULT_SAFETY_MARGIN_MS),
  },
  {
    name: 'the kick',
    run: (world) => runKick(world, { budgetMs: BUDGET_MS }),
  },
  {
    name: "the admin's POST /drain",
    run: (world) => postDrain(world, { budgetMs: BUDGET_MS }),
  },
  {
    name: 'the Node schedule',
    run: (world) => runNodeSchedule(world, { purgeIntervalMs: false }),
  },
  {
    name: 'runDrainLoop',
    run: async ({ setup }) => {
      const stop = new AbortController();
      let failure: unknown;
      await runDrainLoop({
        drain: createDrainer(setup),
        budgetMs: BUDGET_MS,
        intervalMs: 60_000,
        signal: stop.signal,
        onTick: () => stop.abort(),
        onError: ({ error }) => {
          failure ??= error;
          stop.abort();
        },
      });
      if (failure !== undefined) throw failure;
    },
  },
];
