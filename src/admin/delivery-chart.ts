/**
 * The dashboard's "last hour" chart: inline SVG, one stacked bar per minute, oldest on the left
 * and the current minute on the right. No script: each bar's tooltip is an SVG `<title>`.
 */
import { html } from 'hono/html';
import type { DeliveryCount } from '../store/postgres-store.js';
import { formatClock, formatCount } from './display-format.js';
import type { Markup } from './markup.js';

const MINUTE_MS = 60_000;

/** The chart's width in minutes: the hour the metrics also report. */
export const CHART_MINUTES = 60;

const CHART = { width: 960, height: 220, left: 48, right: 12, top: 12, bottom: 30 } as const;

const SERIES = [
  { field: 'delivered', label: 'Delivered', color: '#2f9e5b' },
  { field: 'retried', label: 'Failed, will retry', color: '#e0a100' },
  { field: 'dead', label: 'Failed, dead', color: '#d64545' },
] as const;

export interface MinuteBucket {
  minute: Date;
  delivered: number;
  retried: number;
  dead: number;
}

/** 60 one-minute buckets ending with the current minute, zero where nothing was settled. */
export function minuteBuckets(perMinute: readonly DeliveryCount[], now: Date): MinuteBucket[] {
  const byMinute = new Map(perMinute.map((count) => [count.minute.getTime(), count]));
  const currentMinute = Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS;
  return Array.from({ length: CHART_MINUTES }, (_, index) => {
    const minute = currentMinute - (CHART_MINUTES - 1 - index) * MINUTE_MS;
    const count = byMinute.get(minute);
    const dead = count?.dead ?? 0;
    return {
      minute: new Date(minute),
      delivered: count?.delivered ?? 0,
      // `failed` counts every failed attempt, dead ones included.
      retried: Math.max(0, (count?.failed ?? 0) - dead),
      dead,
    };
  });
}

/** The colour key shown beside the chart's heading. */
export function chartLegend(): Markup {
  return html`<ul class="legend" aria-hidden="true">${SERIES.map(
    (series) =>
      html`<li><span class="swatch" style="background:${series.color}"></span>${series.label}</li>`,
  )}</ul>`;
}

/** The chart itself, with a text description for screen readers. */
export function deliveryChart(perMinute: readonly DeliveryCount[], now: Date): Markup {
  const buckets = minuteBuckets(perMinute, now);
  const totals = buckets.reduce(
    (sum, bucket) => ({
      delivered: sum.delivered + bucket.delivered,
      retried: sum.retried + bucket.retried,
      dead: sum.dead + bucket.dead,
    }),
    { delivered: 0, retried: 0, dead: 0 },
  );
  const peak = Math.max(0, ...buckets.map((b) => b.delivered + b.retried + b.dead));
  const step = niceStep(peak / 4);
  const yMax = step * 4;
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const slot = plotWidth / CHART_MINUTES;
  const barWidth = Math.max(1, slot * 0.72);
  const y = (value: number) => CHART.top + plotHeight - (value / yMax) * plotHeight;

  const gridLines = [0, 1, 2, 3, 4].map((tick) => {
    const value = tick * step;
    const at = y(value);
    return html`<line x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${at.toFixed(1)}" y2="${at.toFixed(1)}" class="${tick === 0 ? 'axis' : 'grid'}"/><text x="${CHART.left - 8}" y="${(at + 4).toFixed(1)}" text-anchor="end" class="tick">${formatCount(value)}</text>`;
  });

  const bars = buckets.map((bucket, index) => {
    const x = CHART.left + index * slot + (slot - barWidth) / 2;
    let base = 0;
    const segments = SERIES.map((series) => {
      const value = bucket[series.field];
      if (value === 0) return '';
      const top = y(base + value);
      const height = y(base) - top;
      base += value;
      return html`<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(height, 0.5).toFixed(1)}" fill="${series.color}"/>`;
    });
    const label = `${formatClock(bucket.minute)} UTC: ${bucket.delivered} delivered, ${bucket.retried} failed and will retry, ${bucket.dead} failed and dead`;
    // A full-height transparent target, so the tooltip shows even over an empty minute.
    return html`<g><title>${label}</title><rect x="${(CHART.left + index * slot).toFixed(1)}" y="${CHART.top}" width="${slot.toFixed(1)}" height="${plotHeight}" fill="transparent"/>${segments}</g>`;
  });

  // Ticks on the quarter hours, and the current minute at the right edge.
  const xLabels = buckets.map((bucket, index) => {
    const isLast = index === CHART_MINUTES - 1;
    const onQuarter = bucket.minute.getUTCMinutes() % 15 === 0;
    if (!isLast && !(onQuarter && index < CHART_MINUTES - 6)) return '';
    const x = CHART.left + index * slot + slot / 2;
    const labelX = isLast ? CHART.width - CHART.right : x;
    return html`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${CHART.height - CHART.bottom}" y2="${CHART.height - CHART.bottom + 4}" class="axis"/><text x="${labelX.toFixed(1)}" y="${CHART.height - 8}" text-anchor="${isLast ? 'end' : 'middle'}" class="tick">${formatClock(bucket.minute)}</text>`;
  });

  const first = buckets[0]!.minute;
  const last = buckets[CHART_MINUTES - 1]!.minute;
  const description =
    `From ${formatClock(first)} to ${formatClock(last)} UTC: ${formatCount(totals.delivered)} delivered, ` +
    `${formatCount(totals.retried + totals.dead)} failed attempts (${formatCount(totals.dead)} dead). ` +
    `Busiest minute: ${formatCount(peak)} outcomes.`;

  return html`<figure class="chart">
    <svg viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="chart-title chart-desc" preserveAspectRatio="xMidYMid meet">
      <title id="chart-title">Deliveries and failures per minute, last 60 minutes</title>
      <desc id="chart-desc">${description}</desc>
      ${gridLines}
      ${bars}
      ${xLabels}
    </svg>
    <figcaption class="muted">
      Per minute, UTC. Totals: <strong>${formatCount(totals.delivered)}</strong> delivered,
      <strong>${formatCount(totals.retried)}</strong> failed and retried,
      <strong>${formatCount(totals.dead)}</strong> failed and dead.
    </figcaption>
  </figure>`;
}

/** The smallest 1, 2 or 5 times a power of ten at or above `raw` (at least 1): tidy ticks. */
function niceStep(raw: number): number {
  if (raw <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 5, 10]) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}
