/**
 * What a stretch of work cost the PostgreSQL server itself: CPU time of every server process
 * and WAL bytes written. Both are far steadier than wall time on a shared machine, because
 * they count work done, not time spent waiting for a core.
 *
 * CPU is read from /proc, which works because the bench's embedded PostgreSQL runs on this
 * machine: the run time of every live child of the postmaster (`/proc/<pid>/schedstat`,
 * nanoseconds) plus the CPU of children it has already reaped (`cutime + cstime` in the
 * postmaster's `/proc/<pid>/stat`), so a connection that closes mid-drain is not lost. That
 * covers backends, the WAL writer, checkpointer and autovacuum: everything the server did.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/** Clock ticks per second for /proc's tick fields; 100 on every Linux the bench targets. */
const TICKS_PER_SECOND = 100;

export interface CostSnapshot {
  /** Server CPU so far, nanoseconds; null where /proc cannot be read (not Linux). */
  cpuNs: number | null;
  walLsn: string;
}

export interface ServerCost {
  /** Server CPU between two snapshots, microseconds; null without /proc. */
  cpuMicros: number | null;
  walBytes: number;
}

export interface ServerCostMeter {
  snapshot(): Promise<CostSnapshot>;
  since(before: CostSnapshot): Promise<ServerCost>;
}

/** A meter for the server `admin` is connected to. */
export async function serverCostMeter(admin: pg.Pool): Promise<ServerCostMeter> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const postmaster = readStat(rows[0]!.pid)?.ppid ?? null;
  const cpuNow = () => (postmaster === null ? null : serverCpuNs(postmaster));
  return {
    async snapshot() {
      const { rows: lsn } = await admin.query<{ lsn: string }>(
        'SELECT pg_current_wal_lsn()::text AS lsn',
      );
      return { cpuNs: cpuNow(), walLsn: lsn[0]!.lsn };
    },
    async since(before) {
      const { rows: wal } = await admin.query<{ bytes: string }>(
        'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS bytes',
        [before.walLsn],
      );
      const cpu = cpuNow();
      return {
        cpuMicros: cpu === null || before.cpuNs === null ? null : (cpu - before.cpuNs) / 1000,
        walBytes: Number(wal[0]!.bytes),
      };
    },
  };
}

interface ProcStat {
  ppid: number;
  /** utime + stime + cutime + cstime, in clock ticks. */
  ownTicks: number;
  reapedTicks: number;
}

function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name sits in parentheses and may hold spaces: read the fields after it.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    ownTicks: Number(fields[11]) + Number(fields[12]),
    reapedTicks: Number(fields[13]) + Number(fields[14]),
  };
}

/**
 * CPU time one server process has run so far, nanoseconds (`/proc/<pid>/schedstat`); null where
 * /proc cannot be read. Read around a statement on one connection, with that connection's
 * backend pid (`pg_backend_pid()`), it is what the statement cost its backend, without the WAL
 * writer, checkpointer or autovacuum working beside it: steadier than the whole server's CPU for
 * a statement of a few milliseconds.
 */
export function backendCpuNs(pid: number): number | null {
  return runTimeNs(pid);
}

function runTimeNs(pid: number): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return null;
  }
}

function serverCpuNs(postmaster: number): number | null {
  const own = readStat(postmaster);
  if (!own) return null;
  const tickNs = 1e9 / TICKS_PER_SECOND;
  let total = (runTimeNs(postmaster) ?? own.ownTicks * tickNs) + own.reapedTicks * tickNs;
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === postmaster) continue;
    const stat = readStat(pid);
    if (stat?.ppid !== postmaster) continue;
    total += runTimeNs(pid) ?? stat.ownTicks * tickNs;
  }
  return total;
}
