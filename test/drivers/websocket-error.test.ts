import { describe, expect, it } from 'vitest';
import { isRetryableDatabaseError, mapDatabaseError } from '../../src/drivers/postgres-errors.js';

describe('a WebSocket failure under a Neon WebSocket query', () => {
  it('becomes an Error naming it, with the network code, retryable', () => {
    // What @neondatabase/serverless rejects with when its WebSocket resets: ws's ErrorEvent.
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const event = { type: 'error', message: 'socket hang up', error: reset };
    const mapped = mapDatabaseError(event) as Error & { code?: string };
    expect(mapped).toBeInstanceOf(Error);
    expect(mapped.message).toBe('the WebSocket to the database failed: socket hang up');
    expect(mapped.code).toBe('ECONNRESET');
    expect(mapped.cause).toBe(reset);
    expect(isRetryableDatabaseError(mapped)).toBe(true);
  });

  it('leaves Errors and plain objects without an inner error as they are', () => {
    const error = new Error('boom');
    expect(mapDatabaseError(error)).toBe(error);
    const plain = { message: 'odd' };
    expect(mapDatabaseError(plain)).toBe(plain);
  });
});
