/**
 * A kill between send and settle, for the Cloudflare Queues sender in workerd: `wrangler dev`
 * runs test/fixtures/queue-worker with its settles held at the ledger here, its cron drain sends
 * to the local queue, and once the consumer has posted those messages' ids, wrangler and workerd
 * are SIGKILLed together. A second `wrangler dev` of the same Worker, holding nothing, takes the
 * rows back when their lease ends and sends them again, under the same id.
 *
 * Wrangler's local queue (miniflare's queue broker) keeps its messages in the memory of workerd,
 * whatever `--persist-to` says, and each `wrangler dev` here has its own state anyway: a kill
 * loses what the consumer has not been handed yet, where Cloudflare keeps a message once
 * `sendBatch` resolved. So the kill waits until the consumer has every message the held settle
 * names, and each message's second arrival is the restarted drain's resend, never a queue's
 * redelivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { queuePayloadValidator } from '../../src/senders/cloudflare-queues/index.js';
import type { WranglerDev } from '../runtime/wrangler-dev.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startWorkerStack, type WorkerStack } from '../support/worker-stack.js';

const database = useTestDatabase();
const CRON = '* * * * *';
const CONFIG = 'test/fixtures/queue-worker/wrangler.toml';
/** Committed before the killed drain: one claim, one `sendBatch`, one held settle. */
const SENT_BEFORE_KILL = 20;
/** Committed after the kill: the restarted drain's first sends, to show it resends no more. */
const COMMITTED_AFTER_KILL = 20;
const ROLLED_BACK = 10;
/**
 * The killed drain's lease: short, so its rows come back within the test instead of after the
 * default two minutes, and long enough for its one send and settle.
 */
const LEASE_MS = 5_000;

const outbox = createOutbox({ kinds: { 'order.event': queuePayloadValidator } });
let stack: WorkerStack;
let killed: WranglerDev | undefined;
let restarted: WranglerDev | undefined;
/** How many times each id arrived at the consumer. */
const arrivals = new Map<string, number>();
/** The keys of the settle the killed drain was about to write. */
const held: string[] = [];

beforeAll(async () => {
  stack = await startWorkerStack(database, (request, response) => {
    const ids = JSON.parse(request.body) as string[];
    if (request.url === '/settling') {
      // Never answered: the drain waits here, between its send and its settle, until the kill.
      held.push(...ids);
      return;
    }
    for (const id of ids) arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
    response.end('ok');
  });
}, 120_000);

afterAll(async () => {
  // A test that failed before its kill still ends that Worker as the test would have.
  await killed?.kill();
  await stack?.stop();
});

const sorted = (keys: Iterable<string>) => [...keys].sort();

async function enqueueCommitted(count: number, from: number): Promise<string[]> {
  return outbox.enqueue(
    pgExecutor(database.pool),
    Array.from({ length: count }, (_, index) => ({
      kind: 'order.event',
      payload: { orderId: from + index, status: 'placed' },
    })),
  );
}

async function enqueueRolledBack(count: number, from: number): Promise<string[]> {
  const client = await database.pool.connect();
  try {
    await client.query('BEGIN');
    const keys = await outbox.enqueue(
      pgExecutor(client),
      Array.from({ length: count }, (_, index) => ({
        kind: 'order.event',
        payload: { orderId: from + index, status: 'placed' },
      })),
    );
    await client.query('ROLLBACK');
    return keys;
  } finally {
    client.release();
  }
}

/** The rows of `keys` by state and attempts, as the database has them. */
async function rowsOf(keys: readonly string[]) {
  const { rows } = await database.pool.query<{ state: string; attempts: number; n: number }>(
    `SELECT state, attempts, count(*)::int AS n FROM outbox.all_messages
     WHERE key = ANY($1::uuid[]) GROUP BY state, attempts ORDER BY attempts`,
    [keys],
  );
  return rows;
}

describe('the Cloudflare Queues sender in workerd, killed between send and settle', () => {
  it(`resends with the same id: the ${SENT_BEFORE_KILL} messages the killed Worker sent arrive twice, the rest once, and none rolled back`, async () => {
    const { ledger } = stack;
    const vars = { LEDGER_URL: `${ledger.url}/arrived` };
    const sentBeforeKill = await enqueueCommitted(SENT_BEFORE_KILL, 0);
    const rolledBack = await enqueueRolledBack(ROLLED_BACK, SENT_BEFORE_KILL);

    killed = await stack.startWorker(
      { ...vars, STALL_SETTLE_URL: `${ledger.url}/settling`, LEASE_MS: String(LEASE_MS) },
      { config: CONFIG },
    );
    // Not awaited to its end: the invocation hangs in its settle until the kill fails the fetch.
    const killedRun = killed.scheduled(CRON).then(
      (response) => response.status,
      (error: unknown) => error,
    );
    await waitFor('the killed drain to reach its settle', () => held.length > 0);
    expect(sorted(held)).toEqual(sorted(sentBeforeKill));
    // The send really happened: the consumer has every message the held settle names.
    await waitFor('the messages of the held settle at the consumer', () =>
      held.every((key) => arrivals.has(key)),
    );
    await killed.kill();
    expect(await killedRun).toBeInstanceOf(Error);
    expect(sorted(arrivals.keys())).toEqual(sorted(held));
    // Sent, and still claimed: the settle never reached the database.
    expect(await rowsOf(sentBeforeKill)).toEqual([
      { state: 'claimed', attempts: 1, n: SENT_BEFORE_KILL },
    ]);

    const committedAfterKill = await enqueueCommitted(COMMITTED_AFTER_KILL, 1_000);
    restarted = await stack.startWorker(vars, { config: CONFIG });
    await waitFor('the lease of the killed drain to run out', async () => {
      const { rows } = await database.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox.all_messages
         WHERE key = ANY($1::uuid[]) AND state = 'claimed' AND lease_expires_at <= now()`,
        [sentBeforeKill],
      );
      return rows[0]?.n === SENT_BEFORE_KILL;
    });
    expect((await restarted.scheduled(CRON)).status).toBe(200);
    const drainReport = () =>
      restarted?.jsonLines().find((line) => line.message === 'outbox drain');
    await waitFor('the report of the restarted drain', () => drainReport() !== undefined);
    expect(drainReport()).toMatchObject({ delivered: SENT_BEFORE_KILL + COMMITTED_AFTER_KILL });
    // Recorded delivered by the restarted drain: the killed one's rows on their second attempt.
    expect(await rowsOf(sentBeforeKill)).toEqual([
      { state: 'delivered', attempts: 2, n: SENT_BEFORE_KILL },
    ]);
    expect(await rowsOf(committedAfterKill)).toEqual([
      { state: 'delivered', attempts: 1, n: COMMITTED_AFTER_KILL },
    ]);

    const committed = [...sentBeforeKill, ...committedAfterKill];
    await waitFor('every message the restarted drain sent, at the consumer', () =>
      committed.every((key) => (arrivals.get(key) ?? 0) >= (held.includes(key) ? 2 : 1)),
    );
    const arrivedTwiceOrMore = [...arrivals].filter(([, count]) => count > 1).map(([id]) => id);
    expect(sorted(arrivedTwiceOrMore)).toEqual(sorted(held));
    expect(held.map((key) => arrivals.get(key))).toEqual(held.map(() => 2));
    expect(committedAfterKill.map((key) => arrivals.get(key))).toEqual(
      committedAfterKill.map(() => 1),
    );
    expect(sorted(arrivals.keys())).toEqual(sorted(committed));
    expect(rolledBack.filter((key) => arrivals.has(key))).toEqual([]);
  }, 120_000);
});
