/**
 * Scenario 13's table rows, notes and results-file details, from its timed claims and settles:
 * each case's wall time and backend CPU per statement, and its ratio to the case with no
 * destination paused (issue 28's bound: 1.2x).
 */
import { type Measurement, measurement, median } from '../lib/stats.js';
import { type BreakerTrip, HEALTHY_DESTINATIONS } from './destination-tables.js';
import type { PlanChoice, Timed } from './destination-timing.js';
import { OURS_ONLY, type ResultRow, type ScenarioOutput } from './types.js';

type BuiltCase = 'none' | 'parked' | 'ahead' | 'healed' | 'half-open';
/**
 * A table's case; `, generic plan` and `, custom plan` are a second connection to its table
 * with `plan_cache_mode` set to force that plan.
 */
export type ClaimCase =
  | BuiltCase
  | 'none, custom plan'
  | 'parked, generic plan'
  | 'ahead, generic plan';
export type SettleCase = 'no destination' | 'no health row' | 'health row';

export interface Sizes {
  claimSize: number;
  settleSize: number;
  healthy: number;
  settleBacklog: number;
  paused: number;
  waiting: number;
  halfOpen: number;
}

/** The bound issue 28 sets on the claim with 1,000 destinations paused, against none. */
const ISSUE_BOUND = 1.2;

const count = (value: number) => value.toLocaleString('en-US');

