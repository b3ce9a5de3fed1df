/** The message page's attempts section: one row per recorded attempt, oldest first. */
import { html } from 'hono/html';
import type { AttemptRecord, MessageRecord } from '../core/outbox-store.js';
import type { Markup } from './markup.js';
import { errorCell, timeCell } from './message-cells.js';

const OUTCOME_LABELS: Readonly<Record<AttemptRecord['outcome'], string>> = {
  delivered: 'delivered',
  retry: 'failed, retried',
  dead: 'failed, dead',
};

/**
 * The attempts of `message` as a table (time, duration, outcome, status or code, destination,
 * error), and a line for attempts counted but not recorded (made before attempt history, or by
 * a drain that died before recording the outcome).
 */
export function attemptsSection(message: MessageRecord, now: Date): Markup {
  const attempts = message.attemptLog ?? [];
  const unrecorded = Math.max(0, message.attempts - attempts.length);
  const note =
    unrecorded > 0 && message.state !== 'claimed'
      ? html`<p class="muted small">${unrecorded} attempt${unrecorded === 1 ? '' : 's'} not recorded: made before attempt history existed, or by a drain that stopped before recording the outcome (the gaps in the numbers).</p>`
      : '';
  if (attempts.length === 0) {
    return html`<section class="panel attempts">
    <div class="panel-head"><h2>Attempts</h2></div>
    <p class="empty">No attempt recorded yet.</p>${note}
  </section>`;
  }
  const rows = attempts.map(
    (attempt) => html`<tr class="attempt attempt-${attempt.outcome}">
      <td class="num">${attempt.attempt ?? '–'}</td>
      <td class="nowrap">${attempt.at ? timeCell(attempt.at, now) : html`<span class="muted">–</span>`}</td>
      <td class="num">${attempt.durationMs === null ? '–' : `${attempt.durationMs} ms`}</td>
      <td>${OUTCOME_LABELS[attempt.outcome]}</td>
      <td class="status">${statusText(attempt)}</td>
      <td>${attempt.destination ? html`<code>${attempt.destination}</code>` : html`<span class="muted">–</span>`}</td>
      <td class="error">${errorCell(attempt.error)}</td>
    </tr>`,
  );
  return html`<section class="panel attempts">
    <div class="panel-head"><h2>Attempts</h2></div>
    <div class="table-wrap"><table>
      <thead><tr><th class="num">#</th><th>Time (UTC)</th><th class="num">Duration</th><th>Outcome</th><th>Status / code</th><th>Destination</th><th>Error</th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>${note}
  </section>`;
}

/** `HTTP 503`, a provider's code, both, or a dash. */
function statusText(attempt: Pick<AttemptRecord, 'status' | 'providerCode'>): string {
  const parts = [
    ...(attempt.status === null ? [] : [`HTTP ${attempt.status}`]),
    ...(attempt.providerCode === null ? [] : [attempt.providerCode]),
  ];
  return parts.length === 0 ? '–' : parts.join(' · ');
}
