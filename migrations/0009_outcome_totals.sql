-- Counters that never go down, for Prometheus (`_total` metrics, docs/admin.md "Metrics").
-- Runs inside a PL/pgSQL block (src/store/migrate.ts): plain DDL only, no dollar quotes.

-- 1. Outcomes by kind since the outbox began, less what delivery_counts still holds: purge
-- folds each minute it deletes from delivery_counts into this table, in the same statement, so
-- totals plus the minutes left add up to the same numbers before and after a purge. The settle
-- never writes here (it writes its minute of delivery_counts, as before), so the hot path costs
-- what it did. One row per kind.
CREATE TABLE {{schema}}.outcome_totals (
  kind text PRIMARY KEY,
  delivered bigint NOT NULL DEFAULT 0 CHECK (delivered >= 0),
  -- Attempts that failed: retried or set aside as dead.
  failed bigint NOT NULL DEFAULT 0 CHECK (failed >= 0),
  dead bigint NOT NULL DEFAULT 0 CHECK (dead >= 0)
);

-- 2. Drain runs, as a histogram of their durations and a count of their failures by code. Each
-- drain that records its run (every drain `createDrainer` builds, but a kick's) adds itself
-- here in one statement at its end. One row per bucket and error code, so the table stays a few
-- dozen rows and purge leaves it alone.
CREATE TABLE {{schema}}.drain_runs (
  -- The bucket's upper bound in ms (the run took at most this long, and more than the bucket
  -- below); 'Infinity' past the largest bound.
  le_ms double precision NOT NULL,
  -- The failure's code (a SQLSTATE, a network code, an OUTBOX_ code), '' for a run that ended
  -- without one.
  error_code text NOT NULL,
  runs bigint NOT NULL CHECK (runs >= 0),
  duration_ms double precision NOT NULL CHECK (duration_ms >= 0),
  -- When the latest of these runs ended, on its drain's clock.
  last_ended_at timestamptz NOT NULL,
  PRIMARY KEY (le_ms, error_code),
  CONSTRAINT drain_runs_error_code_format CHECK (error_code ~ '^[A-Za-z0-9_.-]{0,64}$')
);
