/**
 * How scenario 13 times one statement: on a table's one connection, wall time around the call
 * and the CPU of that connection's backend (bench/lib/server-cost.ts) across it.
 */
import { deliveryFacts } from '../../src/core/attempt-facts.js';
import { delivered } from '../../src/core/settlement.js';
import { backendCpuNs } from '../lib/server-cost.js';
import { claimRequest } from '../systems/outbox-relay.js';
import type { BenchTable } from './destination-tables.js';

/** One case's connection and what its timed statements cost. */
export interface Timed<Case> {
  case: Case;
  /** Two cases may share a table, each over a connection of its own. */
  table: BenchTable;
  wallMs: number[];
  cpuMicros: number[];
}

/**
 * One claim of `size` in a transaction rolled back after, so the next claim meets the same
 * rows; checks it took `size` messages, none of a paused destination.
 */
export async function timeClaim(timed: Timed<string>, size: number, keep: boolean): Promise<void> {
  const { client, backendPid, store } = timed.table;
  await client.query('BEGIN');
  try {
    const cpuBefore = backendCpuNs(backendPid);
    const startedAt = performance.now();
    const result = await store.claim(claimRequest(size));
    const elapsed = performance.now() - startedAt;
    const cpuAfter = backendCpuNs(backendPid);
    if (result.claimed.length !== size) {
      throw new Error(`"${timed.case}": claimed ${result.claimed.length} of ${size}`);
    }
    const unhealthy = result.claimed.filter(
      (message) => !(message.payload as { to: string }).to.includes('healthy-'),
    );
    if (unhealthy.length > 0) {
      throw new Error(`"${timed.case}": claimed ${unhealthy.length} of a paused destination`);
    }
    if (keep) record(timed, elapsed, cpuBefore, cpuAfter);
  } finally {
    await client.query('ROLLBACK');
  }
}

/** Claims `size` messages (untimed), then times the settle that delivers them. */
export async function timeSettle(timed: Timed<string>, size: number, keep: boolean): Promise<void> {
  const { backendPid, store } = timed.table;
  const { claimed } = await store.claim(claimRequest(size));
  if (claimed.length !== size) {
    throw new Error(`"${timed.case}": claimed ${claimed.length} of ${size} to settle`);
  }
  const outcomes = claimed.map((message) => ({
    message,
    settlement: delivered(deliveryFacts(1, undefined)),
  }));
  const cpuBefore = backendCpuNs(backendPid);
  const startedAt = performance.now();
  const result = await store.settle(outcomes, new Date());
  const elapsed = performance.now() - startedAt;
  const cpuAfter = backendCpuNs(backendPid);
  if (result.settled.length !== size || result.destinations !== undefined) {
    throw new Error(`"${timed.case}": settle wrote ${result.settled.length} of ${size}`);
  }
  if (keep) record(timed, elapsed, cpuBefore, cpuAfter);
}

function record(
  timed: Timed<string>,
  elapsedMs: number,
  cpuBefore: number | null,
  cpuAfter: number | null,
): void {
  timed.wallMs.push(elapsedMs);
  if (cpuBefore !== null && cpuAfter !== null) timed.cpuMicros.push((cpuAfter - cpuBefore) / 1000);
}

/**
 * The prepared due claim the timed claims run, among a connection's statements: the claim
 * from the start of due order that does not probe (no cursor, no half-open lookup).
 */
const DUE_CLAIM = `statement LIKE '%FOR UPDATE OF m SKIP LOCKED%'
  AND statement NOT LIKE '%half_open AS MATERIALIZED%'
  AND statement NOT LIKE '%cursor AS MATERIALIZED%'
  AND statement NOT LIKE '%m.key = ANY%'`;

/** How often PostgreSQL planned the prepared claim afresh (custom) or reused one plan (generic). */
export interface PlanChoice {
  genericPlans: number;
  customPlans: number;
}

/** The due claim's prepared statement on this connection: the one the timed claims ran. */
export async function planChoice(table: BenchTable): Promise<PlanChoice> {
  const { rows } = await table.client.query<{ generic: string; custom: string }>(
    `SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements
     WHERE ${DUE_CLAIM}`,
  );
  const row = rows[0];
  return { genericPlans: Number(row?.generic ?? 0), customPlans: Number(row?.custom ?? 0) };
}

/**
 * EXPLAIN ANALYZE of the due claim's prepared statement on this connection, run as the timed
 * claims ran it (with the plan this connection keeps), in a transaction rolled back after.
 */
export async function explainPreparedClaim(table: BenchTable, size: number): Promise<string> {
  const { rows } = await table.client.query<{ name: string }>(
    `SELECT name FROM pg_prepared_statements WHERE ${DUE_CLAIM}`,
  );
  const name = rows[0]?.name;
  if (name === undefined) return '';
  const request = claimRequest(size);
  // EXPLAIN EXECUTE takes no bind parameters: the values go in as literals, quoted by pg.
  const literal = (value: string) => table.client.escapeLiteral(value);
  const values = [
    `${literal(request.now.toISOString())}::timestamptz`,
    `${literal(request.claimToken)}::uuid`,
    String(Math.trunc(request.leaseMs)),
    request.deadHeadBlocks ? 'true' : 'false',
    `ARRAY[${request.kinds.map(literal).join(', ')}]::text[]`,
  ];
  await table.client.query('BEGIN');
  try {
    const plan = await table.client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY OFF) EXECUTE ${quoteIdentifier(name)}(${values.join(', ')})`,
    );
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await table.client.query('ROLLBACK');
  }
}

/** A prepared statement's name as SQL: made by pgExecutor, quoted rather than trusted. */
function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
