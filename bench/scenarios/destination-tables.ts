/**
 * The tables scenario 13 claims from and settles on, each built through the outbox's own
 * statements: enqueue with a destination function, claims, and settles whose failures trip the
 * breaker as a drain's would. Each table has one connection of its own, so the CPU its backend
 * spends on a statement can be read from /proc (bench/lib/server-cost.ts).
 */
import pg from 'pg';
import { deliveryFacts } from '../../src/core/attempt-facts.js';
import {
  DEFAULT_DESTINATION_HEALTH,
  type DestinationHealthPolicy,
} from '../../src/core/destination-health.js';
import type { ClaimedMessage } from '../../src/core/outbox-store.js';
import { DEFAULT_BACKOFF_BASE_MS } from '../../src/core/retry-policy.js';
import { dead, delivered, retry } from '../../src/core/settlement.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import type { PostgresOutboxStore } from '../../src/store/postgres-store.js';
import { quoteSchema } from '../../src/store/schema-name.js';
import { backendCpuNs } from '../lib/server-cost.js';
import { BENCH_KIND, claimRequest, OUTBOX_SCHEMA } from '../systems/outbox-relay.js';
import { benchPayload, ENQUEUE_CHUNK } from '../systems/types.js';

/** The healthy backlog is spread over a few receivers, as an app with a few webhooks has. */
export const HEALTHY_DESTINATIONS = 4;

/**
 * The breaker's policy for the setup's settles: the default threshold (five failures in a row),
 * with a first pause of ten minutes (the default cap) instead of thirty seconds, so every pause
 * outlasts the measurement and no claim meets a half-open destination and sends a probe. The
 * claim reads only whether a pause is set (`paused_until IS NOT NULL`), not how long it lasts.
 */
export const SETUP_BREAKER: DestinationHealthPolicy = {
  ...DEFAULT_DESTINATION_HEALTH,
  pauseMs: DEFAULT_DESTINATION_HEALTH.maxPauseMs,
};

const messages = `${quoteSchema(OUTBOX_SCHEMA)}.messages`;
const destinations = `${quoteSchema(OUTBOX_SCHEMA)}.destinations`;

export function healthyDestination(index: number): string {
  return `https://healthy-${index % HEALTHY_DESTINATIONS}.example`;
}

/** The index-th of `count` paused destinations, in turn: consecutive messages differ. */
export function pausedDestination(index: number, count: number): string {
  return `https://paused-${String(index % count).padStart(5, '0')}.example`;
}

/** One connection to one table, with the outbox and store over it. */
export interface BenchTable {
  client: pg.Client;
  /** The backend serving `client`: whose CPU a statement cost. */
  backendPid: number;
  outbox: Outbox;
  store: PostgresOutboxStore;
  close(): Promise<void>;
}

/**
 * A connection to `url` with an outbox whose bench messages go to the destination their payload
 * names (`to`), or, with `recordDestination` false, to none, as the other scenarios' do.
 */
export async function openBenchTable(url: string, recordDestination = true): Promise<BenchTable> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', (error) => {
    process.stderr.write(`bench: database connection failed: ${error.message}\n`);
  });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const outbox = createOutbox({
    schema: OUTBOX_SCHEMA,
    kinds: { [BENCH_KIND]: true },
    ...(recordDestination
      ? { destinations: { [BENCH_KIND]: (payload) => (payload as { to: string }).to } }
      : {}),
  });
  return {
    client,
    backendPid: rows[0]!.pid,
    outbox,
    store: outbox.store(pgExecutor(client)),
    close: () => client.end(),
  };
}

/** Enqueues `count` messages, the i-th to `destinationOf(i)`, 1,000 per statement; their keys. */
export async function enqueueTo(
  table: BenchTable,
  count: number,
  destinationOf: (index: number) => string,
  maxAttempts?: number,
): Promise<string[]> {
  const executor = pgExecutor(table.client);
  const keys: string[] = [];
  for (let start = 0; start < count; start += ENQUEUE_CHUNK) {
    const size = Math.min(ENQUEUE_CHUNK, count - start);
    const batch = Array.from({ length: size }, (_, i) => ({
      kind: BENCH_KIND,
      payload: { ...benchPayload(start + i), to: destinationOf(start + i) },
      ...(maxAttempts === undefined ? {} : { maxAttempts }),
    }));
    keys.push(...(await table.outbox.enqueue(executor, batch)));
  }
  return keys;
}

/**
 * Runs `meanwhile`, then enqueues `count` messages (as {@link enqueueTo}) in a transaction whose
 * snapshot was taken before it: REPEATABLE READ, begun first, on a connection of its own. What
 * `meanwhile` commits (pauses opening) this enqueue does not see, so it parks nothing: the
 * messages are due at the transaction's start, as from an app whose transaction began before a
 * pause opened. (Under READ COMMITTED the window is one statement long.)
 */
