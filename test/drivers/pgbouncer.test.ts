/**
 * The pg and Neon WebSocket executors behind a real PgBouncer in transaction mode (Debian's
 * 1.18: no prepared-statement support, as 1.21+ with `max_prepared_statements = 0`), with more
 * clients than server connections so clients move between them. Named statements cannot
 * survive that: the executors must find out, run the failed statement again unnamed, stay
 * unnamed, and say so once per pool.
 */
import { Pool as NeonPool, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BatchSqlExecutor, Logger } from '../../src/core/ports.js';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { neonWsExecutor } from '../../src/drivers/neon-ws.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { useTestDatabase } from '../support/database.js';
import { type PgBouncer, pgBouncerBinary, startPgBouncerFor } from '../support/pgbouncer.js';

const database = useTestDatabase();
let bouncer: PgBouncer;
let proxy: NeonProxy;

/** Clients at once; PgBouncer has 4 server connections for them. */
const WORKERS = 8;
const ROUNDS = 25;

beforeAll(async () => {
  bouncer = await startPgBouncerFor(database, { poolSize: 4 });
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  applyNeonLocalConfig(neonConfig, proxy);
  await database.pool.query('CREATE TABLE public.writes (worker int NOT NULL, round int NOT NULL)');
});
afterAll(async () => {
  await proxy?.close();
  await bouncer?.stop();
});
beforeEach(async () => {
  await database.pool.query('TRUNCATE public.writes');
});

function warnings(): { logger: Pick<Logger, 'warn'>; lines: string[] } {
  const lines: string[] = [];
  return { logger: { warn: (message) => lines.push(message) }, lines };
}

/** Every worker writes a row per round and reads a count back: the same two texts, over and over. */
async function writeFromWorkers(db: BatchSqlExecutor, asBatch: boolean): Promise<void> {
  const insert = 'INSERT INTO public.writes (worker, round) VALUES ($1, $2)';
  const count = 'SELECT count(*)::int AS n FROM public.writes WHERE worker = $1';
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      for (let round = 0; round < ROUNDS; round++) {
        if (asBatch) {
          const [, counted] = await db.batch([
            { name: 'insert', text: insert, params: [worker, round] },
            { name: 'count', text: count, params: [worker] },
          ]);
          expect(counted!.rows).toEqual([{ n: round + 1 }]);
        } else {
          await db.query(insert, [worker, round]);
          expect((await db.query(count, [worker])).rows).toEqual([{ n: round + 1 }]);
        }
      }
    }),
  );
}

/** Each (worker, round) written exactly once. */
async function expectEachWriteOnce(): Promise<void> {
  const { rows } = await database.pool.query<{ total: number; distinct: number }>(
    'SELECT count(*)::int AS total, count(DISTINCT (worker, round))::int AS distinct FROM public.writes',
  );
  expect(rows[0]).toEqual({ total: WORKERS * ROUNDS, distinct: WORKERS * ROUNDS });
}

describe.each([
  {
    driver: 'node-pg',
    open: (url: string, logger: Pick<Logger, 'warn'>) => {
      const pool = new pg.Pool({ connectionString: url, max: WORKERS });
      return { db: pgExecutor(pool, { logger }), end: () => pool.end() };
    },
  },
  {
    driver: 'neon-ws',
    open: (url: string, logger: Pick<Logger, 'warn'>) => {
      const pool = new NeonPool({ connectionString: url, max: WORKERS });
      return { db: neonWsExecutor(pool, { logger }), end: () => pool.end() };
    },
  },
])('the $driver executor behind PgBouncer in transaction mode', ({ open }) => {
  it.each([
    { how: 'single statements', asBatch: false },
    { how: 'batches', asBatch: true },
  ])(
    'runs repeated $how from 8 clients without an error, each once, with one warning',
    async ({ asBatch }) => {
      const { logger, lines } = warnings();
      const { db, end } = open(bouncer.urlFor(database.url), logger);
      try {
        await writeFromWorkers(db, asBatch);
        await expectEachWriteOnce();
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/named prepared statements do not survive/);
      } finally {
        await end();
      }
    },
  );
});

it('with prepare: false, runs behind PgBouncer with no failure to learn from and no warning', async () => {
  const { logger, lines } = warnings();
  const pool = new pg.Pool({ connectionString: bouncer.urlFor(database.url), max: WORKERS });
  try {
    await writeFromWorkers(pgExecutor(pool, { prepare: false, logger }), false);
    await expectEachWriteOnce();
    expect(lines).toEqual([]);
  } finally {
    await pool.end();
  }
});

it('the test helper says how to install pgbouncer where it is missing', () => {
  expect(() => pgBouncerBinary(['/nonexistent/pgbouncer'], '')).toThrow(
    /pgbouncer is not installed.*apt-get install pgbouncer/,
  );
});
