/**
 * Purge: finished rows deleted in bounded statements, oldest first, then the space they held
 * made reusable at once. The statements are purgeDelivered, purgeDead and purgeDeliveryCounts
 * in statements.ts; `PostgresOutboxStore.purge` runs this.
 */
import type { SqlExecutor } from '../core/ports.js';
import type { PurgeReport, PurgeRequest } from '../core/purge.js';
import type { DrainStatements } from './statements.js';

/** Rows per purge statement: small enough to hold locks briefly, large enough to keep up. */
export const DEFAULT_PURGE_BATCH = 1000;

/**
 * Deletes finished rows in bounded statements, oldest first, so the hot table stays small,
 * then, if it deleted any, vacuums both tables so the freed space is reused at once. `db` must
 * be outside any transaction block (VACUUM cannot run inside one); pending and claimed rows are
 * never touched.
 */
export async function purgeFinished(
  db: SqlExecutor,
  sql: Pick<
    DrainStatements,
    | 'purgeDeliveryCounts'
    | 'purgeDelivered'
    | 'purgeDead'
    | 'reclaimPurgedSpace'
    | 'takeTransactionId'
  >,
  request: PurgeRequest,
): Promise<PurgeReport> {
  const batchSize = request.batchSize ?? DEFAULT_PURGE_BATCH;
  const limit = request.limit ?? Number.POSITIVE_INFINITY;
  const report: PurgeReport = { deliveredDeleted: 0, deadDeleted: 0, statements: 0 };
  if (request.countsOlderThanMs !== undefined) {
    const cutoff = new Date(request.now.getTime() - request.countsOlderThanMs);
    await db.query(sql.purgeDeliveryCounts, [cutoff]);
    report.statements += 1;
  }
  const passes: { olderThanMs: number | undefined; text: string; field: keyof PurgeReport }[] = [
    {
      olderThanMs: request.deliveredOlderThanMs,
      text: sql.purgeDelivered,
      field: 'deliveredDeleted',
    },
    { olderThanMs: request.deadOlderThanMs, text: sql.purgeDead, field: 'deadDeleted' },
  ];
  // Rows counted against the limit: messages, and groups of history a discard emptied.
  let taken = 0;
  deleting: for (const pass of passes) {
    if (pass.olderThanMs === undefined) continue;
    const cutoff = new Date(request.now.getTime() - pass.olderThanMs);
    for (;;) {
      const room = limit - taken;
      if (room <= 0) break deleting;
      const take = Math.min(batchSize, room);
      const result = await db.query(pass.text, [cutoff, take]);
      const row = result.rows[0] as { deleted?: number; taken?: number } | undefined;
      report.statements += 1;
      report[pass.field] += Number(row?.deleted ?? 0);
      taken += Number(row?.taken ?? 0);
      if (Number(row?.taken ?? 0) < take) break;
    }
  }
  if (report.deliveredDeleted + report.deadDeleted > 0) {
    // The second VACUUM recycles the index pages the first deleted (see takeTransactionId).
    await db.query(sql.reclaimPurgedSpace);
    await db.query(sql.takeTransactionId);
    await db.query(sql.reclaimPurgedSpace);
    report.statements += 3;
  }
  return report;
}
