/**
 * Database faults while the app writes and drains run: backends terminated at random moments
 * (`pg_terminate_backend` on the drains' and the app's connections), a PostgreSQL restart in the
 * middle of draining, and the local Neon proxy dropping WebSockets mid-transaction and cutting
 * HTTP replies after the statement committed (the settle's outcome unknown to the drain).
 * Every drain failure is a typed error, nothing committed is lost, nothing rolled back is sent,
 * each delivery is counted once, and the next drain carries on.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { seededRandom } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, type DriverName } from '../support/drivers.js';
import { type DeliveryLedger, startDeliveryLedger } from './support/delivery-ledger.js';
import { type FaultRunResult, openFaultDriver, runWithFaults } from './support/fault-run.js';
import { recordScenario } from './support/scenario-results.js';

const database = useTestDatabase();
const secret = generateWebhookSecret();
const RUN_MS = Number(process.env.OUTBOX_RELIABILITY_FAULT_MS ?? 6_000);
let proxy: NeonProxy;
let ledger: DeliveryLedger;
let observer: pg.Client;

beforeAll(async () => {
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  ledger = await startDeliveryLedger();
  observer = new pg.Client({ connectionString: database.url, application_name: 'observer' });
  observer.on('error', () => {});
  await observer.connect();
  await observer.query('CREATE TABLE public.orders (id bigserial PRIMARY KEY, note text)');
});
afterAll(async () => {
  await observer?.end().catch(() => {});
  await Promise.all([ledger?.close(), proxy?.close()]);
});

/** The checks every database-fault scenario must pass, and its row in the summary. */
function expectClean(id: string, scenario: string, injected: string, run: FaultRunResult) {
  expect(run.untyped).toEqual([]);
  expect(run.lost).toEqual([]);
  expect(run.rolledBackSent).toEqual([]);
  expect(run.committed.filter((key) => run.rolledBack.includes(key))).toEqual([]);
  // Every delivered row counted once by the outbox's own counters, whatever the settles saw.
  expect(run.countedDeliveries).toBe(run.deliveredRows);
  // A fault resends only a message whose settle failed every try, or whose send timed out
  // after the receiver took it (a starved CI machine); nothing else may go out twice.
  const unexplained = [...run.duplicated.keys()].filter((key) => !run.timedOut.has(key));
  if (run.settlesAbandoned === 0) expect(unexplained).toEqual([]);
  const reasons = [
    run.settlesAbandoned > 0 &&
      `${run.settlesAbandoned} settles failed every try: their sent rows went out again after the lease`,
    run.duplicated.size > unexplained.length &&
      `${run.duplicated.size - unexplained.length} sends timed out after the receiver took them`,
  ].filter(Boolean);
  expect(run.committed.length).toBeGreaterThan(0);
  recordScenario(id, {
    scenario,
    runs: run.drainRuns,
    messages: run.committed.length,
    faults: run.faults,
    injected,
    lost: run.lost.length,
    duplicated: run.extraDeliveries,
    rolledBackSent: run.rolledBackSent.length,
    duplicatesAllowed: run.extraDeliveries === 0 ? '' : `${reasons.join('; ')}; same key`,
  });
}

/**
 * postgres.js is left out here: in 3.4.9 a connection that closes with a small write still
 * buffered throws from a `setImmediate` (`TypeError: Cannot read properties of null (reading
 * 'write')` at connection.js `nextWrite`, uncaught, so a real process dies), or never writes
 * again and its queries hang, which strands a drain's settle until the lease runs out
 * (upstream porsager/postgres#1154 and #1208, open). Two runs here gave 4 and 3 such uncaught
 * errors, and one of them 2 messages resent with no settle failed. Nothing was lost and nothing
 * rolled back was sent. docs/orms.md says so to users; add it back once a release fixes it.
 */
const TERMINATION_DRIVERS = DRIVER_NAMES.filter((name) => name !== 'postgres-js');

