/**
 * Scenario 11: a no-op drain when every message has an ordering key (graphile-worker: a named
 * queue), so each key's messages go out one at a time, in order. With many keys and a few
 * messages each, a claim finds a batch of heads near the start of the due order; with a few
 * keys and long backlogs each, every claim looks past the messages held back behind their
 * key's head, and the drain delivers at most one message per key per claim.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { noopSend } from '../lib/receiver.js';
import { SYSTEMS } from '../systems/index.js';
import { ORDERING_SYSTEMS } from '../systems/types.js';
import { DrainCosts } from './drain-costs.js';
import { measureDrain } from './harness.js';
import { THROUGHPUT_BATCH, THROUGHPUT_CONCURRENCY } from './no-op-drain.js';
import type { ResultRow, Scenario } from './types.js';

/** Keys per case: a few messages per key, then long backlogs per key. */
const KEY_COUNTS = [1000, 10] as const;
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
    const messages = scaled(context.config, 5000, 1000);
    const { runs } = context.config;
    const rows: ResultRow[] = [];
    const notes: string[] = [];
    for (const id of ORDERING_SYSTEMS) await context.warmUp(SYSTEMS[id]);
    for (const keys of KEY_COUNTS) {
      const costs = new DrainCosts();
      for (let run = 1; run <= runs; run++) {
        for (const id of rotated(ORDERING_SYSTEMS, run)) {
          const system = SYSTEMS[id];
          context.progress(
            `11 ordering keys: ${system.label}, ${messages.toLocaleString('en-US')} messages over ${keys.toLocaleString('en-US')} keys, run ${run}/${runs}`,
          );
          const result = await measureDrain(context, system, {
            messages,
            batchSize: THROUGHPUT_BATCH,
            concurrency: THROUGHPUT_CONCURRENCY,
            send: noopSend,
            orderingKeys: keys,
            timeLimitMs: TIME_LIMIT_MS,
          });
          if (result.cutOff) {
            notes.push(
              `11: ${system.label}, ${keys} keys, run ${run}: cut off at ${TIME_LIMIT_MS / 1000} s with ${result.delivered} of ${messages} delivered; rated on those`,
            );
          }
          costs.add(id, result);
        }
      }
      const perKey = Math.round(messages / keys).toLocaleString('en-US');
      rows.push(
        ...costs.rows(
          '11',
          `no-op drain of ${messages.toLocaleString('en-US')} over ${keys.toLocaleString('en-US')} ordering keys (${perKey} per key; batch ${THROUGHPUT_BATCH}, ${THROUGHPUT_CONCURRENCY} in flight)`,
          NO_ORDERING,
        ),
      );
    }
    return { rows, notes };
  },
};