export async function enqueueUnseeing<T>(
  url: string,
  meanwhile: () => Promise<T>,
  count: number,
  destinationOf: (index: number) => string,
): Promise<T> {
  const early = await openBenchTable(url);
  try {
    await early.client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await early.client.query('SELECT 1');
    const result = await meanwhile();
    await enqueueTo(early, count, destinationOf);
    await early.client.query('COMMIT');
    return result;
  } finally {
    await early.close();
  }
}

/** Keys per claim by key: one enqueue statement's worth, so each claim takes one chunk's keys. */
const KEYS_PER_CLAIM = ENQUEUE_CHUNK;

/** Claims exactly these messages, wherever they are in due order, as the after-commit kick does. */
export async function claimKeys(
  table: BenchTable,
  keys: readonly string[],
): Promise<ClaimedMessage[]> {
  const claimed: ClaimedMessage[] = [];
  for (let start = 0; start < keys.length; start += KEYS_PER_CLAIM) {
    const chunk = keys.slice(start, start + KEYS_PER_CLAIM);
    const result = await table.store.claim({ ...claimRequest(chunk.length), keys: chunk });
    claimed.push(...result.claimed);
  }
  if (claimed.length !== keys.length) {
    throw new Error(`claimed ${claimed.length} of ${keys.length} messages by key`);
  }
  return claimed;
}

/** What tripping the breaker cost: the settles that opened pauses beside the others. */
export interface BreakerTrip {
  settles: number;
  /** Settles that opened at least one pause, and how many they opened between them. */
  openingSettles: number;
  pausesOpened: number;
  /** Wall ms and backend CPU ms of the opening settles (each also parks its destinations' rows). */
  openingSettleMs: number[];
  openingSettleCpuMs: number[];
  otherSettleMs: number[];
  /** When the last failed message is due again (its one-second backoff). */
  retriedBy: number;
}

/**
 * Outcomes per settle in scenario 13: the drain's default group when the scenario was built (it
 * is a claim's worth since), kept so that its figures in docs/benchmarks.md stay comparable.
 */
export const SCENARIO_SETTLE_GROUP = 32;

/**
 * Fails `claimed` the way a drain's settle groups did: groups of 32 outcomes in claim order, each
 * a retryable failure with no Retry-After, due again after the first attempt's backoff (one
 * second). A destination pauses in the settle that brings its fifth failure, and that settle
 * parks its waiting messages among the first 10,000 due rows (`parked` in
 * src/store/destination-statements.ts).
 */
export async function tripBreaker(
  table: BenchTable,
  claimed: readonly ClaimedMessage[],
): Promise<BreakerTrip> {
  const trip: BreakerTrip = {
    settles: 0,
    openingSettles: 0,
    pausesOpened: 0,
    openingSettleMs: [],
    openingSettleCpuMs: [],
    otherSettleMs: [],
    retriedBy: 0,
  };
  for (let start = 0; start < claimed.length; start += SCENARIO_SETTLE_GROUP) {
    const group = claimed.slice(start, start + SCENARIO_SETTLE_GROUP);
    const now = new Date();
    const retryAt = new Date(now.getTime() + DEFAULT_BACKOFF_BASE_MS);
    trip.retriedBy = retryAt.getTime();
    const cpuBefore = backendCpuNs(table.backendPid);
    const startedAt = performance.now();
    const result = await table.store.settle(
      group.map((message) => ({
        message,
        settlement: retry(retryAt, 'HTTP 503 (bench: receiver down)', undefined, {
          retryAfterMs: null,
        }),
      })),
      now,
      { health: SETUP_BREAKER },
    );
    const elapsed = performance.now() - startedAt;
    const cpuAfter = backendCpuNs(table.backendPid);
    if (result.settled.length !== group.length) {
      throw new Error(`settled ${result.settled.length} of ${group.length} failures`);
    }
    trip.settles += 1;
    const opened = (result.destinations ?? []).filter((change) => change.change === 'paused');
    if (opened.length > 0) {
      trip.openingSettles += 1;
      trip.pausesOpened += opened.length;
      trip.openingSettleMs.push(elapsed);
      if (cpuBefore !== null && cpuAfter !== null) {
        trip.openingSettleCpuMs.push((cpuAfter - cpuBefore) / 1e6);
      }
    } else {
      trip.otherSettleMs.push(elapsed);
    }
  }
  return trip;
}

/**
 * The breaker's policy for {@link leaveHalfOpen}: the default threshold, a pause of one second
 * (the shortest the setup can wait out) so it is over before the claims are timed.
 */
const SHORT_BREAKER: DestinationHealthPolicy = { ...DEFAULT_DESTINATION_HEALTH, pauseMs: 1000 };

