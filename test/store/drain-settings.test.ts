/**
 * Settings a drain refuses before it claims anything. The lease rule is what keeps two drains
 * from sending one message: a send that starts must be able to time out and be settled before
 * its lease ends, or another drain could claim the row while the send still runs.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { DEFAULT_SETTLE_GROUP_MS } from '../../src/core/drain-settings.js';
import { isOutboxError } from '../../src/core/errors.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { useDriver } from '../support/drivers.js';

const database = useTestDatabase();

describe('drain settings', () => {
  const driver = useDriver('node-pg', database);

  it('refuses a lease that a send plus its settle could outlast, and claims nothing', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const [key] = await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    const sender = recordingSender();
    const error = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      leaseMs: 1000,
      sendTimeoutMs: 800,
      roundTripReserveMs: 200,
    }).catch((e: unknown) => e);
    expect(isOutboxError(error) && error.code).toBe('OUTBOX_CONFIGURATION');
    expect((error as Error).message).toMatch(/leaseMs \(1000\) must exceed sendTimeoutMs/);
    expect(sender.calls).toHaveLength(0);
    const [message] = (await store.list({ state: 'pending' })).messages;
    expect(message).toMatchObject({ key, attempts: 0 });

    // With room for a send, its group's wait and a settle (and the claim's own round trip, which
    // the lease also covers), the same settings are safe.
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      leaseMs: 800 + DEFAULT_SETTLE_GROUP_MS + 200 + 100,
      sendTimeoutMs: 800,
      roundTripReserveMs: 200,
    });
    expect(report).toMatchObject({ delivered: 1 });
  });

  it('refuses a message or subrequest count that is not a whole number, before claiming', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, { kind: 'test.kind', payload: {} });
    const sender = recordingSender();
    for (const [name, value] of [
      ['maxMessages', 10.5],
      ['subrequestBudget', 49.5],
      ['subrequestBudget', -1],
      ['maxMessages', Number.NaN],
    ] as const) {
      const error = await drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        [name]: value,
      }).catch((e: unknown) => e);
      expect(isOutboxError(error) && error.code).toBe('OUTBOX_CONFIGURATION');
      expect((error as Error).message).toBe(`drainOnce: ${name} must be a whole number >= 0`);
    }
    expect(sender.calls).toHaveLength(0);
    // Unbounded stays the default.
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender.send },
      maxMessages: Number.POSITIVE_INFINITY,
    });
    expect(report).toMatchObject({ delivered: 1 });
  });
});
