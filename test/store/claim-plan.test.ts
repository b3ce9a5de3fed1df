/**
 * The claim's plan is kept: PostgreSQL plans a prepared statement anew on every run (a custom
 * plan) unless its one generic plan looks no dearer, and a limit or a list of keys passed as a
 * parameter made the claim's generic plan look dearer every time. Planning was about a fifth of
 * the claim's server CPU (docs/benchmarks.md).
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { outboxStatements } from '../../src/store/statements.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();

describe('the claim statement', () => {
  let client: pg.Client | undefined;
  afterEach(async () => {
    await client?.end();
    client = undefined;
  });

  it('runs on a kept generic plan once prepared, over one connection', async () => {
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const db = pgExecutor(client);
    const outbox = createOutbox({ schema: 'claim_plan', kinds: { 'test.kind': true } });
    await outbox.migrate(db);
    await outbox.enqueue(
      db,
      Array.from({ length: 200 }, (_, n) => ({ kind: 'test.kind', payload: { n } })),
    );
    await client.query('ANALYZE claim_plan.messages');
    const store = outbox.store(db);
    const claim = () =>
      store.claim({
        now: new Date(Date.now() + 1000),
        claimToken: crypto.randomUUID(),
        limit: 10,
        leaseMs: 60_000,
        deadHeadBlocks: true,
        kinds: ['test.kind'],
      });
    for (let run = 0; run < 12; run++) expect((await claim()).claimed).toHaveLength(10);

    const { rows } = await client.query<{ generic: number; custom: number }>(
      `SELECT generic_plans::int AS generic, custom_plans::int AS custom
       FROM pg_prepared_statements WHERE statement LIKE '%WITH due AS%'`,
    );
    // Prepared from its second run; PostgreSQL tries five custom plans before it compares.
    expect(rows).toHaveLength(1);
    expect(rows[0]!.generic).toBeGreaterThan(0);
    expect(rows[0]!.custom).toBeLessThanOrEqual(5);
  });

  it('refuses a limit that is not a whole number above 0 before any SQL is built', () => {
    const statements = outboxStatements('"outbox"');
    for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => statements.claimDueMessages(limit)).toThrow(RangeError);
    }
    expect(statements.claimDueMessages(25)).toContain('LIMIT 25');
  });
});
