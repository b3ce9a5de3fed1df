import { describe, expect, it } from 'vitest';
import {
  FOREIGN_KEY_VIOLATION,
  isRetryableDatabaseError,
  mapDatabaseError,
  namedStatementLost,
  UNIQUE_VIOLATION,
  violates,
} from '../../src/drivers/postgres-errors.js';

describe('Postgres error mapping', () => {
  it.each([
    ['a serialization failure', Object.assign(new Error('could not serialize'), { code: '40001' })],
    [
      'an admin shutdown (Neon compute suspend)',
      Object.assign(new Error('terminating'), { code: '57P01' }),
    ],
    ['a reset connection', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [
      'a connection lost mid-query (pg gives it no code)',
      new Error('Connection terminated unexpectedly'),
    ],
  ])('marks %s retryable', (_, error) => {
    expect(isRetryableDatabaseError(mapDatabaseError(error))).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['an error with no code', new Error('something else')],
    [
      // The executors run such a statement again unnamed themselves; one that reaches a caller
      // failed inside the caller's transaction, which it aborted.
      'a lost prepared statement name (26000)',
      Object.assign(new Error('prepared statement "outbox_1" does not exist'), { code: '26000' }),
    ],
    [
      'a prepared statement name already taken (42P05)',
      Object.assign(new Error('prepared statement "outbox_1" already exists'), { code: '42P05' }),
    ],
  ])('leaves %s not retryable, and keeps the driver error itself', (_, error) => {
    const mapped = mapDatabaseError(error);
    expect(mapped).toBe(error);
    expect(isRetryableDatabaseError(mapped)).toBe(false);
  });
});

describe('namedStatementLost', () => {
  const lost = (code: string, message: string) => Object.assign(new Error(message), { code });

  it('is true for 26000 or 42P05 naming the statement, in any server language', () => {
    const name = 'outbox_0123456789abcdef';
    expect(
      namedStatementLost(lost('26000', `prepared statement "${name}" does not exist`), name),
    ).toBe(true);
    expect(
      namedStatementLost(lost('42P05', `prepared statement "${name}" already exists`), name),
    ).toBe(true);
    expect(
      namedStatementLost(lost('26000', `Prepared Statement »${name}« existiert nicht`), name),
    ).toBe(true);
  });

  it('is false for another statement’s name, another code, or no error at all', () => {
    const name = 'outbox_0123456789abcdef';
    expect(
      namedStatementLost(lost('26000', 'prepared statement "mine" does not exist'), name),
    ).toBe(false);
    expect(namedStatementLost(lost('42P01', `relation "${name}" does not exist`), name)).toBe(
      false,
    );
    expect(namedStatementLost('prepared statement', name)).toBe(false);
  });
});

describe('violates', () => {
  const duplicate = Object.assign(new Error('duplicate key'), {
    code: '23505',
    constraint: 'users_email_unique',
  });

  it('matches the SQLSTATE, and the constraint when one is named', () => {
    expect(violates(duplicate, UNIQUE_VIOLATION)).toBe(true);
    expect(violates(duplicate, UNIQUE_VIOLATION, 'users_email_unique')).toBe(true);
    expect(violates(duplicate, UNIQUE_VIOLATION, 'messages_key_unique')).toBe(false);
    expect(violates(duplicate, FOREIGN_KEY_VIOLATION)).toBe(false);
    expect(violates('not an error', UNIQUE_VIOLATION)).toBe(false);
  });
});
