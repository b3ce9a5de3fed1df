/**
 * Scenario 10: what a claim pays for the deliveries a vacuum has not cleared yet. Settle
 * deletes a delivered row, but its entry in messages_claimable stays at the head of the due
 * order until a vacuum removes it, and a claim that scans from the start steps over every one.
 * A drain past CURSOR_FROM_CLAIMED rows starts its claims after the last row it claimed
 * instead. Both claims are timed here, interleaved, on one table where 290,000 messages were
 * delivered since the last vacuum (outbox-relay only: the peers have no cursor to compare).
 */
import type { ClaimRequest } from '../../src/core/outbox-store.js';
import { delivered as deliveredOutcome } from '../../src/core/settlement.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { type ClaimCursor, positionOf, positionText } from '../../src/store/claim-position.js';
import { quoteSchema } from '../../src/store/schema-name.js';
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { benchPool } from '../lib/postgres.js';
import { measurement } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import { benchOutbox, claimRequest, OUTBOX_SCHEMA } from '../systems/outbox-relay.js';
import { OURS_ONLY, type ResultRow, type Scenario } from './types.js';

const CLAIM_SIZE = 100;
const TIMED_CLAIMS = 30;
/** Untimed claims first: the first scan over fresh deletions checks each row in the heap. */
const WARM_CLAIMS = 3;
const deliveredNow = deliveredOutcome();

export const claimCursorScenario: Scenario = {
  id: '10',
  aliases: ['cursor'],
  title: 'Claim after many deliveries not yet vacuumed: from the start or from the cursor',
  async run(context) {
    const delivered = scaled(context.config, 290_000, 2_000);
    const due = (WARM_CLAIMS + TIMED_CLAIMS) * CLAIM_SIZE * 2 + CLAIM_SIZE;
    const database = await context.freshDatabase(SYSTEMS['outbox-relay']);
    const pool = benchPool(database.url, 2);
    const messages = `${quoteSchema(OUTBOX_SCHEMA)}.messages`;
    try {
      // No vacuum may clear the deletions while this runs: that is the case being measured.
      await pool.query(`ALTER TABLE ${messages} SET (autovacuum_enabled = false)`);
      const total = delivered + due;
      context.progress(
        `10 claim cursor: enqueueing ${total.toLocaleString('en-US')}, deleting the first ${delivered.toLocaleString('en-US')} as settle does`,
      );
      await database.handle.enqueue(total);
      const { rows } = await pool.query<{ due_at: Date; id: string }>(
        `WITH gone AS (
           DELETE FROM ${messages} WHERE id IN (
             SELECT id FROM ${messages} ORDER BY due_at, id LIMIT $1)
           RETURNING due_at, id)
         SELECT due_at, id FROM gone ORDER BY due_at DESC, id DESC LIMIT 1`,
        [delivered],
      );
      const store = benchOutbox().store(pgExecutor(pool));
      // Where a drain that delivered those rows would start: after the last one. Every claim
      // from the cursor resumes as one that has not yet come to its scan from the start.
      const fromCursor = (cursor: ClaimCursor | undefined) =>
        positionText(cursor ? { cursor, fromCursor: 0 } : { fromCursor: 0 });
      let resumeAt = fromCursor({ dueAt: rows[0]!.due_at, id: String(rows[0]!.id) });
      const times = { start: [] as number[], cursor: [] as number[] };
      for (let round = 1; round <= WARM_CLAIMS + TIMED_CLAIMS; round++) {
        for (const mode of rotated(['start', 'cursor'] as const, round)) {
          const request: ClaimRequest = {
            ...claimRequest(CLAIM_SIZE),
            ...(mode === 'cursor' ? { resumeAt, backlog: true } : {}),
          };
          const startedAt = performance.now();
          const result = await store.claim(request);
          const elapsed = performance.now() - startedAt;
          if (result.claimed.length !== CLAIM_SIZE) {
            throw new Error(`claim from the ${mode}: ${result.claimed.length} of ${CLAIM_SIZE}`);
          }
          if (round > WARM_CLAIMS) times[mode].push(elapsed);
          if (mode === 'cursor') resumeAt = fromCursor(positionOf(result.resumeAt).cursor);
          // Delivered at once (untimed), as in a drain: its rows join the deleted ones.
          await store.settle(
            result.claimed.map((message) => ({ message, settlement: deliveredNow })),
            new Date(),
          );
        }
      }
      const label = delivered.toLocaleString('en-US');
      const resultRows: ResultRow[] = [
        {
          scenario: '10',
          label: `claim ${CLAIM_SIZE} with ${label} delivered since the last vacuum, scanning from the start`,
          unit: 'ms',
          better: 'lower',
          values: { 'outbox-relay': measurement(times.start) },
          absent: OURS_ONLY,
        },
        {
          scenario: '10',
          label: 'same, from the cursor (a drain claiming a backlog)',
          unit: 'ms',
          better: 'lower',
          values: { 'outbox-relay': measurement(times.cursor) },
          absent: OURS_ONLY,
        },
      ];
      return { rows: resultRows };
    } finally {
      await pool.end();
      await database.dispose();
    }
  },
};
