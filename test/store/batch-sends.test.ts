/**
 * Batch senders (`BatchSender`): the drain hands a kind's claimed messages to one call, up to
 * the sender's `maxBatch`, counts one subrequest for it, settles each message by its own
 * result, never puts two messages of one ordering key in one batch, and sizes its claims under a
 * budget by what a request carries.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import type { BatchItemResult, BatchSender, OutboundMessage } from '../../src/core/sender.js';
import type { NewMessage } from '../../src/index.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender, sleep } from '../support/drain-fixtures.js';
import { countingExecutor, DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();

const messages = (count: number, orderingKeys?: number): NewMessage[] =>
  Array.from({ length: count }, (_, index) => ({
    kind: 'test.kind',
    payload: { index },
    orderingKey: orderingKeys ? `key-${index % orderingKeys}` : undefined,
  }));

/** A batch sender that records each call and answers each message by `answer`. */
function recordingBatchSender(
  maxBatch: number,
  answer: (message: OutboundMessage) => BatchItemResult | Promise<BatchItemResult> = () => ({
    delivered: true,
  }),
  before: () => Promise<void> | void = () => {},
) {
  const calls: OutboundMessage[][] = [];
  const sender: BatchSender = {
    maxBatch,
    async send(batch) {
      calls.push([...batch]);
      await before();
      return Promise.all(batch.map(answer));
    },
  };
  return { sender, calls };
}

describe.each(DRIVER_NAMES)('a batch sender, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  it('gets up to maxBatch messages a call, one send counted a call, each message delivered once', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, messages(45));
    const { sender, calls } = recordingBatchSender(10);
    const report = await drainOnce({ store, senders: { 'test.kind': sender } });
    expect(report).toMatchObject({ delivered: 45, released: 0, sends: calls.length });
    expect(Math.max(...calls.map((call) => call.length))).toBe(10);
    expect(calls.length).toBeLessThanOrEqual(6);
    expect(
      calls
        .flat()
        .map((message) => message.key)
        .sort(),
    ).toEqual([...keys].sort());
    expect((await store.stats(new Date())).pending).toBe(0);
  });

  it('settles each message of a partly failed batch on its own: delivered, retried, set aside', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, messages(9));
    const { sender } = recordingBatchSender(10, (message) => {
      const index = keys.indexOf(message.key);
      if (index % 3 === 1) {
        return { delivered: false, error: new RetryableDeliveryError('throttled entry') };
      }
      if (index % 3 === 2) {
        return { delivered: false, error: new PermanentDeliveryError('invalid entry') };
      }
      return { delivered: true, receipt: { status: 200 } };
    });
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender },
      backoff: { baseMs: 60_000, capMs: 60_000 },
    });
    expect(report).toMatchObject({ delivered: 3, retried: 3, dead: 3, sends: 1 });
    const states = await Promise.all(keys.map(async (key) => (await store.getByKey(key))?.state));
    expect(states).toEqual(
      Array.from({ length: 3 }, () => ['delivered', 'pending', 'dead']).flat(),
    );
    expect((await store.getByKey(keys[1]!))?.lastError).toContain('throttled entry');
  });

  it('fails every message of a batch alike when the call throws or answers for another count', async () => {
    for (const broken of ['throws', 'short'] as const) {
      const { outbox, store } = await freshOutbox(driver);
      await outbox.enqueue(driver.db, messages(4));
      const sender: BatchSender = {
        maxBatch: 10,
        async send(batch) {
          if (broken === 'throws') throw new RetryableDeliveryError('queue throttled the call');
          return batch.slice(1).map(() => ({ delivered: true }));
        },
      };
      const report = await drainOnce({
        store,
        senders: { 'test.kind': sender },
        backoff: { baseMs: 60_000, capMs: 60_000 },
      });
      expect(report, broken).toMatchObject({ delivered: 0, retried: 4, sends: 1 });
    }
  });

  it('never puts two messages of one ordering key in one batch, and sends each key in order', async () => {
    const { outbox, store } = await freshOutbox(driver);
    const keys = await outbox.enqueue(driver.db, messages(60, 4));
    const { sender, calls } = recordingBatchSender(
      10,
      () => ({ delivered: true }),
      () => sleep(1),
    );
    const report = await drainOnce({ store, senders: { 'test.kind': sender } });
    expect(report.delivered).toBe(60);
    for (const call of calls) {
      const orderingKeys = call.map((message) => message.orderingKey);
      expect(new Set(orderingKeys).size, JSON.stringify(orderingKeys)).toBe(call.length);
    }
    const sent = calls.flat();
    for (let key = 0; key < 4; key++) {
      const ofKey = (message: { orderingKey?: string | null }) =>
        message.orderingKey === `key-${key}`;
      expect(sent.filter(ofKey).map((message) => message.key)).toEqual(
        keys.filter((_, index) => index % 4 === key),
      );
    }
  });

  it('sends batches beside single sends of other kinds in one drain', async () => {
    const { outbox, store } = await freshOutbox(driver, { kinds: { 'other.kind': true } });
    await outbox.enqueue(driver.db, [
      ...messages(20),
      ...Array.from({ length: 5 }, (_, index) => ({ kind: 'other.kind', payload: { index } })),
    ]);
    const { sender, calls } = recordingBatchSender(10);
    const single = recordingSender();
    const report = await drainOnce({
      store,
      senders: { 'test.kind': sender, 'other.kind': single.send },
    });
    expect(report).toMatchObject({ delivered: 25, sends: calls.length + 5 });
    expect(single.calls).toHaveLength(5);
  });
});

describe('a batch sender under a subrequest budget, through node-pg', () => {
  const driver = useDriver('node-pg', database);

  it('claims by what a request carries: 50 subrequests send 500 messages or more, and never one over the budget', async () => {
    const { outbox } = await freshOutbox(driver);
    await outbox.enqueue(driver.db, messages(1000));
    const counted = countingExecutor(driver.db);
    const { sender, calls } = recordingBatchSender(100);
    const report = await drainOnce({
      store: outbox.store(counted),
      senders: { 'test.kind': sender },
      subrequestBudget: 50,
    });
    expect(counted.statements + calls.length).toBeLessThanOrEqual(50);
    expect(report.delivered).toBeGreaterThanOrEqual(500);
    expect(report.released).toBe(0);
  });

  it('refuses a batch sender whose maxBatch is not a whole number from 1 to 1,000', async () => {
    const { store } = await freshOutbox(driver);
    for (const maxBatch of [0, 1.5, 1001, Number.NaN]) {
      const sender: BatchSender = { maxBatch, send: async () => [] };
      await expect(drainOnce({ store, senders: { 'test.kind': sender } })).rejects.toThrow(
        /maxBatch from 1 to 1000/,
      );
    }
  });
});
