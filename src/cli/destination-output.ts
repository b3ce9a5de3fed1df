/**
 * What `outbox destinations`, `pause` and `resume` print for people: a destination's pause and
 * what it holds (JSON output is the records themselves).
 */
import type { DestinationRecord } from '../core/destination-health.js';
import { pausedUntilResumed } from '../store/destination-store.js';
import { count, formatTime } from './text-format.js';

/** `until resumed` for an operator's pause without an end, else the end in UTC; `-` unpaused. */
export function pauseEndText(record: Pick<DestinationRecord, 'pausedUntil'>): string {
  if (record.pausedUntil === null) return '-';
  return pausedUntilResumed(record) ? 'until resumed' : formatTime(record.pausedUntil);
}

/** `paused https://x until resumed: 3 pending messages held`. */
export function pausedLine(record: DestinationRecord): string {
  const until = pausedUntilResumed(record) ? 'until resumed' : `until ${pauseEndText(record)}`;
  return `paused ${record.destination} ${until}: ${count(record.waiting, 'pending message')} held`;
}

/** `resumed https://x: closed, 3 messages due now`. */
export function resumedLine(record: DestinationRecord): string {
  return `resumed ${record.destination}: closed, ${count(record.waiting, 'message')} due now`;
}

/**
 * A pause that holds nothing, of a destination that never failed: most likely a name that is
 * not one, since a pause of any name is kept (so one can be paused before its first message).
 */
export function looksMistyped(record: DestinationRecord): boolean {
  return record.waiting === 0 && record.lastFailureAt === null && record.recoveredAt === null;
}
