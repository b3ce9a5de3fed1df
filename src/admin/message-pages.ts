/** Dashboard pages for messages: a filtered, paged list, and one message shown whole. */
import { html } from 'hono/html';
import { MESSAGE_STATES, type MessageRecord, type MessageState } from '../core/outbox-store.js';
import { attemptsSection } from './attempt-table.js';
import type { Markup } from './markup.js';
import { errorCell, messageLink, payloadText, stateBadge, timeCell } from './message-cells.js';
import { csrfField, type Flash, type PageFrame, signedInPage } from './page-layout.js';

export interface MessageListView {
  state: MessageState;
  /** The kind filter as typed; empty for every kind. */
  kind: string;
  messages: readonly MessageRecord[];
  /** The next page's URL, or null on the last page. */
  nextHref: string | null;
  /** Whether this is a later page (a link back to the first is shown). */
  paged: boolean;
  /** A refusal of the filter (a bad cursor), shown instead of rows. */
  problem: string | null;
}

/** `GET /dashboard/messages`: one state (and kind), oldest first, page by page. */
export function messageListPage(frame: PageFrame, view: MessageListView): Markup {
  const { paths } = frame;
  const firstPage = `${paths.messages}?${new URLSearchParams({ state: view.state, ...(view.kind ? { kind: view.kind } : {}) })}`;
  return signedInPage(
    `${view.state} messages · outbox-relay`,
    frame,
    html`<section class="panel">
    <div class="panel-head"><h2>Messages</h2></div>
    <form class="filters" method="get" action="${paths.messages}">
      <div><label for="filter-state">State</label>
        <select id="filter-state" name="state">${MESSAGE_STATES.map(
          (state) =>
            html`<option value="${state}"${state === view.state ? html` selected` : ''}>${state}</option>`,
        )}</select></div>
      <div><label for="filter-kind">Kind</label>
        <input id="filter-kind" name="kind" value="${view.kind}" placeholder="any kind"></div>
      <button class="btn" type="submit">Show</button>
    </form>
    ${view.problem ? html`<p class="flash flash-warn" role="alert">${view.problem}</p>` : listTable(frame, view)}
    <div class="pager">
      ${view.paged ? html`<a class="btn" href="${firstPage}">First page</a>` : ''}
      ${view.nextHref ? html`<a class="btn" href="${view.nextHref}" rel="next">Next page</a>` : ''}
    </div>
  </section>`,
  );
}

function listTable(frame: PageFrame, view: MessageListView): Markup {
  if (view.messages.length === 0) return html`<p class="empty">No ${view.state} messages.</p>`;
  const { now, paths } = frame;
  const rows = view.messages.map(
    (message) => html`<tr data-message-id="${message.id}">
      <td class="num">${messageLink(paths.message(message.id), message)}</td>
      <td class="nowrap">${timeCell(listTime(message), now)}</td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code></td>
      <td class="num">${message.attempts}/${message.maxAttempts}</td>
      <td>${stateBadge(message)}</td>
      <td class="error">${errorCell(message.lastError)}</td>
    </tr>`,
  );
  return html`<div class="table-wrap"><table>
    <thead><tr><th class="num">Id</th><th>${listTimeLabel(view.state)} (UTC)</th><th>Kind</th><th>Key</th><th class="num">Attempts</th><th>State</th><th>Last error</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}

/** The time each list is ordered by. */
function listTime(message: MessageRecord): Date {
  if (message.state === 'delivered' && message.deliveredAt) return message.deliveredAt;
  if (message.state === 'dead' && message.deadAt) return message.deadAt;
  return message.dueAt;
}

function listTimeLabel(state: MessageState): string {
  return { pending: 'Due', claimed: 'Lease ends', delivered: 'Delivered', dead: 'Dead' }[state];
}

/** `GET /dashboard/messages/:id`: every field of one message, its payload and last error whole. */
export function messagePage(frame: PageFrame, message: MessageRecord, flash: Flash | null): Markup {
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
        <form method="post" action="${href}/discard">${csrfField(frame)}<button class="btn btn-danger" type="submit">Discard</button></form>
      </div>`
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
      <dt>Ordering key</dt><dd>${message.orderingKey ? html`<code>${message.orderingKey}</code>` : html`<span class="muted">–</span>`}</dd>
      <dt>Dedupe key</dt><dd>${message.dedupeKey ? html`<code>${message.dedupeKey}</code>` : html`<span class="muted">–</span>`}</dd>
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

/** `due_at` means a due time while pending and a lease expiry while claimed. */
function dueLabel(message: MessageRecord): string {
  if (message.state === 'claimed') return 'Lease expires';
  if (message.state === 'pending') return message.attempts > 0 ? 'Next attempt' : 'Due';
  return 'Last due';
}
