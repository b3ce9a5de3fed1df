/**
 * A receiver's `Retry-After` pauses its destination for every drain (issue 28): a real receiver
 * answers 429 with `Retry-After: 30`, and two overlapping drains, each on its own connection,
 * send it nothing for 30 s on a clock the test moves, while another receiver's messages go
 * on; then one probe, then the rest.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';

const database = useTestDatabase();
let limited: LoopbackServer;
let steady: LoopbackServer;
/** Whether the limited receiver still asks to be left alone. */
let asking = true;

beforeAll(async () => {
  limited = await startLoopbackServer((_request, response) => {
    if (asking) response.writeHead(429, { 'retry-after': '30' }).end();
    else response.writeHead(204).end();
  });
  steady = await startLoopbackServer((_request, response) => response.writeHead(204).end());
});

afterAll(async () => {
  await limited?.close();
  await steady?.close();
});

const outbox = createOutbox({ schema: 'outbox' });

describe('Retry-After', () => {
  it('pauses its destination for 30 s across two overlapping drains, then one probe goes first', async () => {
    const db = pgExecutor(database.pool);
    const webhooks = (server: LoopbackServer, count: number) =>
      outbox.enqueue(
        db,
        Array.from({ length: count }, (_, n) => ({
          kind: 'webhook',
          payload: { url: `${server.url}/hook`, body: { n } },
        })),
      );
    await webhooks(limited, 10);
    // Two drains, each with its own pool, as two invocations of a cron would be.
    const pools = [0, 1].map(() => {
      const pool = new pg.Pool({ connectionString: database.url, max: 2 });
      // The file's database is dropped WITH (FORCE) once it ends: a backend still closing
      // then reports its termination to a client this pool is ending, which is no failure.
      pool.on('error', () => {});
      return pool;
    });
    const clock = fakeClock();
    // One drain over `pool` that sends at most `maxMessages` (all that is due by default).
    const drainOver = (pool: pg.Pool, maxMessages?: number) =>
      drainOnce({
        store: outbox.store(pgExecutor(pool)),
        senders: {
          webhook: webhookSender({
            secret: generateWebhookSecret(),
            environment: 'development',
            allowHosts: [`127.0.0.1:${limited.port}`, `127.0.0.1:${steady.port}`],
            resolveHost: false,
            clock,
          }),
        },
        clock,
        maxMessages,
        batchSize: 1,
        concurrency: 1,
        prefetch: false,
        // Each outcome written as it comes, so a claim after it sees the pause.
        settleGroupSize: 1,
      });
    const drainBoth = (maxMessages?: number) =>
      Promise.all(pools.map((pool) => drainOver(pool, maxMessages)));
    try {
      // The first send is answered 429 with Retry-After: 30 (one drain, one message, so the
      // count below does not hang on how fast a settle commits beside the next claim).
      const firstDrain = await drainOver(pools[0]!, 1);
      expect(firstDrain).toMatchObject({ retried: 1 });
      const askedAt = clock.now().getTime();
      const first = limited.requests.length;
      expect(first).toBe(1);
      const { rows } = await database.pool.query(
        'SELECT paused_by, paused_until FROM outbox.destinations WHERE destination = $1',
        [new URL(limited.url).origin],
      );
      expect(rows).toEqual([
        { paused_by: 'retry-after', paused_until: new Date(askedAt + 30_000) },
      ]);

      // For 30 s neither drain sends it anything; the steady receiver's messages go on.
      asking = false;
      await webhooks(steady, 5);
      for (const at of [1_000, 15_000, 29_999]) {
        clock.set(new Date(askedAt + at));
        await drainBoth();
      }
      expect(limited.requests).toHaveLength(first);
      expect(steady.requests).toHaveLength(5);

      // At 30 s the pause is over: a probe goes (that only one of two overlapping claims takes
      // it is test/store/destination-health.test.ts's), it is delivered, and the destination is
      // closed again.
      clock.set(new Date(askedAt + 30_000));
      await drainBoth(1);
      expect(limited.requests.length).toBeGreaterThan(first);
      const after = await database.pool.query(
        'SELECT paused_until FROM outbox.destinations WHERE destination = $1',
        [new URL(limited.url).origin],
      );
      expect(after.rows).toEqual([{ paused_until: null }]);
      clock.set(new Date(askedAt + 31_000));
      await drainBoth();
      clock.set(new Date(askedAt + 120_000));
      await drainBoth();
      const keys = new Set(limited.requests.map((request) => request.headers['webhook-id']));
      expect(keys.size).toBe(10);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });
});
