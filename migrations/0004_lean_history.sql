-- Cheaper delivered history and table upkeep (docs/benchmarks.md, "The hot path, measured" and
-- scenario 7). Runs inside a PL/pgSQL block (src/store/migrate.ts): plain DDL only, no dollar
-- quotes. Holds an ACCESS EXCLUSIVE lock on delivered_messages (its primary key and key index
-- are dropped) while it builds two indexes there, one pass over history each: settles that
-- deliver wait until it commits. messages and delivery_counts only get storage parameters.

-- 1. History by id through a BRIN index instead of a primary key. Every settle appended one
-- entry to each of three btrees here, about 72 bytes of WAL each (pg_walinspect over a 5,000
-- message drain); a BRIN index writes nothing for rows appended to pages it has not summarized
-- yet, and one small summary tuple per range of pages after. History is appended in settle
-- order, which follows id closely (a message enqueued earlier is due and delivered earlier), so
-- a range of pages covers a narrow band of ids; minmax-multi keeps a late retry's id as its own
-- point instead of widening the whole range. A read by id (operators' get, discard) reads the
-- BRIN index, then the few ranges that may hold the id and any range not yet summarized
-- (autosummarize asks autovacuum to summarize each range once it fills). Measured in
-- docs/benchmarks.md. Ids stay unique without the constraint: each comes from messages' identity
-- and settle moves a message at most once (its DELETE ... RETURNING is the only source).
ALTER TABLE {{schema}}.delivered_messages DROP CONSTRAINT delivered_messages_pkey;
CREATE INDEX delivered_messages_id ON {{schema}}.delivered_messages
  USING brin (id int8_minmax_multi_ops) WITH (pages_per_range = 16, autosummarize = on);

-- 2. The key index no longer needs to be unique: keys are unique in messages, and a message
-- reaches history once. A plain btree skips the uniqueness probe on every insert.
DROP INDEX {{schema}}.delivered_messages_key_unique;
CREATE INDEX delivered_messages_key ON {{schema}}.delivered_messages (key);

-- 3. Autovacuum per table, so space that settle and purge free is reusable soon. At the default
-- scale factors (0.2) a table waits for a fifth of its rows to be dead before a vacuum, and
-- until then every enqueue and settle extends the files instead of refilling freed pages. All
-- three tables churn through their whole content: messages is a queue (each row is inserted,
-- claimed, deleted), history is appended at settle and emptied by purge, and delivery_counts
-- gets a new row version at every settle. 2% keeps the dead share small without vacuuming a
-- large history table over and over; the insert factor makes appended history all-visible and
-- summarizes its BRIN ranges (above) between purges. Autovacuum still only wakes once per
-- autovacuum_naptime (60 s by default): work faster than that is not helped (scenario 7).
ALTER TABLE {{schema}}.messages SET (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.02,
  autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE {{schema}}.delivered_messages SET (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.02);
ALTER TABLE {{schema}}.delivery_counts SET (autovacuum_vacuum_scale_factor = 0.02);
