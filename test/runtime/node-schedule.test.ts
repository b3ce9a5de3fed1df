/**
 * The Node drain schedule over real PostgreSQL: what it adds to the drain loop (whose rules
 * test/runtime/drain-loop.test.ts covers) is the setup it is given, drained and purged as the
 * serverless kits do it, and one JSON line per tick and per purge.
 */
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { isOutboxError } from '../../src/core/errors.js';
import type { BatchSqlExecutor } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import type { DrainerOptions } from '../../src/runtime/drainer.js';
import { startDrainSchedule } from '../../src/runtime/node.js';
import { useTestDatabase } from '../support/database.js';
import { recordingSender, sleep } from '../support/drain-fixtures.js';
import { waitFor } from '../support/wait-for.js';

const KIND = 'schedule.probe';
const outbox = createOutbox({ kinds: { [KIND]: true } });
const database = useTestDatabase();
let db: BatchSqlExecutor;

let log: MockInstance<typeof console.log>;
let error: MockInstance<typeof console.error>;

beforeEach(async () => {
  db = pgExecutor(database.pool);
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
  log = vi.spyOn(console, 'log').mockImplementation(() => {});
  error = vi.spyOn(console, 'error').mockImplementation(() => {});
});

afterEach(() => {
  log.mockRestore();
  error.mockRestore();
});

/** The JSON lines written to `spy` whose message is `message`. */
function linesOf(spy: MockInstance, message: string): Record<string, unknown>[] {
  return spy.mock.calls
    .map(([line]) => JSON.parse(String(line)) as Record<string, unknown>)
    .filter((line) => line.message === message);
}

async function enqueue(count: number): Promise<string[]> {
  return outbox.enqueue(
    db,
    Array.from({ length: count }, (_, n) => ({ kind: KIND, payload: { n } })),
  );
}

async function states(): Promise<string[]> {
  const { rows } = await database.pool.query('SELECT state FROM outbox.all_messages');
  return rows.map((row) => String(row.state));
}

describe('startDrainSchedule', () => {
  it('drains the setup on each tick and logs one JSON line per tick, as the kits do', async () => {
    await enqueue(2);
    const sender = recordingSender();
    const schedule = startDrainSchedule(
      { store: outbox.store(db), senders: { [KIND]: sender.send } },
      { intervalMs: 50, purgeIntervalMs: false, logFields: { instance: 'a' } },
    );
    await waitFor('three ticks', () => linesOf(log, 'outbox drain').length >= 3);
    await schedule.stop();
    expect(sender.delivered).toHaveLength(2);
    const [first, second] = linesOf(log, 'outbox drain');
    expect(first).toMatchObject({
      level: 'info',
      runtime: 'node',
      instance: 'a',
      tick: 1,
      delivered: 2,
      stopReason: 'empty',
    });
    expect(second).toMatchObject({ runtime: 'node', tick: 2, delivered: 0 });
    expect(linesOf(log, 'outbox purge')).toEqual([]);
  });

  it("purges with the setup's retention and purgeWith on the first tick, and logs the purge as one line", async () => {
    await enqueue(1);
    const sender = recordingSender();
    const purgedAt: Date[] = [];
    const setup: DrainerOptions = {
      store: outbox.store(db),
      senders: { [KIND]: sender.send },
      // Delivered rows go at once: the default (7 days) would keep the one just delivered.
      purge: { deliveredOlderThanMs: 0 },
      purgeWith: async (now) => {
        purgedAt.push(now);
        return { expiredSessions: 3 };
      },
    };
    const schedule = startDrainSchedule(setup, { intervalMs: 50 });
    await waitFor('the purge line', () => linesOf(log, 'outbox purge').length === 1);
    await schedule.stop();
    expect(linesOf(log, 'outbox purge')).toEqual([
      {
        level: 'info',
        message: 'outbox purge',
        runtime: 'node',
        expiredSessions: 3,
        deliveredDeleted: 1,
        deadDeleted: 0,
        statements: expect.any(Number),
      },
    ]);
    expect(await states()).toEqual([]);
    expect(purgedAt).toHaveLength(1);
  });

  it('logs a failed tick as one JSON line and keeps going, even when the failure is not transient', async () => {
    await enqueue(1);
    const real = outbox.store(db);
    let claims = 0;
    const failures: unknown[] = [];
    const schedule = startDrainSchedule(
      {
        store: {
          settleFits: (requests) => real.settleFits(requests),
          claim: (request) => {
            claims += 1;
            if (claims === 1) throw new TypeError('a bug in a store');
            return real.claim(request);
          },
          settle: (requests, now, options) => real.settle(requests, now, options),
          purge: (request) => real.purge(request),
        },
        senders: { [KIND]: recordingSender().send },
      },
      { intervalMs: 50, purgeIntervalMs: false, onError: ({ error }) => failures.push(error) },
    );
    await waitFor('the message delivered by a later tick', async () =>
      (await states()).includes('delivered'),
    );
    await schedule.stop();
    expect(linesOf(error, 'scheduled drain failed; retrying next tick')).toEqual([
      {
        level: 'error',
        message: 'scheduled drain failed; retrying next tick',
        runtime: 'node',
        tick: 1,
        error: 'TypeError: a bug in a store',
      },
    ]);
    expect(failures).toHaveLength(1);
    expect((await schedule.stopped).failedTicks).toBe(1);
  });

  it('lets the running tick finish and record its outcome before stop() resolves', async () => {
    await enqueue(1);
    const sender = recordingSender(() => sleep(200));
    const schedule = startDrainSchedule(
      { store: outbox.store(db), senders: { [KIND]: sender.send } },
      { intervalMs: 60_000, purgeIntervalMs: false, logRuns: false },
    );
    await waitFor('the send to start', () => sender.calls.length === 1);
    await schedule.stop();
    expect(await states()).toEqual(['delivered']);
    expect(log).not.toHaveBeenCalled();
  });

  it('refuses the old { drain, purgeStore } options by name rather than drain nothing', () => {
    const old = { drain: async () => ({}), purgeStore: outbox.store(db), logger: console };
    const refusal = (() => {
      try {
        startDrainSchedule(old as unknown as DrainerOptions);
      } catch (caught) {
        return caught;
      }
    })();
    expect(isOutboxError(refusal) && refusal.code).toBe('OUTBOX_CONFIGURATION');
    expect((refusal as Error).message).toMatch(/takes the drainer setup itself/);
  });
});
