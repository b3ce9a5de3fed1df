/**
 * One drain's send timeouts: one timer, and one AbortSignal per deadline step rather than per
 * send. Sharing a signal must never cut a send loose before its own time. And one send bounded
 * by them: however its sender ends (a value, a promise, a throw before any promise), one result,
 * and its timeout ended with it.
 */
import { describe, expect, it } from 'vitest';
import type { ClaimedMessage } from '../../src/core/outbox-store.js';
import {
  SendTimeouts,
  sendBatchWithTimeout,
  sendWithTimeout,
} from '../../src/core/send-outcome.js';
import type { BatchSender, SendContext, Sender } from '../../src/core/sender.js';

/** Resolves with the error a send's timeout reports. */
function timeoutOf(timeouts: SendTimeouts) {
  let timedOut!: (error: Error) => void;
  const error = new Promise<Error>((resolve) => {
    timedOut = resolve;
  });
  const send = timeouts.begin((result) => {
    if (result.failed) timedOut(result.error as Error);
  });
  return { send, error };
}

describe('send timeouts', () => {
  it('aborts each send at its own deadline, not at an earlier send’s', async () => {
    const timeouts = new SendTimeouts(60);
    const first = timeoutOf(timeouts);
    // Well past the first send's deadline step.
    await new Promise((resolve) => setTimeout(resolve, 25));
    const second = timeoutOf(timeouts);
    expect(second.send.controller).not.toBe(first.send.controller);

    const firstError = await first.error;
    expect(firstError.message).toBe('send timed out after 60 ms');
    expect(first.send.controller.signal.aborted).toBe(true);
    expect(first.send.controller.signal.reason).toBe(firstError);
    expect(second.send.controller.signal.aborted).toBe(false);

    await second.error;
    expect(second.send.controller.signal.aborted).toBe(true);
    timeouts.stop();
  });

  it('gives sends due in the same step one signal, and a finished send no timeout', async () => {
    const timeouts = new SendTimeouts(30);
    const sends = Array.from({ length: 50 }, () => timeoutOf(timeouts));
    // Fifty sends begun in one synchronous run fall in a step or two (a few more if this
    // process is descheduled meanwhile): far fewer signals than sends.
    expect(new Set(sends.map(({ send }) => send.controller)).size).toBeLessThan(25);

    const [finished, ...rest] = sends;
    timeouts.end(finished!.send);
    await Promise.all(rest.map(({ error }) => error));
    const outcome = await Promise.race([
      finished!.error.then(() => 'timed out'),
      new Promise((resolve) => setTimeout(resolve, 50, 'no timeout')),
    ]);
    expect(outcome).toBe('no timeout');
    timeouts.stop();
  });
});

describe('one send bounded by its timeout', () => {
  const message: ClaimedMessage = {
    id: '1',
    key: '0190a0b0-0000-7000-8000-000000000001',
    kind: 'webhook',
    payload: { n: 1 },
    orderingKey: null,
    attempts: 1,
    maxAttempts: 5,
    createdAt: new Date('2026-12-06T10:00:00Z'),
    claimToken: '0190a0b0-0000-7000-8000-0000000000aa',
  };
  const context: SendContext = { spend: () => {}, run: {} };

  /**
   * The send's result, and whether the signal its sender got was aborted once its timeout had
   * passed: a send that ended is no longer in flight, so its timeout cuts nothing loose.
   */
  async function send(sender: Sender) {
    const timeouts = new SendTimeouts(30);
    let signal: AbortSignal | undefined;
    const result = await sendWithTimeout(
      message,
      (outbound, given, sendContext) => {
        signal = given;
        return sender(outbound, given, sendContext);
      },
      context,
      timeouts,
    );
    await new Promise((resolve) => setTimeout(resolve, 60));
    timeouts.stop();
    return { result, abortedAfter: signal?.aborted };
  }

  it('takes a sender that throws before returning a promise as a failed send', async () => {
    const error = new Error('no connection');
    expect(
      await send(() => {
        throw error;
      }),
    ).toEqual({ result: { failed: true, error }, abortedAfter: false });
  });

  it('takes a value returned at once as the receipt, and nothing as a plain delivery', async () => {
    expect(await send((() => ({ id: 'r-1' })) as unknown as Sender)).toEqual({
      result: { failed: false, receipt: { id: 'r-1' } },
      abortedAfter: false,
    });
    expect(await send(async () => {})).toEqual({
      result: { failed: false, receipt: undefined },
      abortedAfter: false,
    });
  });

  it('names a rejection without a reason', async () => {
    const { result } = await send(() => Promise.reject(undefined));
    expect(result.failed).toBe(true);
    expect(String((result as { error: unknown }).error)).toContain(
      'sender rejected with no reason',
    );
  });

  it('fails every message of a batch whose sender throws at once or answers the wrong count', async () => {
    const batch = (send: BatchSender['send']) =>
      sendBatchWithTimeout(
        [message, { ...message, id: '2' }],
        { maxBatch: 10, send },
        context,
        new SendTimeouts(30),
      );
    const error = new Error('no connection');
    expect(
      await batch(() => {
        throw error;
      }),
    ).toEqual([
      { failed: true, error },
      { failed: true, error },
    ]);
    const [first, second] = await batch(async () => [{ delivered: true }]);
    expect(String((first as { error: unknown }).error)).toContain('answered 1 results for 2');
    expect(second).toBe(first);
  });
});
