/**
 * Ids from outside (an admin URL, a CLI argument) are refused by the store before any query when
 * they are not message ids, so no caller can reach a raw database error with a bad id: ids past
 * bigint's range used to match the store's pattern and fail in PostgreSQL as 22003.
 */
import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../src/core/errors.js';
import { MAX_MESSAGE_ID } from '../../src/core/message-id.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { PostgresOutboxStore } from '../../src/store/postgres-store.js';
import { useTestDatabase } from '../support/database.js';
import { countingExecutor } from '../support/drivers.js';

const database = useTestDatabase();

function countingStore() {
  const db = countingExecutor(pgExecutor(database.pool));
  return { db, store: new PostgresOutboxStore(db) };
}

const BAD_IDS: readonly string[] = [
  (MAX_MESSAGE_ID + 1n).toString(),
  '9999999999999999999',
  '99999999999999999999',
  '0',
  '-1',
  '01',
  '1.5',
  '1e3',
  ' 1',
  '1 ',
  '',
  'abc',
  '1\u0000',
  '\u0661', // ARABIC-INDIC DIGIT ONE
];

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('store methods taking a message id', () => {
  it('shows why: PostgreSQL itself fails on an id past bigint', async () => {
    const error = await errorOf(
      database.pool.query('SELECT $1::bigint', [(MAX_MESSAGE_ID + 1n).toString()]),
    );
    expect(error).toMatchObject({ code: '22003' });
  });

  it.each(BAD_IDS)('refuses the id %j with ValidationError("id") before querying', async (id) => {
    const { db, store } = countingStore();
    const calls: [string, () => Promise<unknown>][] = [
      ['get', () => store.get(id)],
      ['retryDead', () => store.retryDead(id, new Date())],
      ['discard', () => store.discard(id)],
    ];
    for (const [method, call] of calls) {
      const error = await errorOf(call());
      expect(isValidationError(error), `${method}: ${String(error)}`).toBe(true);
      expect((error as { field: string }).field, method).toBe('id');
    }
    expect(db.statements).toBe(0);
  });

  it('accepts the largest bigint id: no such message, and no error', async () => {
    const { db, store } = countingStore();
    const id = MAX_MESSAGE_ID.toString();
    expect(await store.get(id)).toBeNull();
    expect(await store.retryDead(id, new Date())).toBe(false);
    expect(await store.discard(id)).toBeNull();
    expect(db.statements).toBe(3);
  });

  it('refuses a list cursor whose id is past bigint, before querying', async () => {
    const { db, store } = countingStore();
    const forged = btoa(`2030-01-01T00:00:00.000Z|${MAX_MESSAGE_ID + 1n}`)
      .replaceAll('+', '-')
      .replaceAll('/', '_');
    const error = await errorOf(store.list({ state: 'dead', cursor: forged }));
    expect(isValidationError(error)).toBe(true);
    expect((error as { field: string }).field).toBe('cursor');
    expect(db.statements).toBe(0);
  });
});
