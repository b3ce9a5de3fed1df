/**
 * The loopback receiver in a process of its own, so answering requests never takes the event
 * loop of the drain being measured: as a real webhook endpoint runs on another machine. Prints
 * its URL as one line, then serves until it gets SIGTERM.
 *
 *   BENCH_RECEIVER_DELAY_MS=20 node --import tsx bench/child/receiver-process.ts
 */
import { startLoopbackReceiver } from '../lib/receiver.js';

const delayMs = Number(process.env.BENCH_RECEIVER_DELAY_MS);
if (!Number.isFinite(delayMs) || delayMs < 0) {
  throw new Error(
    `BENCH_RECEIVER_DELAY_MS must be a number of ms >= 0, got ${process.env.BENCH_RECEIVER_DELAY_MS}`,
  );
}
const receiver = await startLoopbackReceiver(delayMs);
process.stdout.write(`${receiver.url}\n`);
process.once('SIGTERM', () => {
  void receiver.close().then(() => process.exit(0));
});
