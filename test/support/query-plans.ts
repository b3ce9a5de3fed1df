/** Plans as PostgreSQL ran them, for tests that hold a statement to the scans it makes. */
import type pg from 'pg';
import { postgresArrayLiteral } from '../../src/drivers/array-literal.js';

/** A plan node as EXPLAIN (FORMAT JSON) gives it. */
export interface PlanNode {
  'Node Type': string;
  'CTE Name'?: string;
  /** How a plan under another is named, e.g. `CTE walk` or `InitPlan 3`. */
  'Subplan Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Relation Name'?: string;
  Alias?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The node and every node under it. */
export function allNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(allNodes)];
}

/**
 * The plan of `text` as it ran (EXPLAIN ANALYZE, so loops and rows show which scans ran and
 * what they read), in a transaction on one of the pool's connections that is rolled back. With
 * `generic`, the plan PostgreSQL keeps for a prepared statement (built without the parameters'
 * values) rather than one built for these values: the text is prepared and its EXECUTE
 * explained. (EXPLAIN of the text itself plans it for the values whatever plan_cache_mode says.)
 */
export async function planAsRun(
  pool: pg.Pool,
  text: string,
  params: unknown[],
  { generic = false } = {},
): Promise<PlanNode> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let explained = text;
    if (generic) {
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE plan_as_run AS ${text}`);
      // EXECUTE's arguments are literals: parameters of the EXPLAIN around it do not reach them.
      explained = `EXECUTE plan_as_run(${params.map((value) => literal(client, value)).join(', ')})`;
    }
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${explained}`,
      generic ? [] : params,
    );
    return rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    // A prepared statement outlives the transaction.
    if (generic) await client.query('DEALLOCATE plan_as_run').catch(() => {});
    client.release();
  }
}

/** A parameter's value as an untyped SQL literal, which takes the prepared parameter's type. */
function literal(client: pg.PoolClient, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return client.escapeLiteral(postgresArrayLiteral(value));
  if (value instanceof Date) return client.escapeLiteral(value.toISOString());
  return client.escapeLiteral(typeof value === 'object' ? JSON.stringify(value) : String(value));
}
