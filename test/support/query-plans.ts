/** Plans as PostgreSQL ran them, for tests that hold a statement to the scans it makes. */
import type pg from 'pg';

/** A plan node as EXPLAIN (FORMAT JSON) gives it. */
export interface PlanNode {
  'Node Type': string;
  'CTE Name'?: string;
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
 * values) rather than one built for these values.
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
    if (generic) await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
      params,
    );
    return rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}
