/**
 * Settle writes that fail: what may pass (a lost connection) is tried again whole; what the
 * database refused for good (a data error, a check violation) is not repeated as it was but
 * split, so one outcome it cannot take does not take the others of its group with it, and the
 * drain goes on.
 *
 * The refusals come from real PostgreSQL: a CHECK or a trigger the test adds to its outbox's
 * table refuses one message's outcome, as the database refused a receiver's NUL byte (SQLSTATE
 * 22021) before every stored text was made storable.
 */
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { RetryableDeliveryError } from '../../src/core/errors.js';
import type { OutboxStore, SettleRequest } from '../../src/core/outbox-store.js';
import type { Logger } from '../../src/core/ports.js';
import { useTestDatabase } from '../support/database.js';
import { freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const MESSAGES = 20;
/** The message whose outcome the database refuses (by enqueue order). */
const POISONED = 7;

interface LogLine {
  level: 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug() {},
    info() {},
    warn: (message, fields = {}) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields = {}) => lines.push({ level: 'error', message, fields }),
  };
}

/** The store, with each settle it was asked for, in order: each outcome as id and settlement. */
function watchedSettles(store: OutboxStore, fail?: (call: number) => Error | undefined) {
  const calls: string[][] = [];
  const watched: OutboxStore = {
    settleFits: (requests) => store.settleFits(requests),
    claim: (request) => store.claim(request),
    async settle(requests: readonly SettleRequest[], now) {
      calls.push(
        requests.map(({ message, settlement }) => `${message.id} ${JSON.stringify(settlement)}`),
      );
      const injected = fail?.(calls.length);
      if (injected) throw injected;
      return store.settle(requests, now);
    },
  };
  return { calls, store: watched };
}

describe.each(DRIVER_NAMES)('settle refusals, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  /**
   * 20 messages, the poisoned one's send failing with an error that says "poison", after
   * `refuse` (given the schema and the poisoned row's id) has set the database against its
   * outcome. All 20 outcomes go in one settle group: under a budget groups are written by size,
   * lease and at the end, and 20 is under one group's 32.
   */
  async function drainWithPoison(refuse: (schema: string, poisonedId: string) => string[]) {
    const { outbox, store, schema } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: MESSAGES }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const poisonedKey = keys[POISONED]!;
    const { rows } = await database.pool.query<{ id: string }>(
      `SELECT id::text FROM "${schema}".messages WHERE key = $1`,
      [poisonedKey],
    );
    for (const statement of refuse(schema, rows[0]!.id)) await database.pool.query(statement);
    const sender = recordingSender((message) => {
      if (message.key === poisonedKey) {
        throw new RetryableDeliveryError('the receiver answered 500: poison');
      }
    });
    const logger = recordingLogger();
    const watched = watchedSettles(store);
    const report = await drainOnce({
      store: watched.store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 1_000,
      // The poisoned message's retry must not come due again within this drain.
      backoff: { baseMs: 60_000 },
      logger,
    });
    const states = await database.pool.query<{ key: string; state: string; last_error: string }>(
      `SELECT key, state, last_error FROM "${schema}".all_messages`,
    );
    const byKey = new Map(states.rows.map((row) => [row.key, row]));
    return { report, logger, calls: watched.calls, poisoned: byKey.get(poisonedKey), byKey, keys };
  }

  it('one outcome the database refuses does not take the others of its group with it', async () => {
    const { report, logger, calls, poisoned, byKey, keys } = await drainWithPoison((schema) => [
      `ALTER TABLE "${schema}".messages ADD CONSTRAINT refuses_poison
         CHECK (last_error IS NULL OR last_error NOT LIKE '%poison%')`,
    ]);
    expect(report).toMatchObject({ delivered: MESSAGES - 1, retried: 1, stale: 0 });
    for (const key of keys) {
      if (byKey.get(key) !== poisoned) expect(byKey.get(key)?.state).toBe('delivered');
    }
    // Written again with a plain error text in place of the one the database refused.
    expect(poisoned).toMatchObject({ state: 'pending' });
    expect(poisoned?.last_error).toMatch(/refused this attempt's error text \(23514\)/);
    // Refused writes are split, never repeated as they were, and none is taken for one that
    // may pass.
    const failures = logger.lines.filter(({ message }) => message === 'settle failed');
    expect(failures.length).toBeGreaterThan(1);
    expect(failures.every(({ fields }) => fields.verdict === 'refused')).toBe(true);
    const tried = calls.map((ids) => ids.join(','));
    expect(new Set(tried).size).toBe(tried.length);
    expect(calls[0]).toHaveLength(MESSAGES);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: expect.stringMatching(/plain error/) }),
    );
  });

  it('an outcome refused even with a plain error text is left to its lease, and the drain goes on', async () => {
    const { report, logger, poisoned, byKey, keys } = await drainWithPoison((schema, id) => [
      `CREATE FUNCTION "${schema}".refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'this row takes no outcome' USING ERRCODE = 'check_violation'; END $$`,
      `CREATE TRIGGER refuse_poisoned BEFORE UPDATE ON "${schema}".messages
         FOR EACH ROW WHEN (OLD.id = ${Number(id)} AND NEW.state <> 'claimed')
         EXECUTE FUNCTION "${schema}".refuse_poisoned()`,
    ]);
    expect(report).toMatchObject({ delivered: MESSAGES - 1, retried: 0, stale: 0 });
    for (const key of keys) {
      if (byKey.get(key) !== poisoned) expect(byKey.get(key)?.state).toBe('delivered');
    }
    expect(poisoned?.state).toBe('claimed');
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        message: expect.stringMatching(/^outcome not recorded/),
      }),
    );
  });

  it('a write refused for a reason no part of it can pass fails the drain at once, untried again', async () => {
    const { outbox, store, schema } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: MESSAGES }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    await database.pool.query(
      `CREATE FUNCTION "${schema}".refuse_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'no outcomes here' USING ERRCODE = 'insufficient_privilege'; END $$`,
    );
    await database.pool.query(
      `CREATE TRIGGER refuse_outcomes BEFORE UPDATE ON "${schema}".messages
         FOR EACH ROW WHEN (NEW.state <> 'claimed') EXECUTE FUNCTION "${schema}".refuse_outcomes()`,
    );
    const watched = watchedSettles(store);
    const sender = recordingSender(() => {
      throw new RetryableDeliveryError('the receiver answered 503');
    });
    const failed = await drainOnce({
      store: watched.store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 1_000,
    }).catch((error: unknown) => error);
    expect(failed).toMatchObject({
      code: 'OUTBOX_DATABASE',
      cause: { code: '42501' },
      report: { claimed: MESSAGES, retried: 0 },
    });
    expect(watched.calls).toHaveLength(1);
  });

  it('a write that fails in a way that may pass is tried again whole', async () => {
    const { outbox, store } = await freshOutbox(driver);
    await outbox.enqueue(
      driver.db,
      Array.from({ length: MESSAGES }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    // The first settle's connection is lost before it reaches the database.
    const lost = Object.assign(new Error('read ECONNRESET'), {
      code: 'ECONNRESET',
      retryable: true,
    });
    const watched = watchedSettles(store, (call) => (call === 1 ? lost : undefined));
    const sender = recordingSender();
    const report = await drainOnce({
      store: watched.store,
      senders: { 'test.kind': sender.send },
      subrequestBudget: 1_000,
    });
    expect(report).toMatchObject({ delivered: MESSAGES, settles: 2 });
    expect(watched.calls).toHaveLength(2);
    expect(watched.calls[1]).toEqual(watched.calls[0]);
  });
});
