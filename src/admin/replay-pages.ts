/**
 * The dashboard's replay pages: the confirmation a first press shows (the exact count and a
 * sample, and the button that replays it), one replay's outcome (with "continue" when its budget
 * ran out), and the audit of every replay, newest first. Routes in dashboard-replay-routes.ts.
 */
import { html } from 'hono/html';
import type { ReplayAudit, ReplaySampleMessage } from '../core/replay.js';
import type { ReplaySelection } from '../core/replay-selection.js';
import { selectionJson } from '../core/replay-selection.js';
import { formatCount, formatDuration } from './display-format.js';
import type { Markup } from './markup.js';
import { errorCell, timeCell } from './message-cells.js';
import { csrfField, type Flash, type PageFrame, signedInPage } from './page-layout.js';

export interface ReplayConfirmView {
  selection: ReplaySelection;
  matched: number;
  sample: readonly ReplaySampleMessage[];
  /** Where "back" goes: the list the press came from. */
  backHref: string;
  /** The count the operator confirmed, when more match now (the press was refused). */
  seen: number | null;
  /** The most one press replays before it stops and offers to continue, in ms. */
  budgetMs: number;
}

/** `dead`: redrive; `delivered`: resend. The verb the buttons and notes use. */
function verb(state: ReplaySelection['state']): 'Replay' | 'Resend' {
  return state === 'dead' ? 'Replay' : 'Resend';
}

function messages(count: number): string {
  return `${formatCount(count)} ${count === 1 ? 'message' : 'messages'}`;
}

/** `POST /dashboard/replays/dry-run`: what a replay would take, before it takes anything. */
export function replayConfirmPage(frame: PageFrame, view: ReplayConfirmView): Markup {
  const { selection, matched } = view;
  const action = verb(selection.state);
  const what =
    selection.state === 'dead'
      ? 'back to pending with fresh attempts, under their own ids and keys'
      : 'out again: out of history and back to pending, under their own ids and keys';
  const grown =
    view.seen !== null
      ? html`<p class="flash flash-warn" role="alert">Nothing was replayed: ${messages(matched)} match now, more than the ${formatCount(view.seen)} you confirmed. Check them again.</p>`
      : '';
  const body =
    matched === 0
      ? html`<p class="empty" data-matched="0">No ${selection.state} messages match this selection. Nothing would be replayed, and nothing was written.</p>`
      : html`<p data-matched="${matched}"><strong>${messages(matched)}</strong> ${matched === 1 ? 'matches' : 'match'} now. ${action} sends ${matched === 1 ? 'it' : 'them'} ${what}. At most ${formatDuration(view.budgetMs)} of it runs per press; a larger selection stops there and offers to continue.</p>
    ${sampleTable(frame, view.sample, matched)}
    <form class="match-actions" method="post" action="${frame.paths.replays}" aria-label="Confirm replay">
      ${csrfField(frame)}
      <input type="hidden" name="selection" value="${JSON.stringify(selectionJson(selection))}">
      <input type="hidden" name="seen" value="${matched}">
      <button class="btn btn-primary" type="submit">${action} ${messages(matched)}</button>
    </form>`;
  return signedInPage(
    `${action}: confirm · outbox-relay`,
    frame,
    html`<section class="panel" data-replay-confirm>
    <div class="panel-head"><h2>${action} ${selection.state} messages?</h2><a class="btn" href="${view.backHref}">Back to the list</a></div>
    ${grown}
    ${selectionList(selectionJson(selection))}
    ${body}
  </section>`,
  );
}

function sampleTable(
  frame: PageFrame,
  sample: readonly ReplaySampleMessage[],
  matched: number,
): Markup {
  const rows = sample.map(
    (message) => html`<tr data-message-id="${message.id}">
      <td class="num"><a href="${frame.paths.message(message.id)}">${message.id}</a></td>
      <td><code>${message.kind}</code></td>
      <td><code class="key">${message.key}</code></td>
      <td class="ordering">${message.orderingKey ? html`<code>${message.orderingKey}</code>` : html`<span class="muted">–</span>`}</td>
      <td class="error">${errorCell(message.lastError)}</td>
    </tr>`,
  );
  return html`<div class="table-wrap"><table aria-label="Sample">
    <caption class="muted small">The first ${formatCount(sample.length)} of ${formatCount(matched)}, by id</caption>
    <thead><tr><th class="num">Id</th><th>Kind</th><th>Key</th><th>Ordering key</th><th>Last error</th></tr></thead>
    <tbody>${rows}</tbody>
  </table></div>`;
}

/** A selection's fields as the audit keeps them, the state first, each value as text. */
function selectionEntries(selection: Record<string, unknown>): [string, string][] {
  const { state, ...rest } = selection;
  return [['state', state], ...Object.entries(rest)].map(([name, value]) => [
    String(name),
    Array.isArray(value) ? value.join(', ') : String(value),
  ]);
}

/** One field per line: a replay's own page. */
function selectionList(selection: Record<string, unknown>): Markup {
  const entries = selectionEntries(selection).map(
    ([name, value]) => html`<dt>${name}</dt><dd><code>${value}</code></dd>`,
  );
  return html`<dl class="fields selection">${entries}</dl>`;
}

/** On one line: a row of the replays table. */
function selectionWords(selection: Record<string, unknown>): Markup {
  return html`${selectionEntries(selection).map(
    ([name, value]) => html`<code>${name}: ${value}</code> `,
  )}`;
}

