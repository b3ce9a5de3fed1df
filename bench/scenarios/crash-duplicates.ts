/**
 * Scenario 9: how many messages a drain killed mid-flight leaves sent but not marked done, so
 * the next drain sends them again (duplicates the receiver must drop). Each system drains in a
 * child process (bench/child/drain-process.ts) that POSTs every message to a loopback receiver
 * answering in 20 ms; once a set number of messages has arrived, the child gets SIGKILL, no
 * handler runs. Then:
 *
 *   sent but unmarked = messages that arrived - messages the system has marked done,
 *
 * where "marked done" is everything enqueued minus what the system still counts unfinished.
 * Nothing is marked done before it is sent, so the difference is exactly the set the next run
 * repeats. outbox-relay runs at its defaults (drainOnce's batch size and concurrency); each peer
 * gets the same batch size and sends in flight.
 */
import { fileURLToPath } from 'node:url';
import { DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY } from '../../src/core/drain-settings.js';
import { runTypeScriptChild } from '../lib/children.js';
import { sleep } from '../lib/concurrency.js';
import { rotated } from '../lib/order.js';
import { startLoopbackReceiver } from '../lib/receiver.js';
import { RunsBySystem } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { SYSTEM_IDS, type SystemId } from '../systems/types.js';
import { RECEIVER_DELAY_MS } from './slow-receiver.js';
import type { ResultRow, Scenario } from './types.js';

const CHILD = fileURLToPath(new URL('../child/drain-process.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Enough that no drain finishes before the kill (four seconds of ideal sending). */
const MESSAGES = 2000;
/**
 * Arrivals before the kill: a base plus an offset that moves run by run, so the kill lands at
 * different points of each system's claim/send/settle cycle rather than always at one.
 */
const KILL_AFTER_BASE = 300;
const KILL_AFTER_STEP = 37;
/** Gives up on a child that never reaches the kill point. */
const KILL_DEADLINE_MS = 60_000;
/** After the kill: requests already on the wire land or fail, and the receiver count settles. */
const SETTLE_MS = 300;

export const crashDuplicatesScenario: Scenario = {
  id: '9',
  aliases: ['sigkill', 'crash'],
  title: 'Sent but unmarked after SIGKILL mid-drain (duplicates on the next run)',
  async run(context) {
    const receiver = await startLoopbackReceiver(RECEIVER_DELAY_MS);
    const unmarked = new RunsBySystem<SystemId>();
    const kills: { system: SystemId; run: number; arrived: number; unfinished: number }[] = [];
    try {
      for (let run = 1; run <= context.config.runs; run++) {
        const killAfter = KILL_AFTER_BASE + KILL_AFTER_STEP * (run - 1);
        for (const id of rotated(SYSTEM_IDS, run)) {
          const system = SYSTEMS[id];
          const database = await context.freshDatabase(system);
          try {
            await database.handle.enqueue(MESSAGES);
            await context.vacuumAnalyze(database.url, await database.handle.tables());
            context.progress(
              `9 SIGKILL: ${system.label}, kill after ${killAfter} arrivals, run ${run}/${context.config.runs}`,
            );
            const arrivedBefore = receiver.arrived;
            const kill = new AbortController();
            const child = runTypeScriptChild(
              CHILD,
              {
                BENCH_SYSTEM: id,
                BENCH_DATABASE_URL: database.url,
                BENCH_EXPECTED: String(MESSAGES),
                BENCH_BATCH: String(DEFAULT_BATCH_SIZE),
                BENCH_CONCURRENCY: String(DEFAULT_CONCURRENCY),
                BENCH_SEND_URL: receiver.url,
              },
              REPO_ROOT,
              kill.signal,
            );
            let exited = false;
            void child.finally(() => {
              exited = true;
            });
            const deadline = performance.now() + KILL_DEADLINE_MS;
            while (receiver.arrived - arrivedBefore < killAfter && !exited) {
              if (performance.now() > deadline) break;
              await sleep(1);
            }
            kill.abort();
            const outcome = await child;
            if (outcome.signal !== 'SIGKILL') {
              throw new Error(`${system.label}: child ended with ${outcome.code} before the kill`);
            }
            await sleep(SETTLE_MS);
            const arrived = receiver.arrived - arrivedBefore;
            const unfinished = await database.handle.unfinished();
            unmarked.add(id, arrived - (MESSAGES - unfinished));
            kills.push({ system: id, run, arrived, unfinished });
          } finally {
            await database.dispose();
          }
        }
      }
    } finally {
      await receiver.close();
    }
    const rows: ResultRow[] = [
      {
        scenario: '9',
        label: `sent but unmarked after SIGKILL (batch ${DEFAULT_BATCH_SIZE}, ${DEFAULT_CONCURRENCY} in flight: our defaults), median`,
        unit: 'msgs',
        better: 'lower',
        values: unmarked.measurements(),
      },
      {
        scenario: '9',
        label: 'same, worst run',
        unit: 'msgs',
        better: 'lower',
        values: Object.fromEntries(
          unmarked.entries().map(([id, runs]) => {
            const worst = Math.max(...runs);
            return [id, { median: worst, min: worst, max: worst, runs: [worst] }];
          }),
        ),
      },
    ];
    return {
      rows,
      details: { messages: MESSAGES, kills },
      notes: [
        `9: the floor and pg-boss settle a whole batch at once, so a kill leaves up to a batch unmarked; outbox-relay settles in groups as sends finish, so a kill leaves the sends in flight plus the outcomes not yet written (the group on the wire and the one filling behind it).`,
      ],
    };
  },
};
