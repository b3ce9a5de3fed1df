/**
 * The promise an ORM adapter makes, as one set of tests every adapter runs: an order row and its
 * message written in the ORM's own transaction are delivered when it commits, and neither exists
 * when it rolls back, whether the app gives up or a later statement fails. A real drain over the
 * same database proves what was, and was not, sent.
 */

import { neonConfig } from '@neondatabase/serverless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { NewMessage } from '../../src/core/message.js';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import type { TestDatabase } from './database.js';
import { recordingSender } from './drain-fixtures.js';

/** What a test asks the ORM's transaction to do after its two writes. */
export type Ending =
  /** Nothing: the transaction commits. */
  | 'commit'
  /** Run `SELECT 1 / 0` (SQLSTATE 22012) after the enqueue, in the same transaction. */
  | 'failing-statement'
  /** Throw from the ORM's transaction callback after the enqueue, as an app that gives up. */
  | 'abandon';

/** One way of writing through an ORM: the order row and its messages in one transaction. */
export interface OrmWrites {
  /**
   * Inserts `shop.orders (id)` and enqueues `messages`, the way a user of this ORM writes it,
   * then ends as told; resolves to the message keys once committed.
   */
  write(outbox: Outbox, orderId: string, messages: NewMessage[], ending: Ending): Promise<string[]>;
  close(): Promise<void>;
}

export interface OrmWay {
  name: string;
  /**
   * Opens the ORM on the test database; `proxy` is a running local Neon stand-in in front of it
   * (with `neonConfig` already pointed at it), for the ORM's Neon drivers.
   */
  open(database: TestDatabase, proxy: NeonProxy): Promise<OrmWrites> | OrmWrites;
  /** False where the ORM has no transaction callback to throw from (a batch). */
  canAbandon?: boolean;
}

/** The error an `abandon` ending throws, so a test can tell it from any other. */
export class AbandonedWrite extends Error {
  override name = 'AbandonedWrite';
}

/** `SELECT 1 / 0`: fails with SQLSTATE 22012 (division_by_zero). */
export const FAILING_STATEMENT = 'SELECT 1 / 0';

/**
 * The three tests, for each way, over a file's database. Each way gets its own outbox schema, so
 * one drain sees only that way's messages.
 */
export function describeOrmTransactions(database: TestDatabase, ways: readonly OrmWay[]): void {
  let proxy: NeonProxy;
  beforeAll(async () => {
    await database.pool.query('CREATE SCHEMA IF NOT EXISTS shop');
    await database.pool.query('CREATE TABLE IF NOT EXISTS shop.orders (id text PRIMARY KEY)');
    proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  });
  afterAll(async () => {
    await proxy?.close();
  });

  describe.each(ways)('in a transaction of $name', (way) => {
    const schema = `orm_${way.name.replace(/[^a-z0-9]+/g, '_')}`;
    const outbox = createOutbox({ schema, kinds: { 'order.placed': true } });
    const store = () => outbox.store(pgExecutor(database.pool));
    let writes: OrmWrites;
    beforeAll(async () => {
      await outbox.migrate(pgExecutor(database.pool));
      applyNeonLocalConfig(neonConfig, proxy);
      writes = await way.open(database, proxy);
    });
    afterAll(async () => {
      await writes?.close();
    });

    const placed = (orderId: string): NewMessage[] => [
      { kind: 'order.placed', payload: { orderId } },
      { kind: 'order.placed', payload: { orderId, copy: 2 }, delayMs: 0 },
    ];
    const orderExists = async (orderId: string) =>
      (await database.pool.query('SELECT 1 FROM shop.orders WHERE id = $1', [orderId])).rowCount;
    const messagesFor = async (orderId: string) =>
      (
        await database.pool.query(
          `SELECT 1 FROM ${schema}.messages WHERE payload->>'orderId' = $1`,
          [orderId],
        )
      ).rowCount;
    const drained = async () => {
      const sender = recordingSender();
      const report = await drainOnce({ store: store(), senders: { 'order.placed': sender.send } });
      return { sender, report };
    };

    it('delivers the messages once the transaction commits, with the order row beside them', async () => {
      const orderId = `${way.name}-commit`;
      const keys = await writes.write(outbox, orderId, placed(orderId), 'commit');
      expect(keys).toHaveLength(2);
      expect(await orderExists(orderId)).toBe(1);
      expect(await messagesFor(orderId)).toBe(2);
      const { sender } = await drained();
      expect(sender.delivered.sort()).toEqual([...keys].sort());
      expect(sender.calls.map((message) => message.payload)).toContainEqual({ orderId });
    });

    it.runIf(way.canAbandon !== false)(
      'sends nothing when the app throws out of the transaction after the enqueue',
      async () => {
        const orderId = `${way.name}-abandon`;
        await expect(writes.write(outbox, orderId, placed(orderId), 'abandon')).rejects.toThrow(
          AbandonedWrite,
        );
        expect(await orderExists(orderId)).toBe(0);
        expect(await messagesFor(orderId)).toBe(0);
        const { sender } = await drained();
        expect(sender.calls).toEqual([]);
      },
    );

    it('rolls back the order and its messages when a later statement fails, and sends nothing', async () => {
      const orderId = `${way.name}-failing`;
      const failure = await writes
        .write(outbox, orderId, placed(orderId), 'failing-statement')
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(sqlState(failure)).toBe('22012');
      expect(await orderExists(orderId)).toBe(0);
      expect(await messagesFor(orderId)).toBe(0);
      const { sender } = await drained();
      expect(sender.calls).toEqual([]);
    });
  });
}

/**
 * The SQLSTATE of a failed write: on the error itself, or on its `cause` where the ORM wraps the
 * driver's error (Drizzle's `DrizzleQueryError` for the app's own statements).
 */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause === undefined ? undefined : sqlState(cause);
}
