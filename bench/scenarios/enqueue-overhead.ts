/**
 * Scenario 4: what the outbox row costs an HTTP write. `POST /signups` on the Node server, load
 * from autocannon on loopback, once as shipped (user row + welcome-email outbox row + the
 * idempotency-free request path) and once with the outbox INSERT swapped for `SELECT 1`, so
 * both variants make the same round trips and only the row itself differs.
 */
import { createRequire } from 'node:module';
import pg from 'pg';
import { createApp } from '../../examples/reference-service/app.js';
import { migrations as appMigrations } from '../../examples/reference-service/migrations.generated.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox, type Outbox } from '../../src/outbox.js';
import { serveApp } from '../../src/runtime/node.js';
import { migrate } from '../../src/store/migrate.js';
import { rotated } from '../lib/order.js';
import { measurement } from '../lib/stats.js';
import { SYSTEMS } from '../systems/index.js';
import type { ResultRow, Scenario } from './types.js';

/** autocannon ships no types; this is the part of its API we use. */
interface AutocannonResult {
  requests: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: {
    method: string;
    headers: Record<string, string>;
    setupRequest: (request: { body?: string }) => { body?: string };
  }[];
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** Seconds of load per variant and run: long enough to settle, short enough for the budget. */
const LOAD_SECONDS = 6;

/** Untimed load per variant before the measured runs. */
const WARM_SECONDS = 2;

const VARIANTS = ['without', 'with'] as const;

/** Ten connections: enough to keep two cores busy without queueing in the pool. */
const CONNECTIONS = 10;

/** An outbox whose enqueue statement writes nothing but costs the same round trip. */
function withoutOutboxRow(outbox: Outbox): Outbox {
  return {
    ...outbox,
    enqueueStatement(messages) {
      const real = outbox.enqueueStatement(messages);
      return { ...real, statement: { name: 'noOutboxRow', text: 'SELECT 1', params: [] } };
    },
  };
}

export const enqueueOverheadScenario: Scenario = {
  id: '4',
  aliases: ['enqueue-overhead'],
  title: 'Enqueue overhead: POST /signups with and without the outbox row',
  async run(context) {
    const seconds = Math.max(2, Math.round(LOAD_SECONDS * Math.min(1, context.config.scale * 2)));
    const database = await context.freshDatabase(SYSTEMS['outbox-relay']);
    const pool = new pg.Pool({ connectionString: database.url, max: CONNECTIONS });
    try {
      const db = pgExecutor(pool);
      await migrate(db, { schema: 'app', migrations: appMigrations });
      const outbox = createOutbox();
      const variants = { with: outbox, without: withoutOutboxRow(outbox) };
      const rates: Record<keyof typeof variants, number[]> = { with: [], without: [] };
      let counter = 0;
      const load = async (name: keyof typeof variants, duration: number, label: string) => {
        // No drain configured: no kick, so the request path alone is measured.
        const app = createApp({ db, outbox: variants[name] });
        const served = await serveApp(app, { port: 0 });
        try {
          const result = await autocannon({
            url: `${served.url}/signups`,
            connections: CONNECTIONS,
            duration,
            requests: [
              {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                setupRequest: (request) => {
                  counter += 1;
                  request.body = JSON.stringify({
                    email: `bench-${label}-${name}-${counter}@example.com`,
                    name: 'Bench',
                  });
                  return request;
                },
              },
            ],
          });
          if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
            throw new Error(
              `${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
            );
          }
          return result.requests.average;
        } finally {
          await served.close();
        }
      };
      // Both variants warmed alike (JIT, the pool's connections, the tables' first pages)
      // before anything is timed, so neither pays for being first.
      for (const name of VARIANTS) {
        context.progress(`4 enqueue overhead: warm-up ${name} the outbox row, ${WARM_SECONDS} s`);
        await load(name, WARM_SECONDS, 'warm');
      }
      for (let run = 1; run <= context.config.runs; run++) {
        for (const name of rotated(VARIANTS, run)) {
          context.progress(
            `4 enqueue overhead: ${name} the outbox row, ${seconds} s of load, run ${run}/${context.config.runs}`,
          );
          rates[name].push(await load(name, seconds, `run${run}`));
        }
      }
      const withRow = measurement(rates.with);
      const withoutRow = measurement(rates.without);
      const rows: ResultRow[] = [
        {
          scenario: '4',
          label: `POST /signups with the outbox row (${CONNECTIONS} connections)`,
          unit: 'msg/s',
          better: 'higher',
          values: { 'outbox-relay': withRow },
        },
        {
          scenario: '4',
          label: 'POST /signups, outbox INSERT swapped for SELECT 1',
          unit: 'msg/s',
          better: 'higher',
          values: { 'outbox-relay': withoutRow },
        },
        {
          scenario: '4',
          label: 'throughput with the row / without (1 = free)',
          unit: 'x',
          better: 'higher',
          values: { 'outbox-relay': measurement([withRow.median / withoutRow.median]) },
        },
      ];
      return {
        rows,
        details: { seconds, connections: CONNECTIONS, rates },
        notes: [
          '4: requests per second in the msg/s column; the peers have no HTTP app, so ours only.',
        ],
      };
    } finally {
      await pool.end();
      await database.dispose();
    }
  },
};
