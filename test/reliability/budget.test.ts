/**
 * Budgets that hold: drains over Neon's HTTP driver (every statement one request, as on
 * Workers) sending webhooks to many endpoints, each endpoint's secret read from the database.
 * The requests are counted where they arrive, at the Neon proxy and at the receivers, and no
 * drain ever makes more than its budget. The case: budget 50, 30 webhooks to 30
 * endpoints, which made 65 subrequests with the fixed reserve.
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { neonHttpExecutor } from '../../src/drivers/neon-http.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { runScheduledDrain } from '../../src/runtime/drainer.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { account, type DeliveryLedger, startDeliveryLedger } from './support/delivery-ledger.js';
import { recordScenario } from './support/scenario-results.js';

const database = useTestDatabase();
let proxy: NeonProxy;
let ledger: DeliveryLedger;

beforeAll(async () => {
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  applyNeonLocalConfig(neonConfig, proxy);
  ledger = await startDeliveryLedger();
  await database.pool.query(
    'CREATE TABLE public.endpoints (id text PRIMARY KEY, secret text NOT NULL)',
  );
});
afterAll(async () => {
  await Promise.all([ledger?.close(), proxy?.close()]);
});

describe.each([
  { budget: 50, endpoints: 30, perEndpoint: 1 },
  { budget: 1000, endpoints: 400, perEndpoint: 2 },
])(
  'drains with a budget of $budget subrequests, webhooks to $endpoints endpoints',
  ({ budget, endpoints, perEndpoint }) => {
    it('never make more requests than the budget, counted at the proxy and the receivers', async () => {
      const schema = `budget_${budget}`;
      const outbox = createOutbox({ schema });
      await outbox.migrate(pgExecutor(database.pool));
      const secrets = Array.from({ length: endpoints }, (_, index) => ({
        id: `${schema}-e${index}`,
        secret: generateWebhookSecret(),
      }));
      await database.pool.query(
        'INSERT INTO public.endpoints (id, secret) SELECT * FROM unnest($1::text[], $2::text[])',
        [secrets.map((s) => s.id), secrets.map((s) => s.secret)],
      );
      const committed = await outbox.enqueue(
        pgExecutor(database.pool),
        Array.from({ length: endpoints * perEndpoint }, (_, index) => {
          const endpoint = secrets[index % endpoints]!.id;
          return {
            kind: 'webhook',
            payload: { url: `${ledger.url}/${endpoint}`, endpointId: endpoint, body: { index } },
          };
        }),
      );

      // As a Worker builds it: Neon HTTP for the outbox and for the endpoint-secret reads.
      const db = neonHttpExecutor(neon(database.url));
      const webhook = webhookSender({
        secretFor: async (_message, payload) => {
          const { rows } = await db.query('SELECT secret FROM public.endpoints WHERE id = $1', [
            payload.endpointId,
          ]);
          return rows[0]?.secret as string | undefined;
        },
        environment: 'development',
        allowHosts: [`127.0.0.1:${ledger.port}`],
        resolveHost: false,
      });
      const setup = { store: outbox.store(db), senders: { webhook } };

      const before = ledger.deliveries.length;
      let most = 0;
      let runs = 0;
      for (;;) {
        runs += 1;
        expect(runs).toBeLessThan(60);
        const sqlBefore = proxy.httpRequests;
        const sendsBefore = ledger.requests();
        const { drain } = await runScheduledDrain(setup, {
          budgetMs: 30_000,
          subrequestBudget: budget,
        });
        const made = proxy.httpRequests - sqlBefore + (ledger.requests() - sendsBefore);
        expect(made).toBeLessThanOrEqual(budget);
        most = Math.max(most, made);
        if (drain?.claimed === 0) break;
      }
      const mine = ledger.deliveries.slice(before);
      const result = account(mine, committed);
      expect(result.lost).toEqual([]);
      expect(result.extraDeliveries).toBe(0);
      // The budget is used, not just respected: a run goes near it.
      expect(most).toBeGreaterThan(budget * 0.8);

      recordScenario(`budget-${budget}`, {
        scenario: `budget ${budget}: ${committed.length} webhooks to ${endpoints} endpoints over Neon HTTP, secrets read per endpoint`,
        runs,
        messages: committed.length,
        faults: 0,
        injected: 'none (counts requests at the proxy and receivers)',
        lost: result.lost.length,
        duplicated: result.extraDeliveries,
        rolledBackSent: result.rolledBackSent.length,
        subrequests: { most, budget },
        duplicatesAllowed: '',
      });
    });
  },
);
