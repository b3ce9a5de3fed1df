-- Destination health (docs/destinations.md): which receiver each message goes to, and that
-- receiver's health, shared by every drain. Runs inside a PL/pgSQL block (src/store/migrate.ts):
-- plain DDL only, no dollar quotes. A column with no default is a catalog change: existing rows
-- read it as null (no destination: never paused), and no table is rewritten.

-- 1. Where the message goes, as its kind's destination function names it at enqueue (a
-- webhook: its URL's origin). A domain rather than a CHECK on messages, so the length is checked
-- only where the value is written (enqueue), not on every row version a claim or settle writes
-- (migration 0006 says why that matters).
CREATE DOMAIN {{schema}}.message_destination AS text;
ALTER DOMAIN {{schema}}.message_destination
  ADD CONSTRAINT message_destination_length CHECK (length(VALUE) BETWEEN 1 AND 300);
ALTER TABLE {{schema}}.messages ADD COLUMN destination {{schema}}.message_destination;

-- 2. One row per destination that has failed at least once, or that an operator paused. A
-- destination with no row is healthy; the happy path never writes here.
--   closed     paused_until IS NULL: claimed as usual.
--   open       paused_until > now: none of its messages is claimed.
--   half-open  paused_until <= now: one probe message at a time (probe_until: its lease); a
--              delivery closes it, a failure opens it again.
CREATE TABLE {{schema}}.destinations (
  destination {{schema}}.message_destination PRIMARY KEY,
  -- Retryable failures since the last delivery (or the last operator resume).
  failures integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
  -- Pauses in a row without a delivery between: each lasts twice the one before, up to a cap.
  pauses integer NOT NULL DEFAULT 0 CHECK (pauses >= 0),
  paused_until timestamptz,
  -- When the current pause began; equal to the settle's now in the statement that opened it.
  paused_at timestamptz,
  -- 'breaker' (failures in a row), 'retry-after' (the receiver asked), 'operator'.
  paused_by text CHECK (paused_by IN ('breaker', 'retry-after', 'operator')),
  -- A probe is out until then (its claim's lease); another may go after.
  probe_until timestamptz,
  last_error text,
  last_failure_at timestamptz,
  -- When a delivery last reset the failure count.
  recovered_at timestamptz,
  updated_at timestamptz NOT NULL,
  CONSTRAINT destinations_paused_has_cause
    CHECK ((paused_until IS NULL) = (paused_by IS NULL) AND (paused_until IS NULL) = (paused_at IS NULL))
);

-- Every claim reads the paused destinations (to pass over their messages) and the half-open
-- ones (to send a probe): with this index it reads only those, however many rows the table
-- keeps of destinations that failed once and recovered.
CREATE INDEX destinations_paused ON {{schema}}.destinations (paused_until)
  WHERE paused_until IS NOT NULL;

-- Every claim also reads the destinations with failures or a pause, to mark the messages whose
-- settle must keep health (a healthy destination's settle skips it): only those, however many
-- recovered destinations the table keeps.
CREATE INDEX destinations_watched ON {{schema}}.destinations (destination)
  WHERE failures > 0 OR paused_until IS NOT NULL;
