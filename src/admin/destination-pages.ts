/**
 * The dashboard's destinations page: each destination with a health record, paused ones
 * first, with its state, failures, pause, last error and waiting messages, and the buttons
 * that pause (for 10 minutes, an hour, or until resumed) and resume it. Routes in
 * dashboard-destination-routes.ts. A destination's name is anyone's text (a kind's
 * destination function reads it from a payload): it goes into the page only through `html`.
 */
import { html } from 'hono/html';
import type { DestinationRecord, PauseCause } from '../core/destination-health.js';
import { pausedUntilResumed } from '../store/destination-store.js';
import { formatCount } from './display-format.js';
import type { Markup } from './markup.js';
import { errorCell, timeCell } from './message-cells.js';
import { csrfField, type Flash, type PageFrame, signedInPage } from './page-layout.js';

/** The pause a row's select offers, by the value its form sends; the first is the default. */
export const DASHBOARD_PAUSE_CHOICES = [
  { value: '10m', label: '10 min', forMs: 10 * 60_000 },
  { value: '1h', label: '1 h', forMs: 60 * 60_000 },
  { value: 'until-resumed', label: 'until resumed', forMs: undefined },
] as const;

export interface DestinationsView {
  destinations: readonly DestinationRecord[];
  nextHref: string | null;
  paged: boolean;
  flash: Flash | null;
}

/** Each state's badge, in the colours the message states use: closed is sending, open is not. */
const STATE_BADGE: Readonly<Record<DestinationRecord['state'], string>> = {
  closed: 'delivered',
  open: 'dead',
  'half-open': 'pending',
};

const CAUSE_TEXT: Readonly<Record<PauseCause, string>> = {
  breaker: 'failures in a row',
  'retry-after': 'the receiver (Retry-After)',
  operator: 'an operator',
};

/** `GET /dashboard/destinations`. */
export function destinationsPage(frame: PageFrame, view: DestinationsView): Markup {
  const { paths } = frame;
  const rows = view.destinations.map((record, index) => destinationRow(frame, record, index));
  return signedInPage(
    'Destinations · outbox-relay',
    frame,
    html`<section class="panel">
    <div class="panel-head"><h2>Destinations</h2></div>
    <p class="muted">Every destination that has failed or been paused, paused ones first. Drains pass over a paused destination’s messages: they wait, and no attempt is counted. When the pause ends one probe goes; its delivery closes the destination, a failure pauses it again. Pause one here before a receiver’s maintenance; Resume sends its messages now.</p>
    ${
      view.destinations.length === 0
        ? html`<p class="empty">No destination has failed or been paused: every one is sent to as usual.</p>`
        : html`<div class="table-wrap"><table aria-label="Destinations">
      <thead><tr><th>Destination</th><th>State</th><th class="num">Failures</th><th>Paused by</th><th>Reopens</th><th>Last error</th><th class="num">Waiting</th><th class="actions"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>`
    }
    <div class="pager">
      ${view.paged ? html`<a class="btn" href="${paths.destinations}">First</a>` : ''}
      ${view.nextHref ? html`<a class="btn" href="${view.nextHref}" rel="next">Next</a>` : ''}
    </div>
  </section>`,
    view.flash,
  );
}

function destinationRow(frame: PageFrame, record: DestinationRecord, index: number): Markup {
  const { paths } = frame;
  const paused = record.state !== 'closed';
  return html`<tr data-destination="${record.destination}" data-state="${record.state}">
      <td class="destination"><code>${record.destination}</code></td>
      <td><span class="badge badge-${STATE_BADGE[record.state]}">${record.state}</span></td>
      <td class="num">${formatCount(record.failures)}</td>
      <td>${record.pausedBy ? CAUSE_TEXT[record.pausedBy] : html`<span class="muted">–</span>`}</td>
      <td class="nowrap">${reopens(frame, record)}</td>
      <td class="error">${errorCell(record.lastError)}</td>
      <td class="num">${formatCount(record.waiting)}</td>
      <td class="actions">
        <form class="pause" method="post" action="${paths.destinations}/pause" aria-label="Pause ${record.destination}">
          ${csrfField(frame)}
          <input type="hidden" name="destination" value="${record.destination}">
          <label class="visually-hidden" for="pause-for-${index}">Pause for</label>
          <select id="pause-for-${index}" name="for">${DASHBOARD_PAUSE_CHOICES.map(
            (choice) => html`<option value="${choice.value}">${choice.label}</option>`,
          )}</select>
          <button class="btn btn-small" type="submit">${paused ? 'Pause again' : 'Pause'}</button>
        </form>
        ${
          paused
            ? html`<form method="post" action="${paths.destinations}/resume" aria-label="Resume ${record.destination}">
          ${csrfField(frame)}
          <input type="hidden" name="destination" value="${record.destination}">
          <button class="btn btn-small btn-primary" type="submit">Resume</button>
        </form>`
            : ''
        }
      </td>
    </tr>`;
}

/** When the pause ends: a time, `until resumed`, or (half-open) when it ended and probes began. */
function reopens(frame: PageFrame, record: DestinationRecord): Markup | string {
  if (record.pausedUntil === null) return html`<span class="muted">–</span>`;
  if (pausedUntilResumed(record)) return 'until resumed';
  if (record.state === 'half-open')
    return timeCell(record.pausedUntil, frame.now, 'probing: reopened');
  return timeCell(record.pausedUntil, frame.now);
}
