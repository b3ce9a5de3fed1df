/** Fixtures for drain tests: a movable clock, seeded randomness, recording senders. */

import type { DrainOptions, DrainReport, StopReason } from '../../src/core/drain-settings.js';
import type {
  ClaimedMessage,
  ClaimRequest,
  ClaimResult,
  OutboxStore,
} from '../../src/core/outbox-store.js';
import type { Clock, SqlExecutor } from '../../src/core/ports.js';
import type { OutboundMessage, Sender } from '../../src/core/sender.js';
import { delivered } from '../../src/core/settlement.js';
import { createOutbox, type Outbox, type OutboxOptions } from '../../src/outbox.js';
import { dueClaimNamed } from '../../src/store/due-claim-shape.js';
import type { PostgresOutboxStore } from '../../src/store/postgres-store.js';
import type { Driver } from './drivers.js';

export interface FakeClock extends Clock {
  advance(ms: number): void;
  set(time: Date): void;
}

/**
 * Starts a little ahead of real time: enqueue stamps due_at with the database clock, so a fake
 * clock behind it would find nothing due.
 */
export function fakeClock(start = new Date(Date.now() + 1000)): FakeClock {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(ms) {
      now += ms;
    },
    set(time) {
      now = time.getTime();
    },
  };
}

/**
 * Issue 25's drain: a 1 s lease and claims of 2, one lane, no claim ahead. A send (300 ms), its
 * group's wait and a settle (100 ms) fit the lease with 595 ms to spare; under a budget its
 * outcomes once waited seconds for a full group, and another drain sent them again.
 */
export const SHORT_LEASE = {
  batchSize: 2,
  concurrency: 1,
  leaseMs: 1_000,
  sendTimeoutMs: 300,
  roundTripReserveMs: 100,
  prefetch: false,
} as const satisfies Partial<DrainOptions>;

/** Deterministic [0, 1) numbers, so a "random" failure pattern repeats run to run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RecordingSender {
  send: Sender;
  /** Every call, in the order sends started. */
  calls: OutboundMessage[];
  /** Keys of sends that succeeded, in completion order. */
  delivered: string[];
  timesSent(key: string): number;
}

/** A sender that records every call; `behave` decides each outcome (default: succeed). */
export function recordingSender(
  behave: (message: OutboundMessage, signal: AbortSignal) => Promise<void> | void = () => {},
): RecordingSender {
  const calls: OutboundMessage[] = [];
  const delivered: string[] = [];
  const counts = new Map<string, number>();
  return {
    calls,
    delivered,
    timesSent: (key) => counts.get(key) ?? 0,
    async send(message, signal) {
      calls.push(message);
      counts.set(message.key, (counts.get(message.key) ?? 0) + 1);
      await behave(message, signal);
      delivered.push(message.key);
    },
  };
}

/** Resolves after `ms`, or rejects when the signal aborts: a well-behaved slow sender. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

let schemaCounter = 0;

/** A freshly migrated outbox in its own schema, so tests in one database do not see each other. */
export async function freshOutbox(
  driver: Driver,
  options: Pick<OutboxOptions, 'keepDelivered' | 'destinations' | 'kinds' | 'traceContext'> = {},
): Promise<{ outbox: Outbox; store: PostgresOutboxStore; schema: string }> {
  schemaCounter += 1;
  const schema = `t_${driver.name.replace('-', '_')}_${schemaCounter}_${process.pid}`;
  const { kinds, ...rest } = options;
  const outbox = createOutbox({ schema, kinds: { 'test.kind': true, ...kinds }, ...rest });
  await outbox.migrate(driver.db);
  return { outbox, store: outbox.store(driver.db), schema };
}

/** The report of a drain that delivered `delivered` messages in one claim and one settle. */
export function drainReport(stopReason: StopReason, delivered = 1): DrainReport {
  return {
    claimed: delivered,
    delivered,
    retried: 0,
    dead: 0,
    released: 0,
    stale: 0,
    batches: 1,
    settles: 1,
    roundTrips: 2,
    sends: delivered,
    senderSubrequests: 0,
    durationMs: 1,
    stopReason,
  };
}

/**
 * What a drain would ask a store for when it claims `test.kind` rows by hand: due a second from
 * now, a fresh token, a minute's lease; `overrides` change any of it.
 */
export function claimRequest(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    now: new Date(Date.now() + 1000),
    claimToken: crypto.randomUUID(),
    limit: 10,
    leaseMs: 60_000,
    deadHeadBlocks: true,
    kinds: ['test.kind'],
    ...overrides,
  };
}

/** A claim of 10 with a share of 5 (a walk of it visits two keys), after `resumeAt` if given. */
export function claimOf10(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return claimRequest({ limit: 10, keyShare: 5, ...overrides });
}

/** The message keys of a claim's rows, in the order the claim returned them. */
export const keysTaken = (result: ClaimResult) => result.claimed.map((message) => message.key);

/** Records every message of `claimed` as delivered, now. */
export function settleDelivered(store: OutboxStore, claimed: readonly ClaimedMessage[]) {
  return store.settle(
    claimed.map((message) => ({ message, settlement: delivered() })),
    new Date(),
  );
}

/**
 * Readies `store` so that its next due claim walks the ordering keys, as a drain's next claim
 * does once one has said a keyed message waits: a store's first claim leaves keyed rows out
 * (src/store/due-claim.ts). This claim asks for no kind, so it takes nothing. Call it once the
 * keyed messages are enqueued.
 */
export async function walkKeysNext(store: OutboxStore): Promise<void> {
  const { claimed } = await store.claim(claimRequest({ kinds: [] }));
  if (claimed.length > 0) throw new Error('walkKeysNext: a claim for no kind took a message');
}

/** How many claims a store has had on the wire at once. */
export interface ClaimsSeen {
  onWire: number;
  mostOnWire: number;
}

/**
 * The store, with the claims on the wire at once counted, and each claim held back `delayMs`
 * before it reaches the database (an injected round trip, as from a far region).
 */
export function claimCountingStore(
  store: OutboxStore,
  delayMs = 0,
): { seen: ClaimsSeen; store: OutboxStore } {
  const seen: ClaimsSeen = { onWire: 0, mostOnWire: 0 };
  const watched: OutboxStore = {
    settleFits: (requests) => store.settleFits(requests),
    async claim(request) {
      seen.onWire += 1;
      seen.mostOnWire = Math.max(seen.mostOnWire, seen.onWire);
      try {
        if (delayMs > 0) await sleep(delayMs);
        return await store.claim(request);
      } finally {
        seen.onWire -= 1;
      }
    },
    settle: (requests, now, options) => store.settle(requests, now, options),
  };
  return { seen, store: watched };
}

/** `db`, showing `watch` each statement before it runs (a store over it: what its claims ran). */
export function watchedExecutor(
  db: SqlExecutor,
  watch: (text: string, params: unknown[] | undefined) => void,
): SqlExecutor {
  return {
    query: (text, params) => {
      watch(text, params);
      return db.query(text, params);
    },
  };
}

/**
 * A store of `outbox` over `db` that notes the way each of its due claims took keyed rows (walk,
 * heads, ...) and keeps the last claim's text and parameters, to plan it again.
 */
export function watchedClaims(outbox: Outbox, db: SqlExecutor) {
  const ways: string[] = [];
  let last: { text: string; params: unknown[] } | undefined;
  const store = outbox.store(
    watchedExecutor(db, (text, params = []) => {
      const claim = dueClaimNamed(text);
      if (claim === undefined) return;
      ways.push(claim.keyed);
      last = { text, params };
    }),
  );
  return { store, ways, lastClaim: () => last! };
}
