/**
 * The columns lists and lookups show operators. A claimed row shows its lease expiry as its due
 * time: when it may next be claimed, as the state machine says.
 */
export const MESSAGE_COLUMNS = `m.id, m.key, m.kind, m.payload, m.ordering_key, m.dedupe_key, m.state,
  m.attempts, m.max_attempts,
  CASE WHEN m.state = 'claimed' THEN m.lease_expires_at ELSE m.due_at END AS due_at,
  m.claimed_at, m.last_error, m.created_at, m.delivered_at, m.dead_at, m.traceparent,
  m.tracestate`;

/**
 * The same columns from delivered history: a message (alias h) of a group (alias g), where every
 * message is delivered, at its group's time.
 */
export const DELIVERED_COLUMNS = `h.id, h.key, h.kind, h.payload, h.ordering_key,
  NULL::text AS dedupe_key, 'delivered'::text AS state, h.attempts, h.max_attempts, h.due_at,
  NULL::timestamptz AS claimed_at, h.last_error, h.created_at, g.delivered_at,
  NULL::timestamptz AS dead_at, h.traceparent, h.tracestate`;

/**
 * What a claim returns: the columns a send needs, and the state that tells a claimed row from
 * one the claim set aside. Every column more is read, sent and parsed once per message. The
 * creation time comes as epoch milliseconds (a float8, truncated to the millisecond as a Date
 * holds it): the drivers parse a timestamptz's text with a regular expression, 0.6 µs a message
 * of the drain process's CPU over a no-op drain (docs/benchmarks.md, "The drain process's CPU
 * since 546db54").
 */
export const CLAIMED_COLUMNS = `id, key, kind, payload, ordering_key, attempts, max_attempts,
  date_part('epoch', date_trunc('milliseconds', created_at)) * 1000 AS created_ms, state,
  traceparent, tracestate`;
