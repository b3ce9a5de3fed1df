/**
 * Leases under a budget: overlapping drains, each `drainOnce` in a loop as a Workers cron would
 * run it, with a finite subrequest budget, a one-second lease and small claims, sending webhooks
 * to a receiver that answers in 100 ms. Nothing is killed and no fault is injected, so no key
 * may go out twice: every outcome must be written before its row's lease ends, or another drain
 * claims the row and sends it again. (Before the settle groups wrote by lease end under a
 * budget, two drains made 388 deliveries of 120 webhooks.) The one other way a key goes out
 * twice is not the lease's: a send that outlives the 300 ms timeout on a starved machine
 * reaches the receiver after the drain recorded it as failed, and its retry sends it again. Such
 * keys are told apart (the sender saw its signal abort) and named in the summary.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { SHORT_LEASE } from '../support/drain-fixtures.js';
import { countingExecutor } from '../support/drivers.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { account, type DeliveryLedger, startDeliveryLedger } from './support/delivery-ledger.js';
import { recordScenario } from './support/scenario-results.js';

const database = useTestDatabase();
const WEBHOOKS = 120;
const RECEIVER_DELAY_MS = 100;
/** The options (SHORT_LEASE) under a budget Workers Paid gives by default. */
const DRAIN_OPTIONS = { ...SHORT_LEASE, subrequestBudget: 10_000 } as const;
/** How soon a drain that found nothing looks again: a tight cron, so drains keep overlapping. */
const IDLE_PAUSE_MS = 20;
/** The whole scenario must be done by then: about 7 s of sends on 2 drains, 1 s on 4. */
const SCENARIO_DEADLINE_MS = 60_000;

let ledger: DeliveryLedger;

beforeAll(async () => {
  ledger = await startDeliveryLedger();
  ledger.delayMs = RECEIVER_DELAY_MS;
});
afterAll(async () => {
  await ledger?.close();
});

describe.each([
  { drains: 2, concurrency: 1 },
  { drains: 4, concurrency: 3 },
])(
  '$drains overlapping drains, concurrency $concurrency, a 1 s lease under a budget',
  ({ drains, concurrency }) => {
    it(`deliver ${WEBHOOKS} webhooks to a ${RECEIVER_DELAY_MS} ms receiver, each exactly once`, async () => {
      const schema = `lease_budget_${drains}`;
      const outbox = createOutbox({ schema });
      const db = pgExecutor(database.pool);
      await outbox.migrate(db);
      const committed = await outbox.enqueue(
        db,
        Array.from({ length: WEBHOOKS }, (_, index) => ({
          kind: 'webhook',
          payload: { url: `${ledger.url}/${schema}`, body: { index } },
        })),
      );
      const secret = generateWebhookSecret();
      const store = outbox.store(db);
      const before = ledger.deliveries.length;
      const giveUpAt = Date.now() + SCENARIO_DEADLINE_MS;
      let runs = 0;
      let stale = 0;
      /** Keys whose send the drain's timeout aborted: the receiver may still have taken them. */
      const timedOut = new Set<string>();
      /** The most requests one run made: statements at its executor, requests at the receiver. */
      let most = 0;
      const finished = async () => {
        const stats = await store.stats(new Date());
        return stats.pending + stats.claimed + stats.leaseExpired === 0;
      };
      const drainInLoop = async (drain: number) => {
        // Each drain its own executor and user agent, so its requests are counted apart.
        const counted = countingExecutor(db);
        const userAgent = `lease-budget-drain-${drain}`;
        const sender = loopbackWebhookSender(ledger.port, { secret, userAgent });
        const webhook: Sender = async (message, signal, context) => {
          try {
            return await sender(message, signal, context);
          } finally {
            if (signal.aborted) timedOut.add(message.key);
          }
        };
        const sentBy = () => ledger.deliveries.filter(({ by }) => by === userAgent).length;
        while (!(await finished())) {
          if (Date.now() > giveUpAt) throw new Error('the drains did not finish in time');
          runs += 1;
          const [statementsBefore, sendsBefore] = [counted.statements, sentBy()];
          const report = await drainOnce({
            store: outbox.store(counted),
            senders: { webhook },
            ...DRAIN_OPTIONS,
            concurrency,
          });
          stale += report.stale;
          most = Math.max(most, counted.statements - statementsBefore + sentBy() - sendsBefore);
          if (report.claimed === 0) {
            await new Promise((resolve) => setTimeout(resolve, IDLE_PAUSE_MS));
          }
        }
      };
      await Promise.all(Array.from({ length: drains }, (_, drain) => drainInLoop(drain)));

      const mine = ledger.deliveries.slice(before);
      const result = account(mine, committed);
      recordScenario(`lease-budget-${drains}`, {
        scenario: `lease under a budget: ${drains} overlapping drainOnce loops, concurrency ${concurrency}, budget 10000, batch 2, lease 1 s, ${RECEIVER_DELAY_MS} ms receiver`,
        runs,
        messages: committed.length,
        faults: 0,
        injected: `none (${stale} stale outcomes, ${timedOut.size} sends timed out)`,
        lost: result.lost.length,
        duplicated: result.extraDeliveries,
        rolledBackSent: result.rolledBackSent.length,
        subrequests: { most, budget: DRAIN_OPTIONS.subrequestBudget },
        duplicatesAllowed:
          result.extraDeliveries === 0
            ? ''
            : 'the receiver took a send after its timeout aborted it (the drain recorded a retry); resent under the same key',
      });
      const notTimedOut = [...result.duplicated.keys()].filter((key) => !timedOut.has(key));
      expect({
        duplicatedNotTimedOut: notTimedOut,
        lost: result.lost.length,
        stale,
      }).toEqual({ duplicatedNotTimedOut: [], lost: 0, stale: 0 });
      expect(mine.length).toBe(WEBHOOKS + result.extraDeliveries);
      expect((await store.stats(new Date())).delivered).toBe(WEBHOOKS);
      expect(most).toBeLessThanOrEqual(DRAIN_OPTIONS.subrequestBudget);
    });
  },
);
