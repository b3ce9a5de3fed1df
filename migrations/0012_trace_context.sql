-- Trace context (docs/tracing.md): the W3C Trace Context of the code that enqueued a message, so
-- the drain's send continues that trace and the receiver joins it. Runs inside a PL/pgSQL block
-- (src/store/migrate.ts): plain DDL only, no dollar quotes. Columns with no default and two
-- attributes of a composite type are catalog changes only: existing rows, live and delivered,
-- read them as null (no trace), and no table is rewritten.

-- 1. The `traceparent` header's value (version, trace id, parent span id, flags) and the
-- `tracestate` that came with it. Domains rather than CHECKs on messages, so the format is
-- checked only where the value is written (enqueue), not on every row version a claim or
-- settle writes (migration 0006 says why that matters). The enqueue checks both first and names
-- the field; these are the last line.
CREATE DOMAIN {{schema}}.message_traceparent AS text;
ALTER DOMAIN {{schema}}.message_traceparent
  ADD CONSTRAINT message_traceparent_format
  CHECK (VALUE ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
CREATE DOMAIN {{schema}}.message_tracestate AS text;
ALTER DOMAIN {{schema}}.message_tracestate
  ADD CONSTRAINT message_tracestate_length CHECK (length(VALUE) BETWEEN 1 AND 512);
ALTER TABLE {{schema}}.messages
  ADD COLUMN traceparent {{schema}}.message_traceparent,
  ADD COLUMN tracestate {{schema}}.message_tracestate;

-- 2. History keeps them, so a delivered message still names its trace (`outbox show KEY`).
ALTER TYPE {{schema}}.delivered_message
  ADD ATTRIBUTE traceparent text,
  ADD ATTRIBUTE tracestate text;
