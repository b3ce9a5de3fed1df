/**
 * The wait an HTTP `Retry-After` header asks for, in ms: either delay-seconds (`120`) or an
 * HTTP-date (`Wed, 21 Oct 2015 07:28:00 GMT`), per RFC 9110 section 10.2.3. `undefined` when
 * the header is absent or unreadable; 0 for a date already past. No cap here: the drain caps
 * every hint (`MAX_RETRY_AFTER_MS`).
 *
 * @example
 * retryAfterMs('2', new Date()); // 2000
 */
export function retryAfterMs(header: string | null, now: Date): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP-date always names its month; this keeps Date.parse's looser formats ("-5") out.
  if (!/[A-Za-z]/.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
