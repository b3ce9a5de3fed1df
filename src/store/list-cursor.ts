/**
 * The keyset cursor of the store's lists: where a page ended, by the time column its state
 * orders by and the id.
 */
import { ValidationError } from '../core/errors.js';
import { isMessageId } from '../core/message-id.js';
import type { MessageRecord } from '../core/outbox-store.js';

export function cursorTime(message: MessageRecord): Date {
  if (message.state === 'delivered' && message.deliveredAt) return message.deliveredAt;
  if (message.state === 'dead' && message.deadAt) return message.deadAt;
  return message.dueAt;
}

/**
 * Cursors are opaque to callers: base64url of "<ISO time>|<id>". Every time column a list orders
 * by is written with millisecond precision, so the JS Date in a cursor compares exactly.
 */
export function encodeCursor(at: Date, id: string): string {
  return btoa(`${at.toISOString()}|${id}`).replaceAll('+', '-').replaceAll('/', '_');
}

export function decodeCursor(cursor: string): { at: Date; id: string } {
  let text: string;
  try {
    text = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
  } catch {
    throw new ValidationError('cursor', 'is not a cursor this API returned');
  }
  const [at, id] = text.split('|');
  const time = new Date(at ?? '');
  if (!id || Number.isNaN(time.getTime()) || !isMessageId(id)) {
    throw new ValidationError('cursor', 'is not a cursor this API returned');
  }
  return { at: time, id };
}
