-- Per-minute outcome counters for metrics and the dashboard chart. Written by the settle
-- statement itself (one statement still settles a whole batch), so the counts are exact and
-- cost no extra round trip. Retries leave no other trace: without this, "failures in the last
-- hour" could not be answered. One row per minute and kind; purge trims old minutes.

CREATE TABLE {{schema}}.delivery_counts (
  minute timestamptz NOT NULL,
  kind text NOT NULL,
  delivered integer NOT NULL DEFAULT 0 CHECK (delivered >= 0),
  -- Attempts that failed: retried or set aside as dead.
  failed integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
  dead integer NOT NULL DEFAULT 0 CHECK (dead >= 0),
  PRIMARY KEY (minute, kind),
  CONSTRAINT delivery_counts_whole_minute CHECK (minute = date_trunc('minute', minute))
);
