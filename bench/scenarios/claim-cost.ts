/**
 * Scenario 3: does claiming get slower as finished rows pile up? Each system claims 100 of
 * 10,000 due messages, on a table with no history and on one that also keeps 1,000,000
 * finished rows in the shape that system keeps them (one INSERT ... SELECT generate_series).
 * graphile-worker deletes jobs when they complete, so it never keeps history: its "with
 * history" cell is empty by design, not by omission.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { benchPool } from '../lib/postgres.js';
import { measurement, median, RunsBySystem } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { explainClaim } from '../systems/outbox-relay.js';
import { SYSTEM_IDS, type SystemId } from '../systems/types.js';
import type { FreshDatabase, ResultRow, Scenario } from './types.js';

interface ClaimTable {
  id: SystemId;
  kept: number;
  database: FreshDatabase;
  times: RunsBySystem<SystemId>;
}

const CLAIM_SIZE = 100;
/** Timed claims per table, after two untimed warm-ups on each, all tables interleaved. */
const TIMED_CLAIMS = 30;
const WARM_CLAIMS = 2;

export const claimCostScenario: Scenario = {
  id: '3',
  aliases: ['claim-cost'],
  title: 'Claim cost versus history: time per claim of 100',
  async run(context) {
    // Enough due rows for every claim, warm-ups included, at any scale.
    const due = scaled(context.config, 10_000, (WARM_CLAIMS + TIMED_CLAIMS + 1) * CLAIM_SIZE);
    const history = scaled(context.config, 1_000_000, 10_000);
    const empty = new RunsBySystem<SystemId>();
    const full = new RunsBySystem<SystemId>();
    const absent: Partial<Record<SystemId, string>> = {};
    const plans: Record<string, string> = {};
    const insertSeconds: Partial<Record<SystemId, number>> = {};

    // Every system's tables are built first (history inserted, vacuumed), and only then timed,
    // claim by claim across all of them, so no system is timed while another's two million
    // rows are being written, and a busy moment lands on all alike.
    const tables: ClaimTable[] = [];
    try {
      for (const id of SYSTEM_IDS) {
        const system = SYSTEMS[id];
        for (const kept of [0, history]) {
          const database = await context.freshDatabase(system);
          const { handle } = database;
          if (kept > 0 && !handle.insertHistory) {
            absent[id] = 'keeps none';
            await database.dispose();
            continue;
          }
          tables.push({ id, kept, database, times: kept > 0 ? full : empty });
          if (kept > 0) {
            context.progress(
              `3 claim cost: ${system.label}, inserting ${kept.toLocaleString('en-US')} finished rows`,
            );
            const startedAt = performance.now();
            await handle.insertHistory?.(kept);
            insertSeconds[id] = Math.round((performance.now() - startedAt) / 100) / 10;
          }
          await handle.enqueue(due);
          await context.vacuumAnalyze(database.url, await handle.tables());
        }
      }
      // The writes above leave checkpoints and hint-bit work behind; let them land untimed.
      await context.postgres.admin.query('CHECKPOINT');
      context.progress(
        `3 claim cost: ${TIMED_CLAIMS} claims of ${CLAIM_SIZE} on each of ${tables.length} tables, interleaved, order rotated each round`,
      );
      for (let round = 1; round <= WARM_CLAIMS + TIMED_CLAIMS; round++) {
        for (const table of rotated(tables, round)) {
          const startedAt = performance.now();
          const claimed = await table.database.handle.claim(CLAIM_SIZE);
          const elapsed = performance.now() - startedAt;
          if (claimed !== CLAIM_SIZE) {
            throw new Error(`${table.id}: claimed ${claimed} of ${CLAIM_SIZE}`);
          }
          if (round > WARM_CLAIMS) table.times.add(table.id, elapsed);
        }
      }
      for (const table of tables.filter((t) => t.id === 'outbox-relay')) {
        const pool = benchPool(table.database.url, 1);
        try {
          plans[table.kept > 0 ? 'withHistory' : 'noHistory'] = await explainClaim(
            pool,
            CLAIM_SIZE,
          );
        } finally {
          await pool.end();
        }
      }
    } finally {
      for (const table of tables) await table.database.dispose();
    }

    const ratios: Partial<Record<SystemId, ReturnType<typeof measurement>>> = {};
    for (const id of SYSTEM_IDS) {
      const before = empty.get(id);
      const after = full.get(id);
      if (before && after) ratios[id] = measurement([median(after) / median(before)]);
    }
    const keptLabel = history.toLocaleString('en-US');
    const rows: ResultRow[] = [
      {
        scenario: '3',
        label: `claim ${CLAIM_SIZE} of ${due.toLocaleString('en-US')} due, no finished rows`,
        unit: 'ms',
        better: 'lower',
        values: empty.measurements(),
      },
      {
        scenario: '3',
        label: `same, ${keptLabel} finished rows kept`,
        unit: 'ms',
        better: 'lower',
        values: full.measurements(),
        absent,
      },
      {
        scenario: '3',
        label: `claim time with ${keptLabel} kept / with none`,
        unit: 'x',
        better: 'lower',
        values: ratios,
        absent,
      },
    ];
    const withHistory = plans.withHistory ?? '';
    const usesIndex = withHistory.includes('messages_claimable');
    return {
      rows,
      details: {
        claimPlans: plans,
        claimUsesPartialIndex: usesIndex,
        historyInsertSeconds: insertSeconds,
      },
      notes: [
        `3: outbox-relay's claim ${usesIndex ? 'uses' : 'does NOT use'} the partial index messages_claimable with ${keptLabel} finished rows kept (EXPLAIN ANALYZE in the results file).`,
      ],
    };
  },
};
