/**
 * The Cloudflare Queues sender in workerd: `wrangler dev` runs test/fixtures/queue-worker, whose
 * cron drain sends to a local queue through the producer binding under Workers Free's 50
 * subrequests, and whose consumer posts every message's id to a loopback ledger here. Real
 * PostgreSQL through the local Neon stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import {
  QUEUE_MAX_MESSAGE_BYTES,
  queuePayloadValidator,
} from '../../src/senders/cloudflare-queues/index.js';
import type { WranglerDev } from '../runtime/wrangler-dev.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startWorkerStack, type WorkerStack } from '../support/worker-stack.js';

const database = useTestDatabase();
const CRON = '* * * * *';
const COMMITTED = 1000;
const ROLLED_BACK = 50;
/** Workers Free: what the fixture's drain is held to. */
const FREE_SUBREQUESTS = 50;

const outbox = createOutbox({ kinds: { 'order.event': queuePayloadValidator } });
let stack: WorkerStack;
let worker: WranglerDev;
/** How many times each id arrived at the consumer. */
const arrivals = new Map<string, number>();

beforeAll(async () => {
  stack = await startWorkerStack(database, (request, response) => {
    for (const id of JSON.parse(request.body) as string[]) {
      arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
    }
    response.end('ok');
  });
  worker = await stack.startWorker(
    { LEDGER_URL: `${stack.ledger.url}/arrived` },
    { config: 'test/fixtures/queue-worker/wrangler.toml' },
  );
}, 120_000);

afterAll(() => stack?.stop());

const payload = (index: number) => ({ orderId: index, status: 'placed' });

describe('the Cloudflare Queues sender in workerd, on the cron drain', () => {
  it(`delivers ${COMMITTED} committed messages through a local queue, 500 or more an invocation under ${FREE_SUBREQUESTS} subrequests, and none rolled back`, async () => {
    const db = pgExecutor(database.pool);
    const committed = await outbox.enqueue(
      db,
      Array.from({ length: COMMITTED }, (_, index) => ({
        kind: 'order.event',
        payload: payload(index),
      })),
    );
    const client = await database.pool.connect();
    let rolledBack: string[];
    try {
      await client.query('BEGIN');
      rolledBack = await outbox.enqueue(
        pgExecutor(client),
        Array.from({ length: ROLLED_BACK }, (_, index) => ({
          kind: 'order.event',
          payload: payload(COMMITTED + index),
        })),
      );
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }

    const reports: Record<string, unknown>[] = [];
    for (let invocation = 1; invocation <= 5; invocation++) {
      const ran = await worker.scheduled(CRON);
      expect(ran.status).toBe(200);
      // The Worker's console reaches us through wrangler's stdout, a moment after the response.
      const drainReport = () =>
        worker.jsonLines().filter((line) => line.message === 'outbox drain')[invocation - 1];
      await waitFor('the drain report of this invocation', () => drainReport() !== undefined);
      const report = drainReport()!;
      reports.push(report);
      if (Number(report.delivered) === 0) break;
    }
    const delivered = reports.map((report) => Number(report.delivered));
    expect(delivered.reduce((sum, count) => sum + count, 0)).toBe(COMMITTED);
    expect(delivered[0]).toBeGreaterThanOrEqual(500);
    for (const report of reports) {
      const subrequests =
        Number(report.roundTrips) + Number(report.sends) + Number(report.senderSubrequests);
      expect(subrequests, JSON.stringify(report)).toBeLessThanOrEqual(FREE_SUBREQUESTS);
    }

    // The consumer counts by key what arrived: every committed message, none rolled back.
    await waitFor('every committed message at the consumer', () =>
      committed.every((key) => arrivals.has(key)),
    );
    expect(committed.filter((key) => (arrivals.get(key) ?? 0) < 1)).toEqual([]);
    expect(rolledBack.filter((key) => arrivals.has(key))).toEqual([]);
    const { rows } = await database.pool.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM outbox.all_messages WHERE key = ANY($1::uuid[])
       GROUP BY state`,
      [committed],
    );
    expect(rows).toEqual([{ state: 'delivered', n: COMMITTED }]);
  }, 120_000);

  it('sends a batch over 256 KB in more calls, each counted, and sets aside a message over 128 KB without a call', async () => {
    const raw = createOutbox({ kinds: { 'raw.event': true } });
    const db = pgExecutor(database.pool);
    const large = await raw.enqueue(
      db,
      Array.from({ length: 30 }, (_, index) => ({
        kind: 'raw.event',
        payload: { index, note: 'x'.repeat(20_000) },
      })),
    );
    const [tooLarge] = await raw.enqueue(db, {
      kind: 'raw.event',
      payload: { note: 'x'.repeat(QUEUE_MAX_MESSAGE_BYTES) },
    });
    const before = worker.jsonLines().filter((line) => line.message === 'outbox drain').length;
    expect((await worker.scheduled(CRON)).status).toBe(200);
    const drainReport = () =>
      worker.jsonLines().filter((line) => line.message === 'outbox drain')[before];
    await waitFor('the drain report', () => drainReport() !== undefined);
    // 600 KB of messages: three calls or more, the ones beyond the first spent from the budget.
    expect(drainReport()).toMatchObject({ delivered: 30, dead: 1 });
    expect(Number(drainReport()!.senderSubrequests)).toBeGreaterThanOrEqual(2);
    await waitFor('the large messages at the consumer', () =>
      large.every((key) => arrivals.has(key)),
    );
    expect(arrivals.has(tooLarge!)).toBe(false);
    const { rows } = await database.pool.query<{ state: string; last_error: string }>(
      'SELECT state, last_error FROM outbox.all_messages WHERE key = $1',
      [tooLarge],
    );
    expect(rows[0]).toMatchObject({ state: 'dead' });
    expect(rows[0]?.last_error).toContain('over Cloudflare Queues');
  }, 60_000);

  it('refuses at enqueue a payload too large for a queue message, naming the field', async () => {
    const tooLarge = { note: 'x'.repeat(QUEUE_MAX_MESSAGE_BYTES) };
    await expect(
      outbox.enqueue(pgExecutor(database.pool), { kind: 'order.event', payload: tooLarge }),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'message.payload' });
  });
});
