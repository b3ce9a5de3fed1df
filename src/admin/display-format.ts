/**
 * How the dashboard writes numbers, times and durations. Times are UTC: a page without scripts
 * cannot know the reader's zone.
 */

const countFormat = new Intl.NumberFormat('en-US');

/** `12,345`. */
export function formatCount(value: number): string {
  return countFormat.format(value);
}

/** `2024-05-01 12:34:56`, UTC. */
export function formatTime(at: Date): string {
  return at.toISOString().slice(0, 19).replace('T', ' ');
}

/** A time of today as `12:34:56 UTC`; an older one with its date. */
export function formatSince(at: Date, now: Date): string {
  const sameDay = at.toISOString().slice(0, 10) === now.toISOString().slice(0, 10);
  return `${sameDay ? at.toISOString().slice(11, 19) : formatTime(at)} UTC`;
}

/** `12:34`, UTC: a chart tick. */
export function formatClock(at: Date): string {
  return at.toISOString().slice(11, 16);
}

/** A short duration: `42 s`, `3 m 12 s`, `3 h 5 m`, `3 d 0 h`. */
export function formatDuration(ms: number): string {
  const seconds = Math.floor(Math.max(0, ms) / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} m ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} m`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** `3 m 12 s ago`, `in 5 s`, or `now`. */
export function formatRelative(at: Date, now: Date): string {
  const difference = at.getTime() - now.getTime();
  if (Math.abs(difference) < 1000) return 'now';
  const text = formatDuration(Math.abs(difference));
  return difference < 0 ? `${text} ago` : `in ${text}`;
}

/** At most `max` characters, with an ellipsis when cut; never half a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}