/** `GET /dashboard/replays/:id`: one replay's row; a stopped one with `lastId` can go on. */
export function replayResultPage(
  frame: PageFrame,
  audit: ReplayAudit,
  lastId: string | null,
): Markup {
  const state = audit.selection.state === 'delivered' ? 'delivered' : 'dead';
  const action = verb(state);
  const left = audit.matched - audit.replayed;
  const canContinue = audit.outcome === 'stopped' && lastId !== null && left > 0;
  const said = outcomeSentence(audit, state);
  return signedInPage(
    `${action} ${audit.id} · outbox-relay`,
    frame,
    html`<section class="panel" data-replay-id="${audit.id}" data-outcome="${audit.outcome}">
    <div class="panel-head"><h2>${action} ${audit.id} ${outcomeBadge(audit)}</h2><a class="btn" href="${frame.paths.replays}">All replays</a></div>
    <p class="flash flash-${audit.outcome === 'finished' ? 'ok' : 'warn'}" role="status">${said}</p>
    <dl class="fields">
      <dt>Requested by</dt><dd>${audit.requestedBy}</dd>
      <dt>Started</dt><dd>${timeCell(audit.startedAt, frame.now)}</dd>
      <dt>Finished</dt><dd>${audit.finishedAt ? timeCell(audit.finishedAt, frame.now) : html`<span class="muted">–</span>`}</dd>
      <dt>Matched</dt><dd>${formatCount(audit.matched)}</dd>
      <dt>Replayed</dt><dd>${formatCount(audit.replayed)}</dd>
    </dl>
    <h3>Selection</h3>
    ${selectionList(audit.selection)}
    ${
      canContinue
        ? html`<form class="match-actions" method="post" action="${frame.paths.replays}" aria-label="Continue replay">
      ${csrfField(frame)}
      <input type="hidden" name="selection" value="${JSON.stringify({ ...audit.selection, afterId: lastId })}">
      <input type="hidden" name="seen" value="${left}">
      <span class="muted">It stopped after message ${lastId}.</span>
      <button class="btn btn-primary" type="submit">Continue: ${action.toLowerCase()} the other ${messages(left)}</button>
    </form>`
        : ''
    }
    <p><a href="${frame.paths.messages}?state=pending">See the pending messages</a></p>
  </section>`,
  );
}

function outcomeSentence(audit: ReplayAudit, state: 'dead' | 'delivered'): string {
  const done = state === 'dead' ? 'pending again' : 'pending, to be sent again';
  const of = `${formatCount(audit.replayed)} of ${messages(audit.matched)}`;
  switch (audit.outcome) {
    case 'finished':
      return audit.dryRun
        ? `A dry run: ${messages(audit.matched)} matched; nothing was replayed.`
        : `${of} ${audit.replayed === 1 ? 'is' : 'are'} ${done}.`;
    case 'stopped':
      return `Stopped when its time ran out: ${of} ${audit.replayed === 1 ? 'is' : 'are'} ${done}; the rest are as they were.`;
    case 'failed':
      return `Failed: ${of} ${audit.replayed === 1 ? 'is' : 'are'} ${done}; the rest are as they were.`;
    case 'running':
      return `Running, or cut off while running: ${of} so far.`;
  }
}

function outcomeBadge(audit: ReplayAudit): Markup {
  const tone = { finished: 'delivered', stopped: 'pending', failed: 'dead', running: 'claimed' };
  return html`<span class="badge badge-${tone[audit.outcome]}">${audit.dryRun ? 'dry run' : audit.outcome}</span>`;
}

export interface ReplaysView {
  audits: readonly ReplayAudit[];
  nextHref: string | null;
  paged: boolean;
  flash: Flash | null;
}

/** `GET /dashboard/replays`: the audit, newest first, a page at a time. */
export function replaysPage(frame: PageFrame, view: ReplaysView): Markup {
  const { paths, now } = frame;
  const rows = view.audits.map(
    (audit) => html`<tr data-replay-id="${audit.id}">
      <td class="num"><a href="${paths.replay(audit.id)}">${audit.id}</a></td>
      <td class="nowrap">${timeCell(audit.startedAt, now)}</td>
      <td>${audit.requestedBy}</td>
      <td class="selection">${selectionWords(audit.selection)}</td>
      <td class="num">${formatCount(audit.matched)}</td>
      <td class="num">${formatCount(audit.replayed)}</td>
      <td>${outcomeBadge(audit)}</td>
    </tr>`,
  );
  return signedInPage(
    'Replays · outbox-relay',
    frame,
    html`<section class="panel">
    <div class="panel-head"><h2>Replays</h2></div>
    <p class="muted">Every replay and dry run that matched anything, newest first: from this dashboard, the admin API and <code>outbox replay</code>.</p>
    ${
      view.audits.length === 0
        ? html`<p class="empty">No replays yet.</p>`
        : html`<div class="table-wrap"><table>
      <thead><tr><th class="num">Id</th><th>When (UTC)</th><th>Who</th><th>Selection</th><th class="num">Matched</th><th class="num">Replayed</th><th>Outcome</th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>`
    }
    <div class="pager">
      ${view.paged ? html`<a class="btn" href="${paths.replays}">Newest</a>` : ''}
      ${view.nextHref ? html`<a class="btn" href="${view.nextHref}" rel="next">Older</a>` : ''}
    </div>
  </section>`,
    view.flash,
  );
}
