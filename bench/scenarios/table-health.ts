/**
 * Scenario 7: what five cycles of "enqueue 50,000, deliver them all, purge" leave behind, with
 * autovacuum at its defaults and no manual VACUUM. Each system purges with its own knobs set
 * to remove finished rows promptly (see each adapter's settings). Sizes are read after each
 * cycle's purge.
 */
import { scaled } from '../lib/config.js';
import { benchPool, type TableSizes, tableSizes } from '../lib/postgres.js';
import { noopSend } from '../lib/receiver.js';
import { measurement } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import type { SystemId } from '../systems/types.js';
import type { ResultRow, Scenario } from './types.js';

const CYCLES = 5;
/**
 * Deliveries use the largest batch every system accepts: the sizes depend on rows written and
 * deleted, not on batching, and pg-boss's fetch (which sorts every due row) would otherwise
 * take most of the budget.
 */
const DELIVERY_BATCH = 1000;
const DELIVERY_CONCURRENCY = 10;

/**
 * The raw-SQL floor is left out: it has no retention of its own to evaluate, and its cycles
 * would cost budget that the products' need.
 */
const SYSTEMS_MEASURED: readonly SystemId[] = ['outbox-relay', 'pg-boss', 'graphile-worker'];
const MIB = 1024 * 1024;

export const tableHealthScenario: Scenario = {
  id: '7',
  aliases: ['table-health'],
  title: 'Table health: size after enqueue, deliver, purge cycles',
  async run(context) {
    const messages = scaled(context.config, 50_000, 1000);
    const sizes = new Map<SystemId, TableSizes[]>();
    for (const id of SYSTEMS_MEASURED) {
      const system = SYSTEMS[id];
      const database = await context.freshDatabase(system);
      const pool = benchPool(database.url, 1);
      try {
        const { handle } = database;
        const tables = await handle.tables();
        const afterEachCycle: TableSizes[] = [];
        sizes.set(id, afterEachCycle);
        for (let cycle = 1; cycle <= CYCLES; cycle++) {
          context.progress(
            `7 table health: ${system.label}, cycle ${cycle}/${CYCLES}: enqueue, deliver and purge ${messages.toLocaleString('en-US')}`,
          );
          await handle.enqueue(messages);
          const result = await handle.drain({
            expected: messages,
            batchSize: DELIVERY_BATCH,
            concurrency: DELIVERY_CONCURRENCY,
            send: noopSend,
            timeLimitMs: 10 * 60 * 1000,
          });
          if (result.delivered !== messages) {
            throw new Error(`${system.label}: delivered ${result.delivered} of ${messages}`);
          }
          await handle.purge();
          afterEachCycle.push(await tableSizes(pool, tables));
        }
      } finally {
        await pool.end();
        await database.dispose();
      }
    }

    const rows: ResultRow[] = [];
    const absent = { 'sql-floor': 'not run' } as const;
    const row = (label: string, pick: (s: TableSizes) => number, cycle: number): ResultRow => ({
      scenario: '7',
      label,
      unit: 'MiB',
      better: 'lower',
      values: Object.fromEntries(
        [...sizes].map(([id, list]) => [id, measurement([pick(list[cycle - 1]!) / MIB])]),
      ),
      absent,
    });
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      rows.push(
        row(`after cycle ${cycle}: total (heap + indexes + TOAST)`, (s) => s.totalBytes, cycle),
      );
    }
    rows.push(row(`after cycle ${CYCLES}: heap`, (s) => s.heapBytes, CYCLES));
    rows.push(row(`after cycle ${CYCLES}: indexes`, (s) => s.indexBytes, CYCLES));
    const notes = [...sizes].map(
      ([id, list]) =>
        `7: autovacuum ran ${list.at(-1)?.autovacuumRuns ?? 0} time(s) on ${SYSTEMS[id].label}'s tables during its ${CYCLES} cycles.`,
    );
    return {
      rows,
      notes,
      details: {
        messagesPerCycle: messages,
        cycles: CYCLES,
        sizesAfterEachCycle: Object.fromEntries(sizes),
      },
    };
  },
};
