/** Table cells and badges the dashboard's message tables share. */
import { html } from 'hono/html';
import type { MessageRecord } from '../core/outbox-store.js';
import type { HoldingHead } from '../store/postgres-store.js';
import type { AdminPaths } from './admin-paths.js';
import { formatRelative, formatTime, truncate } from './display-format.js';
import type { Markup } from './markup.js';

/** Characters of an error shown in a table cell; the full text (to a limit) is in its tooltip. */
const ERROR_PREVIEW_CHARS = 160;
const ERROR_TOOLTIP_CHARS = 2_000;
/** Characters of a payload in a table row's preview; the message's own page shows it whole. */
const PAYLOAD_PREVIEW_CHARS = 2_000;

export function errorCell(error: string | null): Markup {
  if (!error) return html`<span class="muted">–</span>`;
  return html`<span title="${truncate(error, ERROR_TOOLTIP_CHARS)}">${truncate(error, ERROR_PREVIEW_CHARS)}</span>`;
}

export function timeCell(at: Date, now: Date, label?: string): Markup {
  const relative = formatRelative(at, now);
  return html`<time datetime="${at.toISOString()}">${formatTime(at)}</time><div class="muted small">${label ? `${label} ${relative}` : relative}</div>`;
}

/** A pending message that has failed before is waiting to retry; say so. */
export function stateBadge(message: Pick<MessageRecord, 'state' | 'attempts'>): Markup {
  const label = message.state === 'pending' && message.attempts > 0 ? 'retrying' : message.state;
  return html`<span class="badge badge-${message.state}">${label}</span>`;
}

export function payloadPreview(message: MessageRecord): Markup {
  return html`<details><summary>payload</summary><pre>${truncate(payloadText(message), PAYLOAD_PREVIEW_CHARS)}</pre></details>`;
}

/** The payload as indented JSON. */
export function payloadText(message: MessageRecord): string {
  return JSON.stringify(message.payload, null, 2) ?? 'null';
}

/** A message's id as a link to its own page. */
export function messageLink(href: string, message: MessageRecord): Markup {
  return html`<a href="${href}">${message.id}</a>`;
}

/**
 * Why a pending message is not sent though it may be due: the head of its ordering key, linked,
 * and what that head is doing.
 */
export function heldByNote(paths: AdminPaths, head: HoldingHead, now: Date): Markup {
  return html`<div class="held small" data-head-state="${head.state}">held by <a href="${paths.message(head.id)}">message ${head.id}</a>: ${headReason(head, now)}</div>`;
}

function headReason(head: HoldingHead, now: Date): string {
  switch (head.state) {
    case 'dead':
      return 'dead head blocking; retry or discard it to let this key move';
    case 'claimed':
      return `head claimed, being sent (lease ends ${formatRelative(head.dueAt, now)})`;
    case 'pending':
      return head.dueAt > now
        ? `head pending, next attempt ${formatRelative(head.dueAt, now)}`
        : 'head pending, due now';
  }
}
