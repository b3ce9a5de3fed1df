/**
 * One drain's send timeouts: one timer, and one AbortSignal per deadline step rather than per
 * send. Sharing a signal must never cut a send loose before its own time.
 */
import { describe, expect, it } from 'vitest';
import { SendTimeouts } from '../../src/core/send-outcome.js';

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
