/**
 * The bench's own PostgreSQL: one embedded server per run, one database per system and case,
 * each cloned from that system's migrated template so no case sees another's rows or bloat.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { type ServerCostMeter, serverCostMeter } from './server-cost.js';

export interface BenchPostgres {
  /** Server version, e.g. "18.4". */
  version: string;
  /** Settings that shape the numbers (fsync, shared_buffers, autovacuum...). */
  settings: Record<string, string>;
  /** Connection URL for a database on this server. */
  urlFor(database: string): string;
  /** A superuser client on the `postgres` database for DDL. */
  admin: pg.Pool;
  /** Server CPU and WAL between two points: the steady per-message costs. */
  cost: ServerCostMeter;
  /** Creates `name` (dropping any earlier one), empty or as a copy of `template`. */
  createDatabase(name: string, template?: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** Settings recorded with every result, because each one moves the numbers. */
const RECORDED_SETTINGS = [
  'shared_buffers',
  'work_mem',
  'fsync',
  'synchronous_commit',
  'wal_level',
  'max_wal_size',
  'autovacuum',
  'autovacuum_naptime',
  'autovacuum_vacuum_scale_factor',
  'autovacuum_vacuum_insert_scale_factor',
  'jit',
];

/**
 * Starts an embedded PostgreSQL under the OS temp dir. The caller must `stop()` it; `run.ts`
 * does so at the end, on failure and on Ctrl-C, and the data directory is deleted with it.
 */
export async function startBenchPostgres(onLog?: (line: string) => void): Promise<BenchPostgres> {
  const dataDir = await mkdtemp(join(tmpdir(), 'outbox-relay-bench-pg-'));
  let server: EmbeddedPostgres | undefined;
  try {
    server = await startEmbeddedPostgres({ dataDir, persistent: false, onLog });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const running = server;
  const admin = benchPool(running.url, 2);
  const urlFor = (database: string) => {
    const url = new URL(running.url);
    url.pathname = `/${database}`;
    return url.toString();
  };

  const settingsResult = await admin.query<{ name: string; setting: string; unit: string | null }>(
    'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
    [RECORDED_SETTINGS],
  );
  const settings = Object.fromEntries(
    settingsResult.rows.map((row) => [
      row.name,
      row.unit ? `${row.setting} ${row.unit}` : row.setting,
    ]),
  );

  const cost = await serverCostMeter(admin);
  let stopped = false;
  return {
    version: running.version,
    settings,
    urlFor,
    admin,
    cost,
    async createDatabase(name, template) {
      assertDatabaseName(name);
      if (template) assertDatabaseName(template);
      await dropWhenIdle(admin, name);
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template ?? 'template0'}`);
      return urlFor(name);
    },
    dropDatabase: (name) => dropWhenIdle(admin, name),
    async stop() {
      if (stopped) return;
      stopped = true;
      await admin.end().catch(() => {});
      try {
        // A Ctrl-C in a terminal reaches the postgres process too, and embedded-postgres's
        // stop() then waits for an exit that already happened; its own exit hook ends the
        // process 10 s later. Wait a bounded time, then delete the data directory regardless.
        await Promise.race([running.stop(), sleep(STOP_PATIENCE_MS)]);
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** Long enough for a fast shutdown of the bench's small cluster; short of exit hooks' 10 s. */
const STOP_PATIENCE_MS = 5000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** SQLSTATE 55006: the database still has sessions. */
const OBJECT_IN_USE = '55006';
/** How long a just-closed pool's connections may take to leave before we force them out. */
const DROP_PATIENCE_MS = 5000;

/**
 * Drops a database once its sessions are gone. A pg pool's `end()` resolves before its sockets
 * have closed, and DROP ... WITH (FORCE) would then kill those sessions under a pool that
 * still listens for errors; so wait for them to leave, and force only after a while.
 */
async function dropWhenIdle(admin: pg.Pool, name: string): Promise<void> {
  assertDatabaseName(name);
  const giveUpAt = Date.now() + DROP_PATIENCE_MS;
  while (Date.now() < giveUpAt) {
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== OBJECT_IN_USE) throw error;
      await sleep(20);
    }
  }
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/**
 * A pg pool whose connection errors are reported instead of crashing the run (pg emits them as
 * 'error' events, and an unhandled one ends the process).
 */
export function benchPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  const report = (error: Error) => {
    process.stderr.write(`bench: database connection failed: ${error.message}\n`);
  };
  pool.on('error', report);
  // Checked-out clients too (graphile-worker warns when a pool it is given lacks this).
  pool.on('connect', (client) => client.on('error', report));
  return pool;
}

/** Database names are made by the bench itself; refuse anything else rather than quote it. */
function assertDatabaseName(name: string): void {
  if (!/^[a-z][a-z0-9_]{0,62}$/.test(name)) throw new Error(`bad database name "${name}"`);
}

/** Heap, index and total bytes of a set of tables, summed. */
export interface TableSizes {
  heapBytes: number;
  indexBytes: number;
  totalBytes: number;
  /** Live rows by the statistics collector's count, after the sizes were read. */
  liveRows: number;
  deadRows: number;
  /** Autovacuum runs on these tables so far (pg_stat_user_tables.autovacuum_count). */
  autovacuumRuns: number;
}

/**
 * Sizes of the given tables (schema-qualified names), summed: `pg_relation_size` (main fork),
 * `pg_indexes_size` and `pg_total_relation_size` (heap, indexes, TOAST, free-space and
 * visibility maps).
 */
export async function tableSizes(db: pg.Pool, tables: readonly string[]): Promise<TableSizes> {
  const result = await db.query<{
    heap: string;
    indexes: string;
    total: string;
    live: string | null;
    dead: string | null;
    autovacuums: string | null;
  }>(
    `SELECT
       coalesce(sum(pg_relation_size(t.oid)), 0) AS heap,
       coalesce(sum(pg_indexes_size(t.oid)), 0) AS indexes,
       coalesce(sum(pg_total_relation_size(t.oid)), 0) AS total,
       sum(s.n_live_tup) AS live,
       sum(s.n_dead_tup) AS dead,
       sum(s.autovacuum_count) AS autovacuums
     FROM unnest($1::text[]) AS n(name)
     JOIN pg_class t ON t.oid = to_regclass(n.name)
     LEFT JOIN pg_stat_user_tables s ON s.relid = t.oid`,
    [tables],
  );
  const row = result.rows[0]!;
  return {
    heapBytes: Number(row.heap),
    indexBytes: Number(row.indexes),
    totalBytes: Number(row.total),
    liveRows: Number(row.live ?? 0),
    deadRows: Number(row.dead ?? 0),
    autovacuumRuns: Number(row.autovacuums ?? 0),
  };
}
