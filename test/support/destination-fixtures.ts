/**
 * Destination health made the way drains make it: messages enqueued with a destination (their
 * kind's destination function reads it from the payload), and a real drain whose sender fails
 * them, so the settle counts the failures and pauses the destination after five in a row.
 */
import { expect } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { RetryableDeliveryError } from '../../src/core/errors.js';
import type { Clock, SqlExecutor } from '../../src/core/ports.js';
import { createOutbox } from '../../src/outbox.js';

/** The kind whose payload `{ to }` names its destination. */
export const DESTINED_KIND = 'test.destined';

/** An outbox (schema `outbox`) whose DESTINED_KIND messages go to the payload's `to`. */
export const destinedOutbox = createOutbox({
  kinds: { [DESTINED_KIND]: true },
  destinations: { [DESTINED_KIND]: (payload) => (payload as { to: string }).to },
});

/** Enqueues `count` messages to `destination`; their keys. */
export function enqueueTo(db: SqlExecutor, destination: string, count: number): Promise<string[]> {
  return destinedOutbox.enqueue(
    db,
    Array.from({ length: count }, (_, n) => ({
      kind: DESTINED_KIND,
      payload: { to: destination, n },
    })),
  );
}

/**
 * Enqueues `count` messages to `destination` and drains them once with a sender that fails
 * each with `error` (retryable): `count` failures in a row, so five or more pause it (the
 * breaker, for 30 s from the clock's now).
 */
export async function failDeliveries(
  db: SqlExecutor,
  destination: string,
  count: number,
  options: { error?: string; clock?: Clock } = {},
): Promise<string[]> {
  const keys = await enqueueTo(db, destination, count);
  const report = await drainOnce({
    store: destinedOutbox.store(db),
    keys,
    senders: {
      [DESTINED_KIND]: async () => {
        throw new RetryableDeliveryError(options.error ?? 'HTTP 503 from the receiver');
      },
    },
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  expect(report.retried).toBe(count);
  return keys;
}
