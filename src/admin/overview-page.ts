/**
 * The dashboard's front page: counts by state, the last hour, recent errors (dead ones among
 * them), and the way to the dead-letter list, where the actions are. Each dead row shows once.
 */
import { html } from 'hono/html';
import type { MessageRecord, OutboxStats } from '../core/outbox-store.js';
import type { DeliveryCount } from '../store/postgres-store.js';
import { chartLegend, deliveryChart } from './delivery-chart.js';
import { formatCount, formatDuration, formatSince } from './display-format.js';
import type { Markup } from './markup.js';
import { errorCell, messageLink, stateBadge, timeCell } from './message-cells.js';
import { type Flash, type PageFrame, signedInPage } from './page-layout.js';

/** Lag at or past this shows the lag card in amber: five minutes is several missed schedules. */
const LAG_WARNING_MS = 5 * 60 * 1000;

export interface OverviewView {
  stats: OutboxStats;
  perMinute: readonly DeliveryCount[];
  errors: readonly MessageRecord[];
  flash: Flash | null;
}

export function overviewPage(frame: PageFrame, view: OverviewView): Markup {
  const { stats } = view;
  const { now, paths } = frame;
  const claimedTotal = stats.claimed + stats.leaseExpired;
  return signedInPage(
    'outbox-relay admin',
    frame,
    html`<section class="cards" aria-label="Messages by state">
    ${statCard(frame, 'pending', 'Pending', stats.pending, pendingNote(stats), stats.held > 0 ? 'warn' : null)}
    ${statCard(
      frame,
      'claimed',
      'Claimed',
      claimedTotal,
      stats.leaseExpired > 0
        ? `${formatCount(stats.leaseExpired)} lease expired`
        : 'being sent right now',
      stats.leaseExpired > 0 ? 'warn' : null,
    )}
    ${statCard(frame, 'delivered', 'Delivered', stats.delivered, 'kept until purged')}
    ${statCard(frame, 'dead', 'Dead', stats.dead, 'waiting for an operator', stats.dead > 0 ? 'bad' : null)}
    <div class="card${stats.lagMs >= LAG_WARNING_MS ? ' card-warn' : ''}" data-metric="lag">
      <div class="card-label">Lag</div>
      <div class="card-value">${formatDuration(stats.lagMs)}</div>
      <div class="card-note">${
        stats.oldestDueAt
          ? `oldest since ${formatSince(stats.oldestDueAt, now)}`
          : 'nothing waiting'
      }</div>
    </div>
  </section>

  <section class="panel">
    <div class="panel-head">
      <h2>Last hour</h2>
      ${chartLegend()}
    </div>
    ${deliveryChart(view.perMinute, now)}
  </section>

  <section class="panel">
    <div class="panel-head">
      <h2>Recent errors</h2>
      <span class="muted">Messages that failed at least once and are not delivered, newest first</span>
    </div>
    ${recentErrorsTable(frame, view.errors)}
  </section>

  <section class="panel" id="dead">
    <div class="panel-head">
      <h2>Dead letters <span class="count">${formatCount(stats.dead)}</span></h2>
      ${
        stats.dead > 0
          ? html`<a class="btn btn-primary" href="${paths.messages}?state=dead">Open the dead-letter list</a>`
          : ''
      }
    </div>
    ${
      stats.dead > 0
        ? html`<p class="muted table-note">Filter them by kind, error or time, tick some and retry or discard them, or act on all that match. Scripts: <code>GET ${paths.apiMessages}?state=dead</code>.</p>`
        : html`<p class="empty">No dead messages.</p>`
    }
  </section>`,
    view.flash,
  );
}

/**
 * Due now, and held apart: messages behind an unfinished earlier one of their ordering key wait
 * for it, not for a drain, so they are not "due" and do not make the lag.
 */
function pendingNote(stats: OutboxStats): string {
  const due = `${formatCount(stats.due)} due now`;
  return stats.held > 0 ? `${due}, ${formatCount(stats.held)} held by ordering key` : due;
}

function statCard(
  frame: PageFrame,
  state: string,
  label: string,
  value: number,
  note: string,
  tone: 'warn' | 'bad' | null = null,
): Markup {
  return html`<div class="card${tone ? ` card-${tone}` : ''}" data-state="${state}">
      <div class="card-label"><a href="${frame.paths.messages}?state=${state}">${label}</a></div>
      <div class="card-value">${formatCount(value)}</div>
      <div class="card-note">${note}</div>
    </div>`;
}

function recentErrorsTable(frame: PageFrame, errors: readonly MessageRecord[]): Markup {
  if (errors.length === 0) return html`<p class="empty">No recent errors.</p>`;
  const { now, paths } = frame;
  const rows = errors.map((message) => {
    const at = message.state === 'dead' && message.deadAt ? message.deadAt : message.dueAt;
    const label = message.state === 'dead' ? 'dead' : at > now ? 'next try' : 'due';
    return html`<tr data-message-id="${message.id}">
      <td class="nowrap">${timeCell(at, now, label)}</td>
      <td class="num">${messageLink(paths.message(message.id), message)}</td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code></td>
      <td class="num">${message.attempts}/${message.maxAttempts}</td>
      <td>${stateBadge(message)}</td>
      <td class="error">${errorCell(message.lastError)}</td>
    </tr>`;
  });
  return html`<div class="table-wrap"><table>
    <thead><tr><th>Time (UTC)</th><th class="num">Id</th><th>Kind</th><th>Key</th><th class="num">Attempts</th><th>State</th><th>Last error</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}
