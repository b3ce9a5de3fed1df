/**
 * Scenario 2: every system sends each message with fetch to a loopback receiver that answers
 * in 20 ms, at 1, 10 and 50 sends in flight. The ideal is concurrency x 50 msg/s; the gap to
 * it is what each system's claim/settle cycle and batching leave idle.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { fetchSend, type SendPayload, startReceiverProcess } from '../lib/receiver.js';
import { SYSTEMS } from '../systems/index.js';
import { SYSTEM_IDS } from '../systems/types.js';
import { DrainCosts } from './drain-costs.js';
import { measureDrain } from './harness.js';
import { THROUGHPUT_BATCH } from './no-op-drain.js';
import type { ResultRow, Scenario } from './types.js';

export const RECEIVER_DELAY_MS = 20;

/** Messages per run at each concurrency: one to two seconds of ideal sending, 2,000 at most. */
const CASES = [
  { concurrency: 1, messages: 60 },
  { concurrency: 10, messages: 1000 },
  { concurrency: 50, messages: 2000 },
] as const;

async function openConnections(send: SendPayload, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, () => send({ warmUp: true })));
}

export const slowReceiverScenario: Scenario = {
  id: '2',
  aliases: ['slow-receiver'],
  title: `Slow receiver: fetch to a loopback endpoint answering in ${RECEIVER_DELAY_MS} ms`,
  async run(context) {
    const receiver = await startReceiverProcess(RECEIVER_DELAY_MS);
    try {
      const send = fetchSend(receiver.url);
      for (const id of SYSTEM_IDS) await context.warmUp(SYSTEMS[id]);
      const rows: ResultRow[] = [];
      for (const { concurrency, messages: baseMessages } of CASES) {
        const messages = scaled(context.config, baseMessages, 5 * concurrency);
        const costs = new DrainCosts();
        for (let run = 1; run <= context.config.runs; run++) {
          for (const id of rotated(SYSTEM_IDS, run)) {
            const system = SYSTEMS[id];
            context.progress(
              `2 slow receiver: ${system.label}, ${concurrency} in flight, ${messages} messages, run ${run}/${context.config.runs}`,
            );
            // Open `concurrency` keep-alive connections first, so no system pays for them in
            // its drain (fetch closes idle sockets after 4 s).
            await openConnections(send, concurrency);
            const before = await receiver.received();
            const result = await measureDrain(context, system, {
              messages,
              batchSize: THROUGHPUT_BATCH,
              concurrency,
              send,
            });
            const got = (await receiver.received()) - before;
            if (got !== messages) {
              throw new Error(`${system.label}: receiver got ${got} of ${messages}`);
            }
            costs.add(id, result);
          }
        }
        rows.push(
          ...costs.rows(
            '2',
            `${RECEIVER_DELAY_MS} ms receiver, ${concurrency} in flight, ${messages} msgs (ideal ${concurrency * (1000 / RECEIVER_DELAY_MS)} msg/s)`,
          ),
        );
      }
      return { rows };
    } finally {
      await receiver.close();
    }
  },
};
