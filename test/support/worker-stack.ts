/**
 * What a test of a Worker in workerd stands on: the local Neon stand-in in front of this file's
 * database, a loopback "ledger" the Worker posts to, and the `wrangler dev` runs the test starts.
 */
import { startNeonProxy } from '../../src/dev/neon-proxy.js';
import {
  startWranglerDev,
  type WranglerDev,
  type WranglerDevOptions,
} from '../runtime/wrangler-dev.js';
import type { TestDatabase } from './database.js';
import { type LoopbackHandler, type LoopbackServer, startLoopbackServer } from './loopback-http.js';

export interface WorkerStack {
  /** The loopback server the Worker posts to; each request goes to the test's handler. */
  ledger: LoopbackServer;
  /**
   * Starts `wrangler dev` (see startWranglerDev) with `vars` beside DATABASE_URL and
   * NEON_LOCAL_PROXY, which point the Worker at the test database through the stand-in.
   * stop() stops every Worker started here.
   */
  startWorker(vars: Record<string, string>, options?: WranglerDevOptions): Promise<WranglerDev>;
  /**
   * Stops every Worker started here, then closes the ledger and the stand-in: Workers first, so
   * none is cut off from its database or its ledger while it still runs.
   */
  stop(): Promise<void>;
}

/**
 * Starts the Neon stand-in on `database` (already migrated: useTestDatabase clones a migrated
 * template), then the ledger with `handleLedgerRequest`. Workers start later, through
 * startWorker, with the test's own wrangler config and vars.
 *
 * @example
 * beforeAll(async () => {
 *   stack = await startWorkerStack(database, (request, response) => response.end('ok'));
 *   worker = await stack.startWorker({ LEDGER_URL: stack.ledger.url }, { config });
 * });
 * afterAll(() => stack?.stop());
 */
export async function startWorkerStack(
  database: TestDatabase,
  handleLedgerRequest: LoopbackHandler,
): Promise<WorkerStack> {
  const proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  const ledger = await startLoopbackServer(handleLedgerRequest).catch(async (error: unknown) => {
    await proxy.close();
    throw error;
  });
  const workers: WranglerDev[] = [];
  return {
    ledger,
    async startWorker(vars, options) {
      const worker = await startWranglerDev(
        { DATABASE_URL: database.url, NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`, ...vars },
        options,
      );
      workers.push(worker);
      return worker;
    },
    async stop() {
      // stop() after kill() only removes what is left of the killed run's temp files.
      await Promise.all(workers.map((worker) => worker.stop()));
      await Promise.all([ledger.close(), proxy.close()]);
    },
  };
}
