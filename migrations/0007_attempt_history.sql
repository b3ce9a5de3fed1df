-- Attempt history (docs/state-machine.md, "Attempt history"). Runs inside a PL/pgSQL block
-- (src/store/migrate.ts): plain DDL only, no dollar quotes. Changes no row and rewrites no table:
-- a column with no default and three attributes of a composite type are catalog changes only,
-- so this takes its locks for a moment and existing rows, live and delivered, read as before.
--
-- 1. The failed attempts of a message, oldest first: a JSON array that the settle recording a
-- retry or a dead letter appends one object to, in the same statement (no extra round trip). A
-- message that never failed keeps it null, so the happy path writes nothing more here. It lives
-- on the row, so it goes wherever the message goes: into delivered history with its delivery,
-- and out with a purge or a discard. Each object: attempt (its number), at (when it started),
-- ms (how long it took), outcome (retry or dead), and where known status (HTTP), code (the
-- provider's error code), destination (scheme, host and path; SES: its region or endpoint) and
-- error (at most 1 KiB). The settle keeps the newest 100 (MAX_RECORDED_ATTEMPTS): a message
-- allowed more attempts than that still shows its attempt numbers, and a history group stays
-- far below PostgreSQL's 1 GB limit for one value.
ALTER TABLE {{schema}}.messages ADD COLUMN attempt_log jsonb;

-- 2. History keeps the failures and, for the delivery, its HTTP status (or null) and its
-- duration in ms: two small numbers per message in the group's compressed array. Groups
-- written before read these as null (a composite value with fewer attributes than its type
-- reads the missing ones as null), and their messages show a delivery with no status.
ALTER TYPE {{schema}}.delivered_message
  ADD ATTRIBUTE attempt_log jsonb,
  ADD ATTRIBUTE delivery_status integer,
  ADD ATTRIBUTE delivery_ms integer;
