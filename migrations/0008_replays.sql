-- The audit of replays (docs/replay.md): one row per replay or dry run that matched anything,
-- who ran it, the selection as JSON, how many matched and how many were replayed, and how it
-- ended. Runs inside a PL/pgSQL block (src/store/migrate.ts): plain DDL only, no dollar quotes.
-- A new table only: no lock on messages or history. The audit list reads it newest first by id
-- (ids are taken in start order), on the primary key.

CREATE TABLE {{schema}}.replays (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- Who asked: the CLI's --by or OS user, or the admin's identity (see docs/replay.md).
  requested_by text NOT NULL,
  started_at timestamptz NOT NULL,
  -- Null while running; a row left null with nothing running was interrupted (its process died).
  finished_at timestamptz,
  -- The selection as the store took it, so the row says exactly what was replayed.
  selection jsonb NOT NULL,
  dry_run boolean NOT NULL,
  -- The exact count of the selection when the replay started.
  matched bigint NOT NULL,
  -- Raised by each batch's own statement, so it is exact even when the process dies mid-run.
  replayed bigint NOT NULL DEFAULT 0,
  outcome text NOT NULL,
  CONSTRAINT replays_outcome_known
    CHECK (outcome IN ('running', 'finished', 'stopped', 'failed')),
  CONSTRAINT replays_finished_has_time CHECK ((outcome = 'running') = (finished_at IS NULL)),
  CONSTRAINT replays_counts CHECK (matched > 0 AND replayed >= 0 AND (NOT dry_run OR replayed = 0)),
  CONSTRAINT replays_requested_by_length CHECK (length(requested_by) BETWEEN 1 AND 200)
);
