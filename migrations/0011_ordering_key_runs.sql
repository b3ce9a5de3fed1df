-- Ordering keys at backlog scale (docs/benchmarks.md, section 11). Runs inside a PL/pgSQL block
-- (src/store/migrate.ts): plain DDL only, no dollar quotes. Builds one index over the messages
-- not yet finished; enqueue and settle wait for it.

-- The due claim now takes keyed rows by walking messages_ordering_unfinished (one visit per key,
-- at its head), and unkeyed rows in due order from here. In messages_claimable the unkeyed rows
-- sit among the keyed backlog, so a scan of it for them would step over every held-back row
-- again. The claim's UPDATE changes no column of this index or its predicate, so claims stay HOT.
-- messages_claimable stays for the readers that want every row in due order (the kick's claim
-- by key, probes, parking, the operators' pending list).
CREATE INDEX messages_claimable_unkeyed ON {{schema}}.messages (due_at, id)
  WHERE ordering_key IS NULL AND delivered_at IS NULL AND dead_at IS NULL;
