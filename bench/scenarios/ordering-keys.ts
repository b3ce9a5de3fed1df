/**
 * Scenario 11: a no-op drain when every message has an ordering key (graphile-worker: a named
 * queue), so each key's messages go out one at a time, in order. With many keys and a few
 * messages each, a claim finds a batch of heads near the start of the due order; with a few
 * keys and long backlogs each, every claim looks past the messages held back behind their
 * key's head, and the drain delivers at most one message per key per claim. Issue 29's
 * acceptance reads its rows: rates beside graphile-worker's, and the last row's ratio.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { noopSend } from '../lib/receiver.js';
import { measurement, median } from '../lib/stats.js';
import { baselineSystem } from '../systems/baseline-build.js';
import { SYSTEMS } from '../systems/index.js';
import { ORDERING_SYSTEMS, type QueueSystem, type SystemId } from '../systems/types.js';
import { againstBaseline, DrainCosts } from './drain-costs.js';
import { measureDrain } from './harness.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './no-op-drain.js';
import type { ResultRow, Scenario } from './types.js';

/**
 * Issue 29's cases: a few messages per key, long backlogs per key, one key, and a backlog ten
 * times deeper over the same ten keys, whose server CPU per message beside the 5,000's says
 * whether draining a backlog costs in proportion to it (1.0) or to its square (about 10). Last,
 * the same 5,000 with no key at all (keys 0): the rate each system reaches here without the
 * ordering rule, which bounds what any of the keyed cases can reach, in the same interleaved
 * runs (graphile-worker's rate moves two- to threefold from day to day on this machine).
 */
const CASES: readonly OrderingCase[] = [
  { keys: 1000, messages: 5000 },
  { keys: 10, messages: 5000 },
  { keys: 1, messages: 5000 },
  { keys: 10, messages: 50_000 },
  { keys: 0, messages: 5000 },
  // Beside the acceptance's cases: half the backlog without a key, in turns with the keyed half
  // (a claim merges unkeyed rows with the keys' runs), and claims of 1,000 (a claim's work that
  // grows with the square of its rows shows there).
  { keys: 10, messages: 5000, withoutKeys: 0.5 },
  { keys: 10, messages: 20_000, batch: 1000 },
];

interface OrderingCase {
  keys: number;
  messages: number;
  /** The share of the messages enqueued without a key, in turns with the keyed. Default 0. */
  withoutKeys?: number;
  /** Rows per claim (graphile-worker: its local queue's size). Default THROUGHPUT_BATCH. */
  batch?: number;
}
/** Which case's server CPU is compared with which: same keys, ten times the backlog. */
const DEEP = { shallow: CASES[1]!, deep: CASES[3]! } as const;

/**
 * A case's name in `BENCH_CASES`: keys x messages as `bench:statements` reads them (`10x5000`,
 * `/2` where half go without a key), and `@` the claim size where it is not the default.
 */
function caseName({ keys, messages, withoutKeys = 0, batch = THROUGHPUT_BATCH }: OrderingCase) {
  return `${keys}x${messages}${withoutKeys > 0 ? '/2' : ''}${batch === THROUGHPUT_BATCH ? '' : `@${batch}`}`;
}

/**
 * The cases `BENCH_CASES` names, all by default: a build from before a case could run (one whose
 * claims over a few deep keys take the time limit on every run) is compared on the cases it can.
 */
function chosenCases(text: string | undefined): readonly OrderingCase[] {
  if (text === undefined || text.trim() === '') return CASES;
  const names = CASES.map(caseName);
  return text.split(',').map((each) => {
    const index = names.indexOf(each.trim());
    if (index < 0) {
      throw new Error(
        `BENCH_CASES: scenario 11 has no case "${each}"; its cases: ${names.join(', ')}`,
      );
    }
    return CASES[index]!;
  });
}
/**
 * Untimed drains each system makes before the cases, beside the bench's one-time warm-up (which
 * has no keys): over many keys and over a few, so the first runs of the keyed cases do not time
 * the JIT compiling each system's keyed paths. Without them our nine runs of a case climbed from
 * first to last (over 1,000 keys 18,652 to 30,018 msg/s, over 10 keys 12,309 to 24,195) while
 * graphile-worker's did not (bench/results/2026-12-05T16-33-49Z.json).
 */
const KEYED_WARM_UP = { messages: 5000, keys: [1000, 10] } as const;
/** A drain that needs longer is rated on what it delivered by then. */
const TIME_LIMIT_MS = 30_000;

const NO_ORDERING: ResultRow['absent'] = {
  'pg-boss': 'no ordering keys',
  'sql-floor': 'no ordering keys',
};

