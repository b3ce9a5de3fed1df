/**
 * Adds a statement's outcomes to the per-minute counters, inside the statement that produced
 * them. Kinds are inserted in a fixed order so concurrent settles lock counter rows in the same
 * order (a deadlock would still be retried, as 40P01 is retryable).
 */
export function countOutcomes(quotedSchema: string, outcomes: string, now: string): string {
  return `INSERT INTO ${quotedSchema}.delivery_counts AS c (minute, kind, delivered, failed, dead)
        SELECT date_trunc('minute', ${now}::timestamptz), o.kind,
          count(*) FILTER (WHERE o.outcome = 'delivered'),
          count(*) FILTER (WHERE o.outcome IN ('retry', 'dead')),
          count(*) FILTER (WHERE o.outcome = 'dead')
        FROM ${outcomes} o
        WHERE o.outcome <> 'release'
        GROUP BY o.kind
        ORDER BY o.kind
        ON CONFLICT (minute, kind) DO UPDATE SET
          delivered = c.delivered + excluded.delivered,
          failed = c.failed + excluded.failed,
          dead = c.dead + excluded.dead`;
}