/**
 * Leaves `count` destinations half-open with nothing to probe, as a drain leaves a receiver
 * that stayed down until its last messages spent their attempts: five messages each on their
 * final attempt fail with a retryable error, so each is set aside as dead and its failure
 * still counts (outcomeOf in src/core/send-outcome.ts), the fifth pauses the destination, and
 * the pause runs out with no message left to send. Nothing closes such a destination but a
 * delivery to it or an operator's resume.
 */
export async function leaveHalfOpen(table: BenchTable, count: number): Promise<void> {
  const keys = await enqueueTo(
    table,
    count * DEFAULT_DESTINATION_HEALTH.failuresToPause,
    (index) => `https://gone-${String(index % count).padStart(5, '0')}.example`,
    1,
  );
  const claimed = await claimKeys(table, keys);
  let pausedUntil = 0;
  for (let start = 0; start < claimed.length; start += SCENARIO_SETTLE_GROUP) {
    const group = claimed.slice(start, start + SCENARIO_SETTLE_GROUP);
    const result = await table.store.settle(
      group.map((message) => ({
        message,
        settlement: dead('attempts exhausted (1/1): HTTP 503 (bench: receiver down)', undefined, {
          retryAfterMs: null,
        }),
      })),
      new Date(),
      { health: SHORT_BREAKER },
    );
    for (const change of result.destinations ?? []) {
      pausedUntil = Math.max(pausedUntil, change.pausedUntil?.getTime() ?? 0);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, pausedUntil - Date.now()) + 50));
}

/**
 * Gives each healthy destination a health row with no failures, as a drain leaves one after a
 * failure and then a delivery: the failure inserts the row (failures 1), the delivery resets it
 * (failures 0). The failed messages are due again a second later, like any retry.
 */
export async function recoverHealthyDestinations(table: BenchTable): Promise<void> {
  const failing = await enqueueTo(table, HEALTHY_DESTINATIONS, healthyDestination);
  const recovering = await enqueueTo(table, HEALTHY_DESTINATIONS, healthyDestination);
  const now = new Date();
  await table.store.settle(
    (await claimKeys(table, failing)).map((message) => ({
      message,
      settlement: retry(new Date(now.getTime() + DEFAULT_BACKOFF_BASE_MS), 'HTTP 503', undefined, {
        retryAfterMs: null,
      }),
    })),
    now,
  );
  await table.store.settle(
    (await claimKeys(table, recovering)).map((message) => ({
      message,
      settlement: delivered(deliveryFacts(1, undefined)),
    })),
    new Date(),
  );
  const { rows } = await table.client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${destinations}
     WHERE failures = 0 AND paused_until IS NULL AND recovered_at IS NOT NULL`,
  );
  if (rows[0]!.n !== HEALTHY_DESTINATIONS) {
    throw new Error(`${rows[0]!.n} of ${HEALTHY_DESTINATIONS} healthy destinations recovered`);
  }
}

/** Where a table's pending messages sit, counted after it is built. */
export interface BacklogShape {
  /** Destinations with a pause set, open or half-open: the claim passes over their messages. */
  pausedDestinations: number;
  /** Of those, the ones whose pause has ended: the claim looks for a probe for each. */
  halfOpen: number;
  /** Pending messages of paused destinations that are due now, ahead of every healthy one. */
  pausedDueAhead: number;
  /** Due now, anywhere in due order. */
  pausedDue: number;
  /** Moved to their pause's end. */
  pausedParked: number;
  healthyDue: number;
}

export async function backlogShape(table: BenchTable): Promise<BacklogShape> {
  const { rows } = await table.client.query<Record<keyof BacklogShape, number>>(
    `WITH paused AS (SELECT destination, paused_until FROM ${destinations}
       WHERE paused_until IS NOT NULL),
     pending AS (
       SELECT m.id, m.due_at, p.destination IS NOT NULL AS paused,
         m.due_at = p.paused_until AS parked
       FROM ${messages} m LEFT JOIN paused p ON p.destination = m.destination
       WHERE m.state = 'pending'),
     first_healthy AS (
       SELECT due_at, id FROM pending WHERE NOT paused AND due_at <= now()
       ORDER BY due_at, id LIMIT 1)
     SELECT (SELECT count(*) FROM paused)::int AS "pausedDestinations",
       (SELECT count(*) FROM paused WHERE paused_until <= now())::int AS "halfOpen",
       count(*) FILTER (WHERE paused AND due_at <= now()
         AND (due_at, id) < (SELECT due_at, id FROM first_healthy))::int AS "pausedDueAhead",
       count(*) FILTER (WHERE paused AND due_at <= now())::int AS "pausedDue",
       count(*) FILTER (WHERE parked)::int AS "pausedParked",
       count(*) FILTER (WHERE NOT paused AND due_at <= now())::int AS "healthyDue"
     FROM pending`,
  );
  return rows[0]!;
}