describe.each(TERMINATION_DRIVERS)(
  'backends terminated at random moments, over %s',
  (name: DriverName) => {
    it('loses nothing, sends nothing rolled back, and every drain error is typed', async () => {
      const schema = `term_${name.replace('-', '_')}`;
      const outbox = createOutbox({ schema });
      await outbox.migrate(pgExecutor(observer));
      const driver = openFaultDriver(name, database.url, proxy.port, 'public.orders');
      const random = seededRandom(7);
      try {
        const run = await runWithFaults({
          outbox,
          driver,
          ledger,
          secret,
          durationMs: RUN_MS,
          // Neon WebSocket connections take longest to open: fewer kills, or no write commits.
          faultEveryMs: name === 'neon-ws' ? 250 : 60,
          random,
          inject: () =>
            observer.query(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND backend_type = 'client backend'
             ORDER BY random() LIMIT 1`,
            ),
        });
        expectClean(
          `db-terminate-${name}`,
          `pg_terminate_backend on drain and app connections, ${name}`,
          'a random backend terminated',
          run,
        );
      } finally {
        await driver.close().catch(() => {});
      }
    });
  },
);

describe('the Neon proxy failing under the driver', () => {
  it('WebSockets dropped mid-transaction (neon-ws): nothing lost, nothing rolled back sent', async () => {
    const outbox = createOutbox({ schema: 'ws_drop' });
    await outbox.migrate(pgExecutor(observer));
    const driver = openFaultDriver('neon-ws', database.url, proxy.port, 'public.orders');
    try {
      const run = await runWithFaults({
        outbox,
        driver,
        ledger,
        secret,
        durationMs: RUN_MS,
        // A drop every 0.8 s on average: enough that many transactions see one, few enough that
        // some commit. At 0.4 s a run committed as few as 4 messages in 6 s on its own, and
        // none once, with the other reliability files running beside it.
        faultEveryMs: 800,
        random: seededRandom(11),
        inject: async () => proxy.dropWebSockets(),
      });
      expectClean(
        'neon-ws-drop',
        'Neon proxy drops every WebSocket, neon-ws',
        'all tunnels cut',
        run,
      );
    } finally {
      await driver.close().catch(() => {});
    }
  });

  it('HTTP replies cut after the statement committed (neon-http): a settle of unknown outcome is neither lost nor counted twice', async () => {
    const outbox = createOutbox({ schema: 'http_cut' });
    await outbox.migrate(pgExecutor(observer));
    const driver = openFaultDriver('neon-http', database.url, proxy.port, 'public.orders');
    try {
      const run = await runWithFaults({
        outbox,
        driver,
        ledger,
        secret,
        durationMs: RUN_MS,
        faultEveryMs: 40,
        random: seededRandom(13),
        inject: async () => proxy.cutRepliesAfterRun(1),
        stopFaults: () => proxy.cutRepliesAfterRun(0),
      });
      expectClean(
        'neon-http-cut',
        'Neon proxy runs the statement then cuts the reply, neon-http',
        'reply lost after commit',
        run,
      );
    } finally {
      await driver.close().catch(() => {});
    }
  });
});

describe('a PostgreSQL restart in the middle of draining', () => {
  let server: EmbeddedPostgres;
  let dataDir: string;
  let restartProxy: NeonProxy;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'outbox-relay-restart-pg-'));
    server = await startEmbeddedPostgres({ dataDir, persistent: true });
    restartProxy = await startNeonProxy({ postgres: { host: server.host, port: server.port } });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE TABLE public.orders (id bigserial PRIMARY KEY, note text)');
    await admin.end();
  });
  afterAll(async () => {
    await restartProxy?.close();
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it.each(['node-pg', 'neon-http'] as const)(
    'over %s: drains fail with typed errors while it is down and carry on after',
    async (name) => {
      const outbox = createOutbox({ schema: `restart_${name.replace('-', '_')}` });
      const admin = new pg.Pool({ connectionString: server.url, max: 1 });
      admin.on('error', () => {});
      await outbox.migrate(pgExecutor(admin));
      await admin.end();
      const driver = openFaultDriver(name, server.url, restartProxy.port, 'public.orders');
      try {
        const run = await runWithFaults({
          outbox,
          driver,
          ledger,
          secret,
          durationMs: RUN_MS + 2_000,
          faultEveryMs: RUN_MS / 2,
          random: seededRandom(17),
          inject: async () => {
            await server.stop();
            server = await startEmbeddedPostgres({ dataDir, port: server.port, persistent: true });
          },
        });
        expect(run.faults).toBeGreaterThan(0);
        expectClean(
          `db-restart-${name}`,
          `PostgreSQL restarted mid-drain, ${name}`,
          'server stopped and started again',
          run,
        );
      } finally {
        await driver.close().catch(() => {});
      }
    },
  );
});
