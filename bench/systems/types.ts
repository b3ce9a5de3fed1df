/**
 * What the bench needs from each system it compares: install it, enqueue, drain, claim once,
 * keep history the way it keeps finished work, purge, and name its tables. One adapter per
 * system lives beside this file; scenarios only ever talk to this interface.
 */
import type { SendPayload } from '../lib/receiver.js';

/** The columns of the results table, in order. */
export const SYSTEM_IDS = ['outbox-relay', 'pg-boss', 'graphile-worker', 'sql-floor'] as const;
export type SystemId = (typeof SYSTEM_IDS)[number];

export interface EnqueueOptions {
  /**
   * Spread the messages over this many ordering keys, round robin (outbox-relay `orderingKey`,
   * graphile-worker `queueName`): each key's messages go out one at a time, in order. Only the
   * systems in ORDERING_SYSTEMS take it; the others throw.
   */
  orderingKeys?: number;
}

/** The systems with messages that go out one at a time per key, in order. */
export const ORDERING_SYSTEMS = [
  'outbox-relay',
  'graphile-worker',
] as const satisfies readonly SystemId[];

/** The ordering key (or queue name) of message `index` of `keys`. */
export function orderingKeyOf(index: number, keys: number): string {
  return `key-${index % keys}`;
}

/** For the systems that have no ordering keys. */
export function refuseOrderingKeys(system: string, options: EnqueueOptions | undefined): void {
  if (options?.orderingKeys !== undefined) {
    throw new Error(`${system} adapter: no ordering keys (see ORDERING_SYSTEMS)`);
  }
}

export interface DrainRequest {
  /** Messages due when the drain starts; it is done when all are delivered. */
  expected: number;
  /** Rows per claim (pg-boss `batchSize`, graphile-worker `localQueue.size`). */
  batchSize: number;
  /** Sends in flight at once (graphile-worker `concurrency`). */
  concurrency: number;
  send: SendPayload;
  /** Give up after this long: only polling workers that cannot keep up ever reach it. */
  timeLimitMs: number;
  /**
   * `run-once`: drain until nothing is due, then return (drainOnce, graphile-worker runOnce, a
   * pg-boss fetch/complete loop). `worker`: the system's long-running polling worker (pg-boss
   * `work()`), stopped once everything is delivered. Systems without a separate worker mode
   * treat both the same.
   */
  style?: 'run-once' | 'worker';
}

export interface DrainResult {
  /** Messages whose send succeeded and whose completion the system recorded. */
  delivered: number;
  elapsedMs: number;
}

/** One open connection to a system installed in one database. */
export interface QueueHandle {
  /** Writes `count` due messages, 1,000 per statement (each system's bulk insert). */
  enqueue(count: number, options?: EnqueueOptions): Promise<void>;
  drain(request: DrainRequest): Promise<DrainResult>;
  /** Messages not finished yet (due, or claimed and not settled). */
  unfinished(): Promise<number>;
  /** Claims up to `limit` due messages in the system's own claim statement; leaves them claimed. */
  claim(limit: number): Promise<number>;
  /**
   * Adds `rows` finished messages, in ONE `INSERT ... SELECT generate_series` shaped like the
   * rows this system keeps after completing work. Absent when the system keeps none.
   */
  insertHistory?(rows: number): Promise<void>;
  /** Runs the system's own retention/maintenance, set to remove finished rows promptly. */
  purge(): Promise<void>;
  /** The tables holding this system's jobs, schema-qualified, for size measurements. */
  tables(): Promise<string[]>;
  close(): Promise<void>;
}

export interface QueueSystem {
  id: SystemId;
  /**
   * What its template database and warm-up are keyed by, when not its id: another build of a
   * system (BENCH_BASELINE) shares the id's column but not its schema.
   */
  databaseKey?: string;
  /** Name and version as printed, e.g. "pg-boss 10.4.2". */
  label: string;
  version: string;
  /** The settings the bench uses and why, written into the results and the doc. */
  settings: Record<string, string>;
  /** Creates this system's schema in an empty database. */
  install(url: string): Promise<void>;
  open(url: string): Promise<QueueHandle>;
}

/** The payload every system carries: small JSON, the same for all. */
export function benchPayload(index: number): { orderId: number; event: string; note: string } {
  return { orderId: index, event: 'order.created', note: 'outbox-relay benchmark message' };
}

/** Rows per enqueue statement: the most `outbox.enqueue` accepts in one call. */
export const ENQUEUE_CHUNK = 1000;
