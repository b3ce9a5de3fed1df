/**
 * The rules behind a drain's record of its run, on their own: the code a failure is counted
 * under, and the bucket a duration falls in. No database: the metrics tests (test/admin/
 * metrics.test.ts) show them on real drains.
 */
import { describe, expect, it } from 'vitest';
import {
  DRAIN_DURATION_BUCKETS_MS,
  drainErrorCode,
  durationBucket,
} from '../../src/core/drain-record.js';
import { ConfigurationError, OutboxError } from '../../src/core/errors.js';

describe('a drain run record', () => {
  it('counts a database error under its SQLSTATE, also when a settle that gave up wraps it', () => {
    const lost = Object.assign(new Error('terminating connection'), { code: '57P01' });
    expect(drainErrorCode(lost)).toBe('57P01');
    expect(
      drainErrorCode(new OutboxError('OUTBOX_DATABASE', 'outcomes not recorded', { cause: lost })),
    ).toBe('57P01');
    expect(drainErrorCode(new OutboxError('OUTBOX_DATABASE', 'no cause'))).toBe('OUTBOX_DATABASE');
  });

  it("counts other errors under their own code, and anything that is no label value as 'unknown'", () => {
    expect(drainErrorCode(new ConfigurationError('bad'))).toBe('OUTBOX_CONFIGURATION');
    expect(drainErrorCode(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(
      'ECONNRESET',
    );
    expect(drainErrorCode(new Error('no code'))).toBe('unknown');
    expect(drainErrorCode('a string')).toBe('unknown');
    expect(drainErrorCode({ code: 42 })).toBe('unknown');
    expect(drainErrorCode({ code: 'has "quotes"\n' })).toBe('unknown');
    expect(drainErrorCode({ code: 'x'.repeat(65) })).toBe('unknown');
  });

  it('puts a duration in the smallest bucket it fits, and past the largest in none', () => {
    expect(durationBucket(0)).toBe(DRAIN_DURATION_BUCKETS_MS[0]);
    expect(durationBucket(10)).toBe(10);
    expect(durationBucket(10.5)).toBe(50);
    expect(durationBucket(900_000)).toBe(900_000);
    expect(durationBucket(900_001)).toBeNull();
    expect([...DRAIN_DURATION_BUCKETS_MS]).toEqual(
      [...DRAIN_DURATION_BUCKETS_MS].sort((a, b) => a - b),
    );
  });
});
