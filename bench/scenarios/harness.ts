/**
 * The pieces every scenario shares: fresh databases cloned from per-system templates, a
 * one-time warm-up per system, and `measureDrain`, which times one enqueue-then-drain run.
 */
import pg from 'pg';
import type { BenchConfig } from '../lib/config.js';
import type { BenchPostgres } from '../lib/postgres.js';
import { noopSend, type SendPayload } from '../lib/receiver.js';
import type { QueueHandle, QueueSystem } from '../systems/types.js';
import type { FreshDatabase, ScenarioContext } from './types.js';

/** Messages in each system's one warm-up drain. */
const WARM_UP_MESSAGES = 2000;

export function createScenarioContext(
  config: BenchConfig,
  postgres: BenchPostgres,
  progress: (message: string) => void,
): ScenarioContext {
  const templates = new Map<string, Promise<string>>();
  const warmedUp = new Set<string>();
  let databases = 0;

  const templateFor = (system: QueueSystem): Promise<string> => {
    let template = templates.get(dbKey(system));
    if (!template) {
      const name = `bench_${dbKey(system)}_template`;
      template = (async () => {
        const url = await postgres.createDatabase(name);
        await system.install(url);
        return name;
      })();
      templates.set(dbKey(system), template);
    }
    return template;
  };

  const context: ScenarioContext = {
    config,
    postgres,
    progress,
    async freshDatabase(system): Promise<FreshDatabase> {
      const template = await templateFor(system);
      databases += 1;
      const name = `bench_${dbKey(system)}_${databases}`;
      const url = await postgres.createDatabase(name, template);
      const handle = await system.open(url);
      return {
        name,
        url,
        handle,
        async dispose() {
          await handle.close();
          await postgres.dropDatabase(name);
        },
      };
    },
    async warmUp(system) {
      if (warmedUp.has(dbKey(system))) return;
      warmedUp.add(dbKey(system));
      progress(`warm-up: ${system.label}, ${WARM_UP_MESSAGES} messages`);
      await measureDrain(context, system, {
        messages: WARM_UP_MESSAGES,
        batchSize: 100,
        concurrency: 10,
        send: noopSend,
      });
    },
    async vacuumAnalyze(url, tables) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const table of tables) await client.query(`VACUUM ANALYZE ${table}`);
      } finally {
        await client.end();
      }
    },
  };
  return context;
}

function dbKey(system: QueueSystem): string {
  return (system.databaseKey ?? system.id).replace(/[^a-z0-9]/g, '_');
}

export interface DrainCase {
  messages: number;
  batchSize: number;
  concurrency: number;
  send: SendPayload;
  style?: 'run-once' | 'worker';
  /** Polling workers that cannot keep up are cut off here and rated on what they delivered. */
  timeLimitMs?: number;
  /** Spread the messages over this many ordering keys (see EnqueueOptions). */
  orderingKeys?: number;
  /**
   * Of `messages`, this many carry no ordering key, enqueued in turns with the keyed ones
   * (MIXED_TURN of each at a time), so both kinds lie side by side in due order. Default 0.
   */
  withoutKeys?: number;
}

/**
 * Messages per turn while keyed and unkeyed messages take turns (withoutKeys; also
 * bench:statements' mixed cases).
 */
export const MIXED_TURN = 50;

export interface DrainMeasurement {
  /** Delivered messages per second of drain time. */
  drainRate: number;
  /** Messages per second of enqueue time (1,000 per statement). */
  enqueueRate: number;
  delivered: number;
  /**
   * WAL the server wrote during the drain, per delivered message: every tuple version, index
   * entry and commit the system's claim and settle cost, free of timing noise. The bench's
   * server runs nothing else meanwhile (autovacuum aside).
   */
  walBytesPerMessage: number;
  /**
   * CPU time of every PostgreSQL process during the drain, per delivered message, in
   * microseconds (bench/lib/server-cost.ts); NaN where /proc cannot be read.
   */
  serverCpuMicrosPerMessage: number;
  /**
   * CPU time of this process (the bench, where every system's drain runs) during the drain, per
   * delivered message, in microseconds: the client side of the same work, as steady as the
   * server's because it counts work done, not time waited.
   */
  clientCpuMicrosPerMessage: number;
  /** True when the time limit ended the drain before everything was delivered. */
  cutOff: boolean;
}

/** Generous: a run-once drain that needs this long has a bug, not a slow day. */
const DEFAULT_DRAIN_LIMIT_MS = 10 * 60 * 1000;

/**
 * One run on a fresh database: enqueue `messages` (timed), VACUUM ANALYZE, drain (timed), and
 * check every message was delivered and nothing is left unfinished, unless the time limit cut
 * a polling worker off.
 */
export async function measureDrain(
  context: ScenarioContext,
  system: QueueSystem,
  drainCase: DrainCase,
): Promise<DrainMeasurement> {
  const database = await context.freshDatabase(system);
  try {
    const { handle } = database;
    const enqueueStartedAt = performance.now();
    await enqueueCase(handle, drainCase);
    const enqueueMs = performance.now() - enqueueStartedAt;
    await context.vacuumAnalyze(database.url, await handle.tables());

    const timeLimitMs = drainCase.timeLimitMs ?? DEFAULT_DRAIN_LIMIT_MS;
    const before = await context.postgres.cost.snapshot();
    const clientBefore = process.cpuUsage();
    const result = await handle.drain({
      expected: drainCase.messages,
      batchSize: drainCase.batchSize,
      concurrency: drainCase.concurrency,
      send: drainCase.send,
      timeLimitMs,
      style: drainCase.style,
    });
    const client = process.cpuUsage(clientBefore);
    const cost = await context.postgres.cost.since(before);
    const cutOff = result.delivered < drainCase.messages;
    if (cutOff && drainCase.timeLimitMs === undefined) {
      throw new Error(
        `${system.label}: delivered ${result.delivered} of ${drainCase.messages} messages`,
      );
    }
    if (!cutOff) {
      const left = await handle.unfinished();
      if (left !== 0) throw new Error(`${system.label}: ${left} messages left unfinished`);
    }
    return {
      drainRate: (result.delivered / result.elapsedMs) * 1000,
      enqueueRate: (drainCase.messages / enqueueMs) * 1000,
      delivered: result.delivered,
      walBytesPerMessage: result.delivered > 0 ? cost.walBytes / result.delivered : 0,
      serverCpuMicrosPerMessage:
        result.delivered > 0 && cost.cpuMicros !== null
          ? cost.cpuMicros / result.delivered
          : Number.NaN,
      clientCpuMicrosPerMessage:
        result.delivered > 0 ? (client.user + client.system) / result.delivered : Number.NaN,
      cutOff,
    };
  } finally {
    await database.dispose();
  }
}

/** The case's messages: keyed and unkeyed in turns when some go without a key. */
async function enqueueCase(handle: QueueHandle, drainCase: DrainCase): Promise<void> {
  const { messages, orderingKeys, withoutKeys = 0 } = drainCase;
  let keyed = messages - withoutKeys;
  let unkeyed = withoutKeys;
  if (unkeyed === 0) {
    await handle.enqueue(keyed, { orderingKeys });
    return;
  }
  while (keyed > 0 || unkeyed > 0) {
    const keyedTurn = Math.min(MIXED_TURN, keyed);
    if (keyedTurn > 0) await handle.enqueue(keyedTurn, { orderingKeys });
    const unkeyedTurn = Math.min(MIXED_TURN, unkeyed);
    if (unkeyedTurn > 0) await handle.enqueue(unkeyedTurn);
    keyed -= keyedTurn;
    unkeyed -= unkeyedTurn;
  }
}
