/**
 * The walk's plan holds one copy of each piece a step reads several times
 * (src/store/claim-walk.ts): every copy is planned, on every claim over Neon's HTTP driver.
 */

import { describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { dueClaimParameters, sharedClaimParameters } from '../../src/store/due-claim-shape.js';
import { outboxStatements } from '../../src/store/statements.js';
import { useTestDatabase } from '../support/database.js';
import { claimRequest } from '../support/drain-fixtures.js';
import { allNodes, planAsRun } from '../support/query-plans.js';

const database = useTestDatabase();

describe("the walk's plan", () => {
  it.each([false, true])(
    'tests each key head and looks up its held run once a step (shares only: %s)',
    async (sharesOnly) => {
      const db = pgExecutor(database.pool);
      const schema = `walk_once_${sharesOnly ? 'shares' : 'whole'}`;
      const outbox = createOutbox({ schema, kinds: { 'test.kind': true } });
      await outbox.migrate(db);
      await outbox.enqueue(
        db,
        Array.from({ length: 50 }, (_, n) => ({
          kind: 'test.kind',
          payload: { n },
          orderingKey: `key-${n % 5}`,
        })),
      );
      const request = claimRequest({ limit: 10 });
      const shape = { limit: 10, share: 2, after: false, keyed: 'walk' as const, sharesOnly };
      const plan = await planAsRun(
        database.pool,
        outboxStatements(schema).claimDueMessages(shape),
        dueClaimParameters({ ...request, keyShare: 2 }, sharedClaimParameters(request), shape),
      );
      // A step's head, its claimable test and the held run it may continue are each read in
      // several places of the step. Inlined into each, every copy is planned (on every claim
      // over Neon's HTTP driver) and the held run was looked up twice a step: the walk's text
      // took 2.28 ms to plan against 1.91 ms with one copy of each.
      const walk = allNodes(plan).find((node) => node['Subplan Name'] === 'CTE walk')!;
      const inWalk = allNodes(walk);
      expect(inWalk.filter((node) => node['CTE Name'] === 'held')).toHaveLength(1);
      const destinationTests = inWalk.filter((node) => node['Relation Name'] === 'destinations');
      // The head's test and the followers' test.
      expect(destinationTests).toHaveLength(2);
    },
  );
});
