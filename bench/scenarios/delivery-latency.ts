/**
 * Scenario 5: how long a message takes from the write to the receiver, with the after-commit
 * kick and with the schedule alone. Each `POST /signups` emits a `user.created` webhook to a
 * loopback receiver; latency runs from the moment the request is sent (the commit happens
 * inside it, and the kick may deliver before the client has read the response) to the moment
 * the receiver gets the webhook.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createApp } from '../../examples/reference-service/app.js';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { serveApp, startDrainSchedule } from '../../src/runtime/node.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { migrate } from '../../src/store/migrate.js';
import { measurement, quantile } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import type { ResultRow, Scenario } from './types.js';

/**
 * A one-second schedule, the tightest a local loop sensibly runs. Workers cron triggers fire at
 * most once a minute, so there the schedule alone waits about 30 s on average.
 */
const SCHEDULE_INTERVAL_MS = 1000;

/** Writes per mode: enough for a p99 that is not just the maximum of a handful. */
const WRITES = 150;

/** Writes are spaced so each is measured on its own, not queued behind the previous one. */
const SPACING_MS = 50;

export const deliveryLatencyScenario: Scenario = {
  id: '5',
  aliases: ['latency'],
  title: 'Commit-to-delivery latency: with the kick and with the schedule alone',
  async run(context) {
    const writes = Math.max(20, Math.round(WRITES * Math.min(1, context.config.scale)));
    const arrivals = new Map<string, number>();
    const receiver = createServer((request, response) => {
      const id = request.headers['webhook-id'];
      if (typeof id === 'string') arrivals.set(id, performance.now());
      request.resume();
      response.end('ok');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverPort = (receiver.address() as AddressInfo).port;
    const database = await context.freshDatabase(SYSTEMS['outbox-relay']);
    const pool = new pg.Pool({ connectionString: database.url, max: 10 });
    const latencies: Record<'kick' | 'schedule', number[]> = { kick: [], schedule: [] };
    try {
      const db = pgExecutor(pool);
      await migrate(db, { schema: 'app', migrations: appMigrations });
      const outbox = createOutbox();
      const secret = generateWebhookSecret();
      const setup = {
        store: outbox.store(db),
        senders: {
          webhook: webhookSender({
            secret,
            environment: 'development',
            allowHosts: [`127.0.0.1:${receiverPort}`],
            resolveHost: false,
          }),
        },
      };
      const drain = createDrainer(setup);
      await pool.query(
        `INSERT INTO app.webhook_endpoints (id, url, events, secret)
         VALUES (gen_random_uuid(), $1, ARRAY['user.created'], $2)`,
        [`http://127.0.0.1:${receiverPort}/hooks`, secret],
      );

      for (const mode of ['kick', 'schedule'] as const) {
        context.progress(
          `5 delivery latency: ${mode === 'kick' ? 'with the kick' : 'schedule alone'}, ${writes} writes`,
        );
        const app = createApp({ db, outbox, drain, kick: mode === 'kick' });
        const served = await serveApp(app, { port: 0 });
        // The schedule runs in both modes, as in production: with the kick it is the safety net.
        const schedule = startDrainSchedule(setup, {
          intervalMs: SCHEDULE_INTERVAL_MS,
          purgeIntervalMs: false,
          logRuns: false,
        });
        try {
          const sentAt = new Map<string, number>();
          for (let index = 0; index < writes; index++) {
            const started = performance.now();
            const response = await fetch(`${served.url}/signups`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ email: `latency-${mode}-${index}@example.com`, name: 'L' }),
            });
            if (response.status !== 201) throw new Error(`POST /signups: ${response.status}`);
            const { messageKeys } = (await response.json()) as { messageKeys: string[] };
            // The second key is the webhook (the first is the welcome email, not sent here).
            sentAt.set(messageKeys[1]!, started);
            await new Promise((resolve) => setTimeout(resolve, SPACING_MS));
          }
          const deadline = performance.now() + 10 * SCHEDULE_INTERVAL_MS + 10_000;
          while ([...sentAt.keys()].some((key) => !arrivals.has(key))) {
            if (performance.now() > deadline) throw new Error(`${mode}: webhooks missing`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          for (const [key, started] of sentAt) latencies[mode].push(arrivals.get(key)! - started);
        } finally {
          await schedule.stop();
          await served.close();
        }
      }
    } finally {
      await pool.end();
      await database.dispose();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }

    const row = (mode: 'kick' | 'schedule', q: number, label: string): ResultRow => ({
      scenario: '5',
      label,
      unit: 'ms',
      better: 'lower',
      values: { 'outbox-relay': measurement([quantile(latencies[mode], q)]) },
    });
    return {
      rows: [
        row('kick', 0.5, 'request to webhook received, with the kick, p50'),
        row('kick', 0.99, 'same, p99'),
        row('schedule', 0.5, `schedule alone (every ${SCHEDULE_INTERVAL_MS / 1000} s), p50`),
        row('schedule', 0.99, 'same, p99'),
      ],
      details: {
        writes,
        spacingMs: SPACING_MS,
        scheduleIntervalMs: SCHEDULE_INTERVAL_MS,
        latencies,
      },
      notes: [
        `5: the schedule-alone figures scale with the interval: a Workers cron (every minute) waits ~30 s at p50.`,
      ],
    };
  },
};
