/**
 * The subrequest budget is exact: every SQL round trip, send and sender-reported lookup is
 * counted before it is made, so a drain never makes one more than its budget, however many
 * webhook endpoints its messages go to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { isSubrequestBudgetError } from '../../src/core/errors.js';
import type { SqlExecutor } from '../../src/core/ports.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';

const database = useTestDatabase();
const secret = generateWebhookSecret();
let receiver: LoopbackServer;

beforeAll(async () => {
  receiver = await startLoopbackServer((_request, response) => response.writeHead(204).end());
});
afterAll(async () => {
  await receiver?.close();
});

/** An executor that counts every statement it runs: the SQL subrequests. */
function counted(inner: SqlExecutor): SqlExecutor & { statements: () => number } {
  let statements = 0;
  return {
    statements: () => statements,
    query(text, params) {
      statements += 1;
      return inner.query(text, params);
    },
  };
}

describe('a drain whose webhooks go to many endpoints', () => {
  it.each([
    [50, 30],
    [1000, 300],
  ])(
    'with a budget of %i and %i endpoints makes at most that many subrequests per run, and delivers everything over several runs',
    async (budget, endpoints) => {
      const outbox = createOutbox({ schema: 'outbox' });
      const sql = counted(pgExecutor(database.pool));
      const store = outbox.store(sql);
      const lookups = counted(pgExecutor(database.pool));
      const webhook = webhookSender({
        // One SQL read per lookup, like an endpoints table.
        secretFor: async (_message, payload) => {
          await lookups.query('SELECT $1::text AS id', [payload.endpointId]);
          return secret;
        },
        environment: 'development',
        allowHosts: [`127.0.0.1:${receiver.port}`],
        resolveHost: false,
      });
      const before = receiver.requests.length;
      await outbox.enqueue(
        pgExecutor(database.pool),
        Array.from({ length: endpoints * 2 }, (_, index) => ({
          kind: 'webhook',
          payload: {
            url: `${receiver.url}/e${index % endpoints}`,
            endpointId: `e${index % endpoints}`,
            body: { index },
          },
        })),
      );
      const clock = fakeClock();
      let delivered = 0;
      for (let runs = 0; delivered < endpoints * 2; runs++) {
        expect(runs).toBeLessThan(100);
        const sqlBefore = sql.statements();
        const lookupsBefore = lookups.statements();
        const sentBefore = receiver.requests.length;
        const report = await drainOnce({
          store,
          senders: { webhook },
          subrequestBudget: budget,
          clock,
        });
        const made =
          sql.statements() -
          sqlBefore +
          (lookups.statements() - lookupsBefore) +
          (receiver.requests.length - sentBefore);
        expect(made).toBeLessThanOrEqual(budget);
        // The report counts what was made: no request went uncounted.
        expect(report.roundTrips).toBe(sql.statements() - sqlBefore);
        expect(report.senderSubrequests).toBe(lookups.statements() - lookupsBefore);
        expect(report.sends).toBeGreaterThanOrEqual(receiver.requests.length - sentBefore);
        delivered += report.delivered;
      }
      expect(receiver.requests.length - before).toBe(endpoints * 2);
    },
  );
});

describe('a sender that reports what it spends', () => {
  it('is refused before the request when the budget cannot cover it: the message goes back unsent, no attempt spent', async () => {
    const outbox = createOutbox({ schema: 'outbox', kinds: { 'test.kind': true } });
    const db = pgExecutor(database.pool);
    const store = outbox.store(db);
    const [key] = await outbox.enqueue(db, { kind: 'test.kind', payload: { n: 1 } });
    const refusals: unknown[] = [];
    let lookupsMade = 0;
    const sender: Sender = async (_message, _signal, context) => {
      try {
        context?.spend(10, 'token fetch');
      } catch (error) {
        refusals.push(error);
        throw error;
      }
      lookupsMade += 1;
    };
    const clock = fakeClock();
    // Claim 1 + send 1 + settle 1 leave 2 of 5: a 10-request lookup cannot fit.
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender },
      subrequestBudget: 5,
      clock,
    });
    expect(lookupsMade).toBe(0);
    expect(refusals).toHaveLength(1);
    expect(isSubrequestBudgetError(refusals[0])).toBe(true);
    expect(report).toMatchObject({ released: 1, delivered: 0, stopReason: 'budget' });
    const row = await store.getByKey(key!);
    expect(row).toMatchObject({ state: 'pending', attempts: 0 });

    const roomy = await drainOnce({
      store,
      senders: { 'test.kind': sender },
      subrequestBudget: 20,
      clock,
    });
    expect(roomy.delivered).toBe(1);
    expect(roomy.senderSubrequests).toBe(10);
    expect(lookupsMade).toBe(1);
  });
});
