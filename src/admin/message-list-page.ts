/**
 * `GET /dashboard/messages`: one state's messages, filtered, page by page, with the list's
 * actions: retry or discard the rows ticked (one form around the table), or all that match the
 * filter (a second form, which must be confirmed); on the dead and delivered lists, replay
 * either, through a dry run that shows the count first. Each action form carries the filter
 * along, so its redirect comes back to the same list.
 */
import { html } from 'hono/html';
import { MESSAGE_STATES, type MessageRecord, type MessageState } from '../core/outbox-store.js';
import { listOrderTime } from '../store/list-cursor.js';
import type { HoldingHead } from '../store/postgres-store.js';
import { formatCount } from './display-format.js';
import { FILTER_TEXT_MAX_CHARS, filterQuery, type ListFilterFields } from './list-filter.js';
import type { Markup } from './markup.js';
import {
  errorCell,
  heldByNote,
  messageLink,
  payloadPreview,
  stateBadge,
  timeCell,
} from './message-cells.js';
import { csrfField, type Flash, type PageFrame, signedInPage } from './page-layout.js';

export interface MessageListView {
  fields: ListFilterFields;
  /** The kinds the filter offers; undefined: a text box for any kind. */
  kinds: readonly string[] | undefined;
  messages: readonly MessageRecord[];
  /** The head holding each held pending message back, by the held message's id. */
  heads: ReadonlyMap<string, HoldingHead>;
  /** The next page's URL, or null on the last page. */
  nextHref: string | null;
  /** Whether this is a later page (a link back to the first is shown). */
  paged: boolean;
  /** A refusal of the filter (which field, and why), shown instead of rows. */
  problem: string | null;
  /** The most an "all that match" action takes at once. */
  matchLimit: number;
  flash: Flash | null;
}

/**
 * What an operator may do to rows of each state from a list, as its buttons say it; claimed
 * rows are their drain's. Retrying a dead row gives it fresh attempts; a pending one is sent now.
 * Both can be discarded.
 */
const LIST_ACTIONS: Record<MessageState, { retrySelected: string; retryMatching: string } | null> =
  {
    pending: {
      retrySelected: 'Send selected now',
      retryMatching: 'Send all that match now',
    },
    claimed: null,
    delivered: null,
    dead: { retrySelected: 'Retry selected', retryMatching: 'Retry all that match' },
  };

/**
 * The replay buttons of each state's list: a dead message is redriven, a delivered one resent.
 * Each goes to a dry run first (dashboard-replay-routes), which shows the count before anything
 * changes.
 */
const REPLAY_ACTIONS: Partial<Record<MessageState, { selected: string; matching: string }>> = {
  dead: { selected: 'Replay selected', matching: 'Replay all that match' },
  delivered: { selected: 'Resend selected', matching: 'Resend all that match' },
};

/** Why a list has no actions, said under it. */
const NO_ACTIONS: Partial<Record<MessageState, string>> = {
  claimed:
    'A claimed message is being sent right now; it can be acted on once its drain settles it.',
};

export function messageListPage(frame: PageFrame, view: MessageListView): Markup {
  const { paths } = frame;
  const { fields } = view;
  const firstPage = `${paths.messages}?${filterQuery(fields)}`;
  return signedInPage(
    `${fields.state} messages · outbox-relay`,
    frame,
    html`<section class="panel">
    <div class="panel-head"><h2>${listTitle(fields.state)}</h2></div>
    ${filterForm(frame, view)}
    ${
      view.problem
        ? html`<p class="flash flash-warn" role="alert">${view.problem}</p>`
        : html`${selectionForm(frame, view)}
    <div class="pager">
      ${view.paged ? html`<a class="btn" href="${firstPage}">First page</a>` : ''}
      ${view.nextHref ? html`<a class="btn" href="${view.nextHref}" rel="next">Next page</a>` : ''}
    </div>
    ${matchingForm(frame, view)}`
    }
  </section>`,
    view.flash,
  );
}

function listTitle(state: MessageState): string {
  return state === 'dead' ? 'Dead letters' : `${state[0]!.toUpperCase()}${state.slice(1)} messages`;
}

function filterForm(frame: PageFrame, view: MessageListView): Markup {
  const { fields } = view;
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;
  const kindChoice = view.kinds
    ? html`<select id="filter-kind" name="kind">${option('', 'any kind', fields.kind === '')}${view.kinds.map(
        (kind) => option(kind, kind, kind === fields.kind),
      )}</select>`
    : html`<input id="filter-kind" name="kind" value="${fields.kind}" placeholder="any kind" maxlength="63">`;
  return html`<form class="filters" method="get" action="${frame.paths.messages}" role="search" aria-label="Filter messages">
      <div><label for="filter-state">State</label>
        <select id="filter-state" name="state">${MESSAGE_STATES.map((state) =>
          option(state, state, state === fields.state),
        )}</select></div>
      <div><label for="filter-kind">Kind</label>${kindChoice}</div>
      <div><label for="filter-error">Error contains</label>
        <input id="filter-error" name="error" value="${fields.error}" maxlength="${FILTER_TEXT_MAX_CHARS}" placeholder="e.g. 503"></div>
      <div><label for="filter-ordering">Ordering key</label>
        <input id="filter-ordering" name="orderingKey" value="${fields.orderingKey}" maxlength="${FILTER_TEXT_MAX_CHARS}" placeholder="any"></div>
      <div><label for="filter-from">From (UTC)</label>
        <input id="filter-from" name="from" type="datetime-local" value="${fields.from}"></div>
      <div><label for="filter-until">Until (UTC)</label>
        <input id="filter-until" name="until" type="datetime-local" value="${fields.until}"></div>
      <button class="btn" type="submit">Show</button>
      <a class="btn" href="${frame.paths.messages}?state=${fields.state}">Clear</a>
    </form>`;
}

