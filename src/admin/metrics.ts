/**
 * What the admin surfaces report about the outbox: the last hour's outcomes for the dashboard,
 * and Prometheus text for `/metrics` (each metric is described in docs/admin.md, "Metrics").
 */
import { DRAIN_DURATION_BUCKETS_MS } from '../core/drain-record.js';
import type { OutboxStats } from '../core/outbox-store.js';
import { type DestinationPaused, MAX_DESTINATION_LIMIT } from '../store/destination-store.js';
import type { DrainRunTotals, OutcomeTotals } from '../store/metric-statements.js';
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

/** What `/metrics` reports: the table as it is now, and the counters since the outbox began. */
export interface MetricsSnapshot {
  stats: OutboxStats;
  /** Outcomes by kind (`store.outcomeTotals()`). */
  outcomes: readonly OutcomeTotals[];
  /** The drains' record of their runs (`store.drainRuns()`). */
  drainRuns: readonly DrainRunTotals[];
  /**
   * Whether each destination with a health record is paused, paused ones first, at most
   * {@link DESTINATION_METRIC_LIMIT} (`store.destinations().pausedFlags()`).
   */
  destinations: readonly DestinationPaused[];
}

/**
 * Destinations `outbox_destination_paused` reports, at most: the store's longest list. Paused
 * ones come first, so a scrape always has every paused destination short of a thousand of
 * them, and a deployment with more destinations than that gets no closed ones past the bound
 * rather than a scrape that grows with every receiver it ever failed on.
 */
export const DESTINATION_METRIC_LIMIT = MAX_DESTINATION_LIMIT;

/** Reads a {@link MetricsSnapshot}: four statements, none of them per message. */
export async function readMetrics(
  store: Pick<PostgresOutboxStore, 'stats' | 'outcomeTotals' | 'drainRuns' | 'destinations'>,
  now: Date,
  options: { deadHeadBlocks?: boolean } = {},
): Promise<MetricsSnapshot> {
  const [stats, outcomes, drainRuns, destinations] = await Promise.all([
    store.stats(now, options),
    store.outcomeTotals(),
    store.drainRuns(),
    store.destinations().pausedFlags(DESTINATION_METRIC_LIMIT),
  ]);
  return { stats, outcomes, drainRuns, destinations };
}

/**
 * Prometheus text exposition (format 0.0.4): gauges of the table as it is now (messages by
 * state, due, held, lag), counters by kind that never go down (purge folds the minutes it
 * deletes into totals), the drains' run duration histogram and failures by code, and which
 * destinations are paused.
 */
export function prometheusText(snapshot: MetricsSnapshot): string {
  const { stats, outcomes, drainRuns, destinations } = snapshot;
  const lines = [
    ...metric('outbox_messages', 'gauge', 'Messages in the outbox table by state.', [
      ['{state="pending"}', stats.pending],
      ['{state="claimed"}', stats.claimed + stats.leaseExpired],
      ['{state="delivered"}', stats.delivered],
      ['{state="dead"}', stats.dead],
    ]),
    ...metric(
      'outbox_due_messages',
      'gauge',
      'Pending messages due now that a drain can take (not held behind their ordering key).',
      [['', stats.due]],
    ),
    ...metric(
      'outbox_held_messages',
      'gauge',
      'Pending messages due now but held behind an unfinished earlier message of their ordering key.',
      [['', stats.held]],
    ),
    ...metric(
      'outbox_lag_seconds',
      'gauge',
      'Age of the oldest message a drain could take now and has not.',
      [['', (stats.lagMs / 1000).toFixed(3)]],
    ),
    ...byKind(outcomes, 'outbox_messages_delivered_total', 'Messages delivered.', 'delivered'),
    ...byKind(
      outcomes,
      'outbox_attempts_failed_total',
      'Delivery attempts that failed (retried or set aside as dead).',
      'failed',
    ),
    ...byKind(outcomes, 'outbox_messages_dead_total', 'Messages set aside as dead.', 'dead'),
    ...drainDurationHistogram(drainRuns),
    ...metric(
      'outbox_drain_errors_total',
      'counter',
      'Drain runs that failed, by the code of the failure (a SQLSTATE, a network code, an OUTBOX_ code).',
      errorsByCode(drainRuns),
    ),
    ...metric(
      'outbox_destination_paused',
      'gauge',
      `1 while drains pass over a destination's messages (paused: open, or half-open with one probe out at a time), 0 when closed. Only destinations with a health record (failed or paused at least once), at most ${DESTINATION_METRIC_LIMIT}, paused ones first.`,
      destinations.map(({ destination, paused }) => [
        `{destination="${labelValue(destination)}"}`,
        paused ? 1 : 0,
      ]),
    ),
  ];
  const lastEnded = Math.max(...drainRuns.map((runs) => runs.lastEndedAt.getTime()));
  if (drainRuns.length > 0) {
    lines.push(
      ...metric(
        'outbox_drain_last_ended_timestamp_seconds',
        'gauge',
        'When the latest recorded drain run ended, on its own clock (Unix time).',
        [['', lastEnded / 1000]],
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A sample's labels (or a histogram's suffix and labels) and value, as text or a number. */
type Sample = [labels: string, value: number | string];

function metric(name: string, type: string, help: string, samples: Sample[]): string[] {
  return [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    ...samples.map(([labels, value]) => `${name}${labels} ${sampleValue(value)}`),
  ];
}

function byKind(
  outcomes: readonly OutcomeTotals[],
  name: string,
  help: string,
  field: 'delivered' | 'failed' | 'dead',
): string[] {
  return metric(
    name,
    'counter',
    `${help} By kind, since the outbox began.`,
    outcomes.map((totals) => [`{kind="${labelValue(totals.kind)}"}`, totals[field]]),
  );
}

/** Cumulative buckets in seconds, as Prometheus histograms count them. */
function drainDurationHistogram(drainRuns: readonly DrainRunTotals[]): string[] {
  const name = 'outbox_drain_duration_seconds';
  const bounds = [...DRAIN_DURATION_BUCKETS_MS, Number.POSITIVE_INFINITY];
  const samples: Sample[] = bounds.map((bound) => [
    `_bucket{le="${bound === Number.POSITIVE_INFINITY ? '+Inf' : bound / 1000}"}`,
    drainRuns.filter((runs) => runs.leMs <= bound).reduce((sum, runs) => sum + runs.runs, 0),
  ]);
  const totalMs = drainRuns.reduce((sum, runs) => sum + runs.durationMs, 0);
  const count = drainRuns.reduce((sum, runs) => sum + runs.runs, 0);
  return metric(
    name,
    'histogram',
    'How long recorded drain runs took (every run createDrainer builds but a kick).',
    [...samples, ['_sum', totalMs / 1000], ['_count', count]],
  );
}

function errorsByCode(drainRuns: readonly DrainRunTotals[]): Sample[] {
  const byCode = new Map<string, number>();
  for (const runs of drainRuns) {
    if (runs.errorCode === null) continue;
    byCode.set(runs.errorCode, (byCode.get(runs.errorCode) ?? 0) + runs.runs);
  }
  return [...byCode]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([code, runs]) => [`{code="${labelValue(code)}"}`, runs]);
}

/** A label value as the text format writes it: backslash, quote and newline escaped. */
function labelValue(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

function sampleValue(value: number | string): string {
  if (typeof value === 'string') return value;
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}
