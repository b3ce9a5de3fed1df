/**
 * What SKIP LOCKED is for. Correctness survives without it (under READ COMMITTED a blocked claim
 * re-checks the row and skips it once the other claim commits), but liveness does not: a drain
 * would wait for whoever holds one due row, and deliver nothing until that transaction ends.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainReport } from '../../src/core/drain-settings.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();

/** Backends of this database waiting on a heavyweight lock (a row lock, here). */
async function backendsWaitingOnALock(): Promise<number> {
  const { rows } = await database.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

describe.each(DRIVER_NAMES)('claiming past a locked row, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('a drain delivers the other due rows at once while another transaction holds one', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 30 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    // Another transaction (a drain mid-claim, an operator's UPDATE) holds the first due row.
    const holder = await database.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM ${schema}.messages WHERE key = $1 FOR UPDATE`, [keys[0]]);

      const sender = recordingSender();
      let report: DrainReport | undefined;
      const drained = drainOnce({ store, senders: { 'test.kind': sender.send } }).then(
        (finished) => {
          report = finished;
          return finished;
        },
      );
      // Either the drain finishes, or PostgreSQL shows it waiting on the held row.
      let waited = false;
      await waitFor('the drain to finish or to wait on the held row', async () => {
        if (report) return true;
        waited = (await backendsWaitingOnALock()) > 0;
        return waited;
      });
      expect(waited, 'the drain waited on a row another transaction holds').toBe(false);
      expect(report).toMatchObject({ claimed: 29, delivered: 29, stopReason: 'empty' });
      expect(sender.timesSent(keys[0]!)).toBe(0);
      expect(new Set(sender.delivered)).toEqual(new Set(keys.slice(1)));
      await holder.query('ROLLBACK');
      await drained;
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      holder.release();
    }
    // Once the holder lets go, the held row is due as ever.
    const after = await drainOnce({ store, senders: { 'test.kind': recordingSender().send } });
    expect(after).toMatchObject({ delivered: 1 });
  });
});