/** The filter again as hidden fields, so an action's redirect returns to this list. */
function filterFields(fields: ListFilterFields): Markup {
  return html`${[...filterQuery(fields)].map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`,
  )}`;
}

function selectionForm(frame: PageFrame, view: MessageListView): Markup {
  const { state } = view.fields;
  if (view.messages.length === 0) {
    return html`<p class="empty">No ${state} messages${hasFilter(view.fields) ? ' match this filter' : ''}.</p>`;
  }
  const actions = LIST_ACTIONS[state];
  const replay = REPLAY_ACTIONS[state];
  const { paths } = frame;
  const table = listTable(frame, view, actions !== null || replay !== undefined);
  if (!actions && !replay) {
    return html`${table}<p class="muted table-note">${NO_ACTIONS[state] ?? ''}</p>`;
  }
  const dryRun = `${paths.replays}/dry-run`;
  return html`<form method="post" action="${actions ? `${paths.messages}/retry` : dryRun}" aria-label="Selected messages">
      ${csrfField(frame)}${filterFields(view.fields)}
      ${table}
      <div class="list-actions">
        <span class="muted">With the ticked messages:</span>
        ${
          actions
            ? html`<button class="btn btn-primary" type="submit" formaction="${paths.messages}/retry">${actions.retrySelected}</button>
        <button class="btn btn-danger" type="submit" formaction="${paths.messages}/discard">Discard selected</button>`
            : ''
        }
        ${replay ? html`<button class="btn" type="submit" name="scope" value="selected" formaction="${dryRun}">${replay.selected}…</button>` : ''}
      </div>
    </form>`;
}

function matchingForm(frame: PageFrame, view: MessageListView): Markup {
  const { state } = view.fields;
  const actions = LIST_ACTIONS[state];
  const replay = REPLAY_ACTIONS[state];
  if (view.messages.length === 0 || (!actions && !replay)) return html``;
  const { paths } = frame;
  // The dry run is the replay's confirmation, so its button skips the box the others need.
  const replayButton = replay
    ? html`<button class="btn" type="submit" name="scope" value="matching" formaction="${paths.replays}/dry-run" formnovalidate>${replay.matching}…</button>`
    : '';
  if (!actions) {
    return html`<form class="match-actions" method="post" action="${paths.replays}/dry-run" aria-label="All that match">
      ${csrfField(frame)}${filterFields(view.fields)}
      <span class="muted">Every ${state} message that matches this filter, not only this page; the count comes first:</span>
      ${replayButton}
    </form>`;
  }
  return html`<form class="match-actions" method="post" action="${paths.messages}/retry-matching" aria-label="All that match">
      ${csrfField(frame)}${filterFields(view.fields)}
      <label><input type="checkbox" name="confirm" value="all" required> Every ${state} message that matches this filter, not only this page: up to ${formatCount(view.matchLimit)} per press, oldest first</label>
      <button class="btn" type="submit" formaction="${paths.messages}/retry-matching">${actions.retryMatching}</button>
      <button class="btn btn-danger" type="submit" formaction="${paths.messages}/discard-matching">Discard all that match</button>
      ${replayButton}
    </form>`;
}

function hasFilter(fields: ListFilterFields): boolean {
  return [...filterQuery(fields).keys()].some((name) => name !== 'state');
}

function listTable(frame: PageFrame, view: MessageListView, selectable: boolean): Markup {
  const { now, paths } = frame;
  const rows = view.messages.map((message) => {
    const head = view.heads.get(message.id);
    return html`<tr data-message-id="${message.id}"${head ? html` data-held-by="${head.id}"` : ''}>
      ${selectable ? html`<td class="select"><input type="checkbox" name="id" value="${message.id}" aria-label="Select message ${message.id}"></td>` : ''}
      <td class="num">${messageLink(paths.message(message.id), message)}</td>
      <td class="nowrap">${timeCell(listOrderTime(message), now)}</td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code>${payloadPreview(message)}</td>
      <td class="ordering">${message.orderingKey ? html`<code>${message.orderingKey}</code>` : html`<span class="muted">–</span>`}${head ? heldByNote(paths, head, now) : ''}</td>
      <td class="num">${message.attempts}/${message.maxAttempts}</td>
      <td>${stateBadge(message)}</td>
      <td class="error">${errorCell(message.lastError)}</td>
    </tr>`;
  });
  const { state } = view.fields;
  return html`<div class="table-wrap"><table>
    <thead><tr>${selectable ? html`<th><span class="visually-hidden">Select</span></th>` : ''}<th class="num">Id</th><th>${listTimeLabel(state)} (UTC)</th><th>Kind</th><th>Key</th><th>Ordering key</th><th class="num">Attempts</th><th>State</th><th>Last error</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}

function listTimeLabel(state: MessageState): string {
  return { pending: 'Due', claimed: 'Lease ends', delivered: 'Delivered', dead: 'Dead' }[state];
}
