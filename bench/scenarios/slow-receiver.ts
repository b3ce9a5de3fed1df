/**
 * Scenario 2: every system POSTs each message to a loopback receiver that answers in 20 ms, at
 * 1, 10 and 50 sends in flight. The ideal is concurrency x 50 msg/s. The same sends in a plain
 * loop with no queue, measured in the same rotation, are what this machine allows: the gap from
 * a system's rate to that is what its claim/settle cycle and batching leave idle.
 */
import { scaled } from '../lib/config.js';
import { rotated } from '../lib/order.js';
import { postJson, type SendPayload, startReceiverProcess } from '../lib/receiver.js';
import { measurement } from '../lib/stats.js';
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

/** Messages per second of `messages` sends, `concurrency` at a time, with no queue around them. */
async function sendAlone(send: SendPayload, concurrency: number, messages: number) {
  let started = 0;
  const lane = async () => {
    while (started < messages) {
      started += 1;
      await send({ orderId: started, event: 'order.created' });
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  return (messages / (performance.now() - startedAt)) * 1000;
}

/** Stands in the run order for the send loop without a queue. */
const ALONE = 'the sender alone';

export const slowReceiverScenario: Scenario = {
  id: '2',
  aliases: ['slow-receiver'],
  title: `Slow receiver: POST to a loopback endpoint answering in ${RECEIVER_DELAY_MS} ms`,
  async run(context) {
    const receiver = await startReceiverProcess(RECEIVER_DELAY_MS);
    try {
      const send = postJson(receiver.url);
      for (const id of SYSTEM_IDS) await context.warmUp(SYSTEMS[id]);
      const rows: ResultRow[] = [];
      const details: unknown[] = [];
      for (const { concurrency, messages: baseMessages } of CASES) {
        const messages = scaled(context.config, baseMessages, 5 * concurrency);
        const costs = new DrainCosts();
        const alone: number[] = [];
        for (let run = 1; run <= context.config.runs; run++) {
          for (const id of rotated([...SYSTEM_IDS, ALONE] as const, run)) {
            // Open `concurrency` keep-alive connections first, so no run pays for them.
            await openConnections(send, concurrency);
            const before = await receiver.received();
            if (id === ALONE) {
              context.progress(
                `2 slow receiver: ${ALONE}, ${concurrency} in flight, ${messages} messages, run ${run}/${context.config.runs}`,
              );
              alone.push(await sendAlone(send, concurrency, messages));
            } else {
              const system = SYSTEMS[id];
              context.progress(
                `2 slow receiver: ${system.label}, ${concurrency} in flight, ${messages} messages, run ${run}/${context.config.runs}`,
              );
              costs.add(
                id,
                await measureDrain(context, system, {
                  messages,
                  batchSize: THROUGHPUT_BATCH,
                  concurrency,
                  send,
                }),
              );
            }
            const got = (await receiver.received()) - before;
            if (got !== messages) throw new Error(`${id}: receiver got ${got} of ${messages}`);
          }
        }
        const ideal = concurrency * (1000 / RECEIVER_DELAY_MS);
        const ceiling = measurement(alone);
        rows.push(
          ...costs.rows(
            '2',
            `${RECEIVER_DELAY_MS} ms receiver, ${concurrency} in flight, ${messages} msgs (ideal ${ideal} msg/s)`,
          ),
          {
            scenario: '2',
            label: `same: rate / the same sends with no queue (${Math.round(ceiling.median).toLocaleString('en-US')} msg/s, ${(ceiling.median / ideal).toFixed(2)} of ideal)`,
            unit: 'x',
            better: 'higher',
            values: Object.fromEntries(
              costs.rates
                .entries()
                .map(([id, rates]) => [
                  id,
                  measurement(rates.map((rate) => rate / ceiling.median)),
                ]),
            ),
          },
        );
        details.push({ concurrency, messages, ideal, sendAloneRuns: alone });
      }
      return { rows, details: { sendAlone: details } };
    } finally {
      await receiver.close();
    }
  },
};
