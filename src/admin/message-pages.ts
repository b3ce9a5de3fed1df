/** The dashboard page of one message, shown whole (the lists are in message-list-page.ts). */
import { html } from 'hono/html';
import type { MessageRecord } from '../core/outbox-store.js';
import { traceIdOf } from '../core/trace-context.js';
import type { HoldingHead } from '../store/postgres-store.js';
import { attemptsSection } from './attempt-table.js';
import type { Markup } from './markup.js';
import { heldByNote, payloadText, stateBadge, timeCell } from './message-cells.js';
import { csrfField, type Flash, type PageFrame, signedInPage } from './page-layout.js';

/** `GET /dashboard/messages/:id`: every field of one message, its payload and last error whole. */
/** `head`: the message this one waits for, when it is pending behind the head of its key. */
export function messagePage(
  frame: PageFrame,
  message: MessageRecord,
  flash: Flash | null,
  head: HoldingHead | null = null,
): Markup {
  const { now, paths } = frame;
  const href = paths.message(message.id);
  const optionalTime = (at: Date | null) =>
    at ? timeCell(at, now) : html`<span class="muted">–</span>`;
  return signedInPage(
    `Message ${message.id} · outbox-relay`,
    frame,
    html`<section class="panel" data-message-id="${message.id}">
    <div class="panel-head">
      <h2>Message ${message.id} ${stateBadge(message)}</h2>
      ${
        message.state === 'dead'
          ? html`<div class="message-actions">
        <form method="post" action="${href}/retry">${csrfField(frame)}<button class="btn btn-primary" type="submit">Retry</button></form>
        ${replayForm(frame, message)}
        <form method="post" action="${href}/discard">${csrfField(frame)}<button class="btn btn-danger" type="submit">Discard</button></form>
      </div>`
          : message.state === 'delivered'
            ? html`<div class="message-actions">${replayForm(frame, message)}</div>`
            : ''
      }
    </div>
    <dl class="fields">
      <dt>Key</dt><dd><code>${message.key}</code></dd>
      <dt>Kind</dt><dd><code>${message.kind}</code></dd>
      <dt>State</dt><dd>${message.state}</dd>
      <dt>Attempts</dt><dd>${message.attempts} of ${message.maxAttempts}</dd>
      <dt>${dueLabel(message)}</dt><dd>${timeCell(message.dueAt, now)}</dd>
      <dt>Claimed at</dt><dd>${optionalTime(message.claimedAt)}</dd>
      <dt>Created</dt><dd>${timeCell(message.createdAt, now)}</dd>
      <dt>Delivered at</dt><dd>${optionalTime(message.deliveredAt)}</dd>
      <dt>Dead at</dt><dd>${optionalTime(message.deadAt)}</dd>
      <dt>Ordering key</dt><dd>${message.orderingKey ? html`<code>${message.orderingKey}</code>` : html`<span class="muted">–</span>`}${head ? heldByNote(paths, head, now) : ''}</dd>
      <dt>Dedupe key</dt><dd>${message.dedupeKey ? html`<code>${message.dedupeKey}</code>` : html`<span class="muted">–</span>`}</dd>
      <dt>Trace id</dt><dd>${message.traceContext ? html`<code class="trace-id" title="${message.traceContext.traceparent}">${traceIdOf(message.traceContext.traceparent) ?? '?'}</code>` : html`<span class="muted">–</span>`}</dd>
    </dl>
  </section>
  ${attemptsSection(message, now)}
  <section class="panel">
    <div class="panel-head"><h2>Last error</h2></div>
    ${message.lastError ? html`<pre class="whole last-error">${message.lastError}</pre>` : html`<p class="empty">None.</p>`}
  </section>
  <section class="panel">
    <div class="panel-head"><h2>Payload</h2></div>
    <pre class="whole payload">${payloadText(message)}</pre>
  </section>`,
    flash,
  );
}

/**
 * Replay (dead) or resend (delivered) this one message, audited, through the dry run's
 * confirmation like a list's selection.
 */
function replayForm(frame: PageFrame, message: MessageRecord): Markup {
  return html`<form method="post" action="${frame.paths.replays}/dry-run">${csrfField(frame)}<input type="hidden" name="state" value="${message.state}"><input type="hidden" name="scope" value="selected"><input type="hidden" name="id" value="${message.id}"><button class="btn" type="submit">${message.state === 'dead' ? 'Replay…' : 'Resend…'}</button></form>`;
}

/** `due_at` means a due time while pending and a lease expiry while claimed. */
function dueLabel(message: MessageRecord): string {
  if (message.state === 'claimed') return 'Lease expires';
  if (message.state === 'pending') return message.attempts > 0 ? 'Next attempt' : 'Due';
  return 'Last due';
}
