/**
 * A scheduled drain over Neon HTTP rides out a compute that refuses connections for a while:
 * the stand-in answers every query with Neon's connect-time 500 for a few seconds, and a loop
 * of `drainOnce` calls (the way a schedule runs them: a retryable failure means "try again
 * next tick") delivers every message once the 500s stop, with no operator and no run that
 * stops for good.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { isOutboxError } from '../../src/core/errors.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { isRetryableDatabaseError } from '../../src/drivers/postgres-errors.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender, sleep } from '../support/drain-fixtures.js';
import { type Driver, openDriver } from '../support/drivers.js';

const database = useTestDatabase();

/** How long the compute keeps refusing: several ticks, short enough for a quick test. */
const OUTAGE_MS = 2_000;
/** The schedule's tick in this test. */
const TICK_MS = 100;
const MESSAGES = 30;

/** What a schedule treats as "try again next tick" rather than a reason to stop. */
function isTransient(error: unknown): boolean {
  return (
    isRetryableDatabaseError(error) || (isOutboxError(error) && error.code === 'OUTBOX_DATABASE')
  );
}

describe('draining over Neon HTTP through connect-time 500s', () => {
  let proxy: NeonProxy;
  let driver: Driver;

  beforeAll(async () => {
    proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
    driver = await openDriver('neon-http', database, proxy);
  });

  afterAll(async () => {
    await driver?.close();
    await proxy?.close();
  });

  it('delivers every message, each once, after the compute comes back', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: MESSAGES }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const sender = recordingSender();

    proxy.simulateConnectFailure({
      kind: 'postgres',
      code: '57P03',
      message: 'the database system is starting up',
    });
    const outageEnds = Date.now() + OUTAGE_MS;
    const recovery = sleep(OUTAGE_MS).then(() => proxy.simulateConnectFailure(undefined));

    const failures: unknown[] = [];
    const giveUpAt = Date.now() + OUTAGE_MS + 20_000;
    while (sender.delivered.length < MESSAGES && Date.now() < giveUpAt) {
      try {
        await drainOnce({ store, senders: { 'test.kind': sender.send }, batchSize: 10 });
      } catch (error) {
        if (!isTransient(error)) throw error; // a schedule would stop here for good
        failures.push(error);
      }
      await sleep(TICK_MS);
    }
    await recovery;

    expect(failures.length).toBeGreaterThan(1);
    expect(Date.now()).toBeGreaterThanOrEqual(outageEnds);
    expect(new Set(sender.delivered)).toEqual(new Set(keys));
    expect(keys.every((key) => sender.timesSent(key) === 1)).toBe(true);
    expect(await store.stats(new Date())).toMatchObject({ pending: 0, claimed: 0, delivered: 30 });
  });
});
