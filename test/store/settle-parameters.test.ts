/**
 * The settle's parameters as the store builds them: its arrays of plain elements (ids, tids,
 * token numbers, outcome words, durations) as array literals built in one join, arrays all of
 * nulls as one null, and anything else left for the driver to quote. The settle statement reads
 * both forms alike (test/store/drain.test.ts and the rest of the store suite run them on every
 * driver); this checks which form each array takes.
 */
import { describe, expect, it } from 'vitest';
import type { SettleRequest } from '../../src/core/outbox-store.js';
import { delivered, retry } from '../../src/core/settlement.js';
import { settleParameters } from '../../src/store/settle-parameters.js';

const TOKEN = '0190a0b0-0000-7000-8000-0000000000aa';

function request(id: string, rowId: string, settlement: SettleRequest['settlement']) {
  const message = {
    id,
    key: `0190a0b0-0000-7000-8000-00000000000${id.length}`,
    kind: 'webhook',
    payload: {},
    orderingKey: null,
    attempts: 1,
    maxAttempts: 5,
    createdAt: new Date('2026-12-06T10:00:00Z'),
    claimToken: TOKEN,
    rowId,
    payloadBytes: 2,
  };
  return { message, settlement } as SettleRequest;
}

describe('settle parameters', () => {
  it('builds plain arrays as literals, and sends arrays all of nulls as one null', () => {
    const { params } = settleParameters(
      [
        request('41', '(0,7)', delivered({ status: 200, durationMs: 12 })),
        request('42', '(3,1)', delivered()),
      ],
      new Date('2026-12-06T10:00:01Z'),
      false,
    );
    expect(params.slice(0, 7)).toEqual([
      '{41,42}',
      '{"(0,7)","(3,1)"}',
      '{1,1}',
      [TOKEN],
      '{delivered,delivered}',
      null,
      null,
    ]);
    expect(params[10]).toBe('{12,NULL}');
  });

  it('keeps the arrays a failure fills, and leaves an element that is not plain to the driver', () => {
    const at = new Date('2026-12-06T10:05:00Z');
    const { params } = settleParameters(
      [request('7', '(0,1)', retry(at, 'boom')), request('8}', '(0,2)', delivered())],
      new Date('2026-12-06T10:00:01Z'),
      false,
    );
    expect(params[0]).toEqual(['7', '8}']);
    expect(params[4]).toBe('{retry,delivered}');
    expect(params[5]).toEqual([at, null]);
    expect(params[6]).toEqual(['boom', null]);
  });
});