export function destinationRows(
  sizes: Sizes,
  claims: readonly Timed<ClaimCase>[],
  settles: readonly Timed<SettleCase>[],
  details: {
    shapes: Partial<Record<ClaimCase, { pausedParked: number; pausedDueAhead: number }>>;
    plans: Partial<Record<ClaimCase, string>>;
    trips: Partial<Record<ClaimCase, BreakerTrip>>;
    planChoices: Partial<Record<ClaimCase, PlanChoice>>;
  } & Record<string, unknown>,
): ScenarioOutput {
  const claim = (c: ClaimCase) => claims.find((t) => t.case === c)!;
  const settle = (c: SettleCase) => settles.find((t) => t.case === c)!;
  const none = claim('none');
  const { shapes } = details;
  const labels: Record<Exclude<ClaimCase, 'none'>, string> = {
    'none, custom plan':
      'same, each claim planned afresh (plan_cache_mode; as over Neon HTTP, which prepares nothing)',
    parked: `same, ${count(sizes.paused)} destinations paused by their failures, their ${count(shapes.parked?.pausedParked ?? 0)} waiting messages parked`,
    'parked, generic plan': 'same, generic plan forced (plan_cache_mode): no planning per claim',
    ahead: `same, ${count(sizes.paused)} paused, ${count(shapes.ahead?.pausedDueAhead ?? 0)} of their messages due ahead of the healthy ones (enqueued by a transaction begun before the pauses, so not parked)`,
    'ahead, generic plan': 'same, generic plan forced (plan_cache_mode)',
    healed: `same as the last, after two claims that probe (a drain's first of a run, and one every 5 s after): they parked ${count(shapes.healed?.pausedParked ?? 0)} of them`,
    'half-open': `same, none paused but ${sizes.halfOpen} half-open with nothing to probe (their last messages went dead)`,
  };
  const rows: ResultRow[] = [
    row(
      `claim ${sizes.claimSize} of ${count(sizes.healthy)} due over ${HEALTHY_DESTINATIONS} healthy destinations, none paused`,
      'ms',
      ours(none.wallMs),
    ),
    row('same: PostgreSQL backend CPU per claim', 'µs', ours(none.cpuMicros)),
  ];
  const notes: string[] = [];
  const paired: Record<string, { cpu: number; wall: number }> = {};
  for (const c of Object.keys(labels) as Exclude<ClaimCase, 'none'>[]) {
    const timed = claim(c);
    rows.push(
      row(labels[c], 'ms', ours(timed.wallMs)),
      row('same: PostgreSQL backend CPU per claim', 'µs', ours(timed.cpuMicros)),
      row('same / none paused: backend CPU', 'x', oursRatio(timed.cpuMicros, none.cpuMicros)),
    );
    if (c === 'parked' || c === 'ahead' || c === 'healed') {
      rows.push(
        row('same / none paused: wall time', 'x', oursRatio(timed.wallMs, none.wallMs)),
        row(
          'same / none paused, both planned afresh each claim: backend CPU',
          'x',
          oursRatio(timed.cpuMicros, claim('none, custom plan').cpuMicros),
        ),
      );
    }
    paired[c] = {
      cpu: pairedRatio(timed.cpuMicros, none.cpuMicros),
      wall: pairedRatio(timed.wallMs, none.wallMs),
    };
    notes.push(
      `13: claim "${c}" / "none", round by round: backend CPU ${paired[c]!.cpu.toFixed(2)}x, wall ${paired[c]!.wall.toFixed(2)}x${c === 'parked' || c === 'ahead' || c === 'healed' ? ` (issue 28's bound: ${ISSUE_BOUND}x)` : ''}.`,
    );
  }
  const bare = settle('no destination');
  const noRow = settle('no health row');
  const withRow = settle('health row');
  rows.push(
    row(
      `settle ${sizes.settleSize} deliveries (a drain's group), messages with no destination: backend CPU`,
      'µs',
      ours(bare.cpuMicros),
    ),
    row(
      `same, to ${HEALTHY_DESTINATIONS} destinations with no health row`,
      'µs',
      ours(noRow.cpuMicros),
    ),
    row(
      `same, to ${HEALTHY_DESTINATIONS} destinations with a health row (no failures)`,
      'µs',
      ours(withRow.cpuMicros),
    ),
    row(
      'settle to destinations with a health row / with none: backend CPU',
      'x',
      oursRatio(withRow.cpuMicros, noRow.cpuMicros),
    ),
    row(
      'settle to destinations with no health row / no destination: backend CPU',
      'x',
      oursRatio(noRow.cpuMicros, bare.cpuMicros),
    ),
  );
  const figures = Object.fromEntries(
    Object.entries(details.plans).map(([c, plan]) => [c, planFigures(plan ?? '')]),
  );
  notes.push(
    `13: EXPLAIN ANALYZE of one claim (results file), buffers hit / rows the due scan read: ${Object.entries(
      figures,
    )
      .map(([c, f]) => `${c} ${f.buffersHit} / ${f.dueRowsRead}`)
      .join('; ')}.`,
  );
  notes.push(
    `13: the prepared claim's plans on each connection, generic / custom (pg_prepared_statements): ${Object.entries(
      details.planChoices,
    )
      .map(([c, choice]) => `${c} ${choice?.genericPlans} / ${choice?.customPlans}`)
      .join('; ')}.`,
  );
  const trip = details.trips.parked;
  if (trip && trip.openingSettleMs.length > 0) {
    notes.push(
      `13: setting up "parked", ${trip.openingSettles} of ${trip.settles} failure settles (groups of 32) opened ${count(trip.pausesOpened)} pauses and parked their messages: median ${median(trip.openingSettleMs).toFixed(0)} ms each (${median(trip.openingSettleCpuMs).toFixed(0)} ms backend CPU), the other settles ${median(trip.otherSettleMs).toFixed(1)} ms.`,
    );
  }
  return {
    rows,
    notes,
    details: {
      sizes,
      ...details,
      planFigures: figures,
      pairedRatios: paired,
      settleWallMs: Object.fromEntries(settles.map((t) => [t.case, measurement(t.wallMs)])),
    },
  };
}

function row(label: string, unit: ResultRow['unit'], values: ResultRow['values']): ResultRow {
  return { scenario: '13', label, unit, better: 'lower', values, absent: OURS_ONLY };
}

function ours(runs: readonly number[]): ResultRow['values'] {
  return { 'outbox-relay': measurement(runs) };
}

/** The ratio of the medians, as scenario 3 gives its ratio. */
function oursRatio(values: readonly number[], base: readonly number[]): ResultRow['values'] {
  const ratio: Measurement = measurement([median(values) / median(base)]);
  return { 'outbox-relay': ratio };
}

/** Round by round: the two were timed side by side in each round, so drift cancels. */
function pairedRatio(values: readonly number[], base: readonly number[]): number {
  return median(values.map((value, index) => value / base[index]!));
}

/** The whole claim's shared buffers, and the rows its due scan read (the claim keeps 100). */
function planFigures(plan: string): { buffersHit: number; dueRowsRead: number } {
  const buffers = /Buffers: shared hit=(\d+)/.exec(plan);
  const due = plan.slice(plan.indexOf('CTE due'), plan.indexOf('CTE counted'));
  const read =
    /Index Scan using messages_claimable on messages \S+ \(actual [^)]*rows=([\d.]+)/.exec(due);
  return { buffersHit: Number(buffers?.[1] ?? 0), dueRowsRead: Number(read?.[1] ?? 0) };
}
