/**
 * The settle's plan probes messages once per outcome, whatever the statistics say. Statistics
 * taken at the end of a drain (pages of dead rows, no live ones) made the planner expect one row
 * in messages, read it all as the outer side of a nested loop and rescan the group's outcomes for
 * every row: a settle of a few thousand outcomes in the bench's table-health cycles ran for 11
 * minutes (docs/benchmarks.md, "History by settle group").
 */

import { describe, expect, it } from 'vitest';
import { DEFAULT_DESTINATION_HEALTH } from '../../src/core/destination-health.js';
import { delivered, retry } from '../../src/core/settlement.js';
import { settleParameters } from '../../src/store/settle-parameters.js';
import { outboxStatements } from '../../src/store/statements.js';
import { useTestDatabase } from '../support/database.js';
import { claimRequest, freshOutbox } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase();
const driver = useDriver('node-pg', database);

/** A plan node as EXPLAIN (ANALYZE, FORMAT JSON) gives it. */
type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/** Rows a scan node read over all its loops: those it returned and those its filter removed. */
function rowsRead(node: PlanNode): number {
  const perLoop = Number(node['Actual Rows']) + Number(node['Rows Removed by Filter'] ?? 0);
  return perLoop * Number(node['Actual Loops']);
}

describe('the settle statement', () => {
  it('probes one row of messages per outcome when the statistics say messages is empty', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await database.pool.query(`ALTER TABLE ${schema}.messages SET (autovacuum_enabled = false)`);
    const enqueue4000 = async () => {
      for (let call = 0; call < 4; call++) {
        await outbox.enqueue(
          driver.db,
          Array.from({ length: 1_000 }, (_, n) => ({ kind: 'test.kind', payload: { n } })),
        );
      }
    };
    // Statistics as a drain's end leaves them: pages of dead rows, no live ones.
    await enqueue4000();
    await database.pool.query(`DELETE FROM ${schema}.messages`);
    await database.pool.query(`ANALYZE ${schema}.messages`);
    await enqueue4000();

    const request = claimRequest({ limit: 1_000 });
    const { claimed } = await store.claim(request);
    expect(claimed).toHaveLength(1_000);
    // A tenth fail: the text that also keeps destination health, the larger of the two.
    const settle = outboxStatements(`"${schema}"`).settleClaimedMessagesWithHealth;
    const requests = claimed.map((message, n) => ({
      message,
      settlement:
        n % 10 === 0 ? retry(new Date(), 'boom', undefined, { retryAfterMs: null }) : delivered(),
    }));
    const { rows } = await database.pool.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${settle}`,
      settleParameters(requests, new Date(), true, DEFAULT_DESTINATION_HEALTH).params,
    );
    const nodes = nodesOf(rows[0]['QUERY PLAN'][0].Plan);
    const scans = nodes.filter(
      (node) => node['Relation Name'] === 'messages' && node['Node Type'] !== 'ModifyTable',
    );
    const read = scans.map((node) => `${node['Node Type']} ${rowsRead(node)}`).join(', ');
    // A probe per outcome to find its row, then the rows the delete and the update take.
    expect(
      scans.reduce((sum, node) => sum + rowsRead(node), 0),
      read,
    ).toBeLessThanOrEqual(2 * 1_000);
    // No list of outcomes is read again for each row of something else (the stale search after
    // the last write runs only when a row did not change, so its scan of o may not run at all).
    for (const node of nodes.filter((each) => each['Node Type'] === 'CTE Scan')) {
      expect(node['Actual Loops'], String(node['CTE Name'])).toBeLessThanOrEqual(1);
    }
    expect(await store.stats(new Date())).toMatchObject({ pending: 3_000 + 100, delivered: 900 });
  });

  it('a delivery whose row another drain re-claims during the settle is stale and changes nothing', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, { kind: 'test.kind', payload: { n: 1 } });
    const request = claimRequest();
    const [message] = (await store.claim(request)).claimed;
    // Another drain re-claims the row (its lease passed) and has not committed yet.
    const other = await database.pool.connect();
    const otherToken = crypto.randomUUID();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE ${schema}.messages SET claim_token = $2 WHERE id = $1`, [
        message!.id,
        otherToken,
      ]);
      const settling = store.settle([{ message: message!, settlement: delivered() }], new Date());
      // pg_stat_activity keeps a query's first 1,024 bytes: match the statement's opening.
      await waitFor('the settle to wait for the re-claim', async () => {
        const { rows } = await database.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND query LIKE '%WITH o AS (%SELECT o.id, o.row_id%'`,
        );
        return rows[0].n === 1;
      });
      await other.query('COMMIT');
      expect(await settling).toEqual({ settled: [], stale: [message!.id] });
    } finally {
      other.release();
    }
    const { rows } = await database.pool.query(
      `SELECT state, claim_token FROM ${schema}.all_messages WHERE id = $1`,
      [message!.id],
    );
    expect(rows).toEqual([{ state: 'claimed', claim_token: otherToken }]);
  });
});