export const orderingKeysScenario: Scenario = {
  id: '11',
  aliases: ['ordering'],
  title: 'Ordering keys: a no-op drain of messages that go out one at a time per key',
  async run(context) {
    const { runs } = context.config;
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    const cases = chosenCases(process.env.BENCH_CASES);
    const serverCpu = new Map<OrderingCase, Partial<Record<SystemId, readonly number[]>>>();
    // Another build of ours (BENCH_BASELINE), drained right before ours in odd runs and right
    // after in even ones, so a change to the keyed claim reads against the build before it.
    const baseline = context.config.baseline ? await baselineSystem(context.config.baseline) : null;
    const systems = [...ORDERING_SYSTEMS.map((id) => SYSTEMS[id]), ...(baseline ? [baseline] : [])];
    for (const system of systems) {
      await context.warmUp(system);
      for (const orderingKeys of KEYED_WARM_UP.keys) {
        context.progress(`11 ordering keys: warm-up, ${system.label}, ${orderingKeys} keys`);
        await measureDrain(context, system, {
          messages: KEYED_WARM_UP.messages,
          batchSize: THROUGHPUT_BATCH,
          concurrency: THROUGHPUT_CONCURRENCY,
          send: noopSend,
          orderingKeys,
        });
      }
    }
    for (const each of cases) {
      const { keys, messages: unscaled, withoutKeys = 0, batch = THROUGHPUT_BATCH } = each;
      const messages = scaled(context.config, unscaled, unscaled / 5);
      const unkeyed = Math.round(messages * withoutKeys);
      const costs = new DrainCosts();
      const baselineCosts = new DrainCosts();
      const over = `${messages.toLocaleString('en-US')} messages over ${keys === 0 ? 'no' : keys.toLocaleString('en-US')} keys${unkeyed > 0 ? ` (${unkeyed.toLocaleString('en-US')} of them without)` : ''}${batch === THROUGHPUT_BATCH ? '' : `, claims of ${batch.toLocaleString('en-US')}`}`;
      const measure = async (system: QueueSystem, run: number) => {
        context.progress(`11 ordering keys: ${system.label}, ${over}, run ${run}/${runs}`);
        const result = await measureDrain(context, system, {
          messages,
          batchSize: batch,
          concurrency: THROUGHPUT_CONCURRENCY,
          send: noopSend,
          orderingKeys: keys === 0 ? undefined : keys,
          withoutKeys: unkeyed,
          timeLimitMs: TIME_LIMIT_MS,
        });
        if (result.cutOff) {
          notes.push(
            `11: ${system.label}, ${over}, run ${run}: cut off at ${TIME_LIMIT_MS / 1000} s with ${result.delivered} delivered; rated on those`,
          );
        }
        return result;
      };
      for (let run = 1; run <= runs; run++) {
        for (const id of rotated(ORDERING_SYSTEMS, run)) {
          const withBaseline = baseline !== null && id === 'outbox-relay';
          if (withBaseline && run % 2 === 1) baselineCosts.add(id, await measure(baseline, run));
          costs.add(id, await measure(SYSTEMS[id], run));
          if (withBaseline && run % 2 === 0) baselineCosts.add(id, await measure(baseline, run));
        }
      }
      if (baseline) {
        notes.push(
          `11: ${over}: this build / BENCH_BASELINE: ${againstBaseline(costs, baselineCosts)}.`,
        );
      }
      serverCpu.set(each, Object.fromEntries(costs.cpu.entries()));
      const shape =
        keys === 0
          ? 'no ordering keys (the ceiling for the keyed cases)'
          : unkeyed > 0
            ? `${keys.toLocaleString('en-US')} ordering keys and none (${Math.round((messages - unkeyed) / keys).toLocaleString('en-US')} per key, in turns with ${unkeyed.toLocaleString('en-US')} without`
            : `${keys.toLocaleString('en-US')} ordering keys (${Math.round(messages / keys).toLocaleString('en-US')} per key`;
      rows.push(
        ...costs.rows(
          '11',
          `no-op drain of ${messages.toLocaleString('en-US')} over ${shape}${keys === 0 ? ' (' : '; '}batch ${batch.toLocaleString('en-US')}, ${THROUGHPUT_CONCURRENCY} in flight)`,
          NO_ORDERING,
        ),
      );
    }
    if (serverCpu.has(DEEP.shallow) && serverCpu.has(DEEP.deep)) {
      const ratios: ResultRow['values'] = {};
      for (const id of ORDERING_SYSTEMS) {
        const shallow = serverCpu.get(DEEP.shallow)?.[id];
        const deep = serverCpu.get(DEEP.deep)?.[id];
        if (!shallow?.length || !deep?.length) continue;
        ratios[id] = measurement([median(deep) / median(shallow)]);
      }
      const { keys, messages: deep } = DEEP.deep;
      rows.push({
        scenario: '11',
        label: `server CPU per message, ${deep.toLocaleString('en-US')} over ${keys} keys / ${DEEP.shallow.messages.toLocaleString('en-US')} over ${keys} (1 = linear)`,
        unit: 'x',
        better: 'lower',
        values: ratios,
        absent: NO_ORDERING,
      });
    }
    return { rows, notes };
  },
};
