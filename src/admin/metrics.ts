/** What the admin surfaces report about the outbox: the last hour's outcomes, and Prometheus text. */
import type { OutboxStats } from '../core/outbox-store.js';
import type { DeliveryCount, PostgresOutboxStore } from '../store/postgres-store.js';

const HOUR_MS = 60 * 60 * 1000;

export interface HourTotals {
  delivered: number;
  failed: number;
  dead: number;
}

/** The last hour's outcomes: totals and per minute, from the settle-time counters. */
export async function lastHour(
  store: Pick<PostgresOutboxStore, 'deliveryCounts'>,
  now: Date,
): Promise<{ totals: HourTotals; perMinute: DeliveryCount[] }> {
  const perMinute = await store.deliveryCounts(new Date(now.getTime() - HOUR_MS));
  const totals = perMinute.reduce(
    (sum, minute) => ({
      delivered: sum.delivered + minute.delivered,
      failed: sum.failed + minute.failed,
      dead: sum.dead + minute.dead,
    }),
    { delivered: 0, failed: 0, dead: 0 },
  );
  return { totals, perMinute };
}

/** Prometheus text exposition: gauges a scraper can alert on (lag, dead) without a query. */
export function prometheusText(stats: OutboxStats, hour: HourTotals): string {
  const lines = [
    '# HELP outbox_messages Messages in the outbox table by state.',
    '# TYPE outbox_messages gauge',
    `outbox_messages{state="pending"} ${stats.pending}`,
    `outbox_messages{state="claimed"} ${stats.claimed + stats.leaseExpired}`,
    `outbox_messages{state="delivered"} ${stats.delivered}`,
    `outbox_messages{state="dead"} ${stats.dead}`,
    '# HELP outbox_due_messages Pending messages that are due now.',
    '# TYPE outbox_due_messages gauge',
    `outbox_due_messages ${stats.due}`,
    '# HELP outbox_lag_seconds Age of the oldest message that is due and not being sent.',
    '# TYPE outbox_lag_seconds gauge',
    `outbox_lag_seconds ${(stats.lagMs / 1000).toFixed(3)}`,
    '# HELP outbox_delivered_last_hour Messages delivered in the last hour.',
    '# TYPE outbox_delivered_last_hour gauge',
    `outbox_delivered_last_hour ${hour.delivered}`,
    '# HELP outbox_failed_last_hour Delivery attempts that failed in the last hour.',
    '# TYPE outbox_failed_last_hour gauge',
    `outbox_failed_last_hour ${hour.failed}`,
    '# HELP outbox_dead_last_hour Messages set aside as dead in the last hour.',
    '# TYPE outbox_dead_last_hour gauge',
    `outbox_dead_last_hour ${hour.dead}`,
  ];
  return `${lines.join('\n')}\n`;
}
