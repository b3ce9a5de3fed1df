/**
 * A drain-only Node process as a user writes one, in a project that installed only the package,
 * Neon's driver, pg and ws: no SES emulator, no HTTP server package. It starts the local Neon
 * stand-in, adapts Neon's HTTP driver by hand (no cast), enqueues one message and lets the Node
 * schedule deliver it. test/package/consumer.test.ts type-checks it, compiles it to plain
 * JavaScript and runs it with DATABASE_URL set; it prints the schedule's JSON lines.
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { createOutbox, type Sender, type SqlExecutor } from 'outbox-relay';
import { applyNeonLocalConfig, startNeonProxy } from 'outbox-relay/dev';
import { startDrainSchedule } from 'outbox-relay/node';

const url = process.env.DATABASE_URL ?? '';
const { hostname, port } = new URL(url);
const proxy = await startNeonProxy({ postgres: { host: hostname, port: Number(port || 5432) } });
applyNeonLocalConfig(neonConfig, proxy);
const sql = neon(url);

/** Neon's HTTP driver adapted by hand: its rows are `Record<string, any>[]`, taken as they are. */
const db: SqlExecutor = {
  async query(text, params) {
    const { rows, rowCount } = await sql.query(text, params, { fullResults: true });
    return { rows, rowCount };
  },
};

const KIND = 'lean.ping';
const outbox = createOutbox({ kinds: { [KIND]: true } });
const [key] = await outbox.enqueue(db, { kind: KIND, payload: { hello: 'lean' } });
const sent: string[] = [];
const ping: Sender = async (message) => {
  sent.push(message.key);
};

const schedule = startDrainSchedule(
  { store: outbox.store(db), senders: { [KIND]: ping } },
  { intervalMs: 100, logFields: { project: 'lean' } },
);
const deadline = Date.now() + 10_000;
while (key === undefined || !sent.includes(key)) {
  if (Date.now() > deadline) throw new Error('the schedule did not deliver within 10 s');
  await new Promise((resolve) => setTimeout(resolve, 20));
}
await schedule.stop();
await proxy.close();
