import { describe, expect, it } from 'vitest';
import { isRetryableDeliveryError } from '../../src/core/errors.js';
import type { OutboundMessage, Sender } from '../../src/core/sender.js';
import { limitSender } from '../../src/senders/rate-limit.js';
import { waitFor } from '../support/wait-for.js';
import { openSignal, outboundMessage } from './outbound-message.js';

/** A sender whose sends stay in flight until the test finishes them, recording when each began. */
function controlledSender() {
  const started: { key: string; at: number; finish: () => void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const sender: Sender = (message) => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    return new Promise<void>((resolve) => {
      started.push({
        key: message.key,
        at: performance.now(),
        finish: () => {
          inFlight -= 1;
          resolve();
        },
      });
    });
  };
  return { sender, started, maxInFlight: () => maxInFlight };
}

function messages(count: number): OutboundMessage[] {
  return Array.from({ length: count }, () => outboundMessage('test', null));
}

describe('limitSender', () => {
  it('never starts more than perSecond sends in any one-second window, nor runs more than maxConcurrent', async () => {
    const perSecond = 3;
    const maxConcurrent = 2;
    const startTimes: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const limited = limitSender(
      async (message) => {
        startTimes.push(performance.now());
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        // Sends of varied length, so both limits take turns being the one that binds.
        await new Promise((resolve) => setTimeout(resolve, Number(message.payload)));
        inFlight -= 1;
      },
      { perSecond, maxConcurrent },
    );
    const batch = Array.from({ length: 10 }, (_, index) =>
      outboundMessage('test', (index % 3) * 150),
    );
    await Promise.all(batch.map((message) => limited(message, openSignal())));
    expect(startTimes).toHaveLength(10);
    expect(maxInFlight).toBeLessThanOrEqual(maxConcurrent);
    // Sorted start times: any window of one second holds at most perSecond of them exactly when
    // each start is at least a second after the start perSecond places before it.
    startTimes.sort((a, b) => a - b);
    for (let i = perSecond; i < startTimes.length; i++) {
      expect(startTimes[i]! - startTimes[i - perSecond]!).toBeGreaterThanOrEqual(1000);
    }
  });

  it('never runs more than maxConcurrent sends at once, starting the next as one finishes', async () => {
    const controlled = controlledSender();
    const limited = limitSender(controlled.sender, { maxConcurrent: 2 });
    const batch = messages(5);
    const all = Promise.all(batch.map((message) => limited(message, openSignal())));
    // Admission needs no timer: two start at once, the rest queue until a slot frees.
    expect(controlled.started).toHaveLength(2);
    await Promise.resolve();
    expect(controlled.started).toHaveLength(2);
    controlled.started[0]!.finish();
    await waitFor('three sends to start', () => controlled.started.length === 3);
    for (let finished = 1; finished < 5; finished++) {
      await waitFor('the next send to start', () => controlled.started.length > finished);
      controlled.started[finished]!.finish();
    }
    await all;
    expect(controlled.maxInFlight()).toBe(2);
    // First come, first served.
    expect(controlled.started.map((send) => send.key)).toEqual(batch.map((message) => message.key));
  });

  it('rounds a fractional rate above one down, and spaces out a rate below one', async () => {
    const startsOf = (perSecond: number) => {
      const starts: number[] = [];
      const limited = limitSender(
        async () => {
          starts.push(performance.now());
        },
        { perSecond },
      );
      return { starts, limited };
    };
    const twoAndAHalf = startsOf(2.5);
    const half = startsOf(0.5);
    const sends = [
      ...messages(3).map((message) => twoAndAHalf.limited(message, openSignal())),
      ...messages(2).map((message) => half.limited(message, openSignal())),
    ];
    // Decided at call time: 2.5 lets two start now, 0.5 lets one.
    expect(twoAndAHalf.starts).toHaveLength(2);
    expect(half.starts).toHaveLength(1);
    await Promise.all(sends);
    expect(twoAndAHalf.starts[2]! - twoAndAHalf.starts[0]!).toBeGreaterThanOrEqual(1000);
    expect(half.starts[1]! - half.starts[0]!).toBeGreaterThanOrEqual(2000);
  });

  it('stops waiting when the signal fires, rejecting as retryable without calling the sender', async () => {
    const controlled = controlledSender();
    const limited = limitSender(controlled.sender, { maxConcurrent: 1 });
    const [first, waiting, after] = messages(3) as [
      OutboundMessage,
      OutboundMessage,
      OutboundMessage,
    ];
    const firstSend = limited(first, openSignal());
    const controller = new AbortController();
    const waitingSend = limited(waiting, controller.signal);
    const afterSend = limited(after, openSignal());
    controller.abort(new Error('send timeout'));

    const error = await waitingSend.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(isRetryableDeliveryError(error)).toBe(true);
    controlled.started[0]!.finish();
    await firstSend;
    await waitFor('two sends to start', () => controlled.started.length === 2);
    controlled.started[1]!.finish();
    await afterSend;
    // The abandoned send never reached the sender; the one behind it moved up.
    expect(controlled.started.map((send) => send.key)).toEqual([first.key, after.key]);
  });

  it('stops waiting for the rate window when the signal fires', async () => {
    const limited = limitSender(async () => {}, { perSecond: 1 });
    await limited(outboundMessage('test', null), openSignal());
    const controller = new AbortController();
    const waiting = limited(outboundMessage('test', null), controller.signal);
    controller.abort(new Error('send timeout'));
    await expect(waiting).rejects.toMatchObject({ code: 'OUTBOX_RETRYABLE_DELIVERY' });
  });

  it('rejects at once for a signal that has already fired', async () => {
    let calls = 0;
    const limited = limitSender(
      async () => {
        calls += 1;
      },
      { maxConcurrent: 1 },
    );
    await expect(limited(outboundMessage('test', null), AbortSignal.abort())).rejects.toMatchObject(
      {
        code: 'OUTBOX_RETRYABLE_DELIVERY',
      },
    );
    expect(calls).toBe(0);
  });

  it('passes failures through and frees the slot', async () => {
    const limited = limitSender(
      async (message) => {
        if (message.payload === 'fail') throw new Error('boom');
      },
      { maxConcurrent: 1 },
    );
    await expect(limited(outboundMessage('test', 'fail'), openSignal())).rejects.toThrow('boom');
    await expect(limited(outboundMessage('test', 'ok'), openSignal())).resolves.toBeUndefined();
  });

  it('refuses a concurrency that is not a positive whole number, and a rate that is not positive', () => {
    const sender: Sender = async () => {};
    expect(() => limitSender(sender, { maxConcurrent: 0 })).toThrow(/maxConcurrent/);
    expect(() => limitSender(sender, { maxConcurrent: 1.5 })).toThrow(/maxConcurrent/);
    expect(() => limitSender(sender, { perSecond: 0 })).toThrow(/perSecond/);
    expect(() => limitSender(sender, { perSecond: -1 })).toThrow(/perSecond/);
    expect(() => limitSender(sender, { perSecond: Number.NaN })).toThrow(/perSecond/);
  });
});
