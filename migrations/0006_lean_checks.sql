-- The rules of messages in one CHECK, the key lengths as domains, and history compressed with lz4
-- where the server has it (docs/benchmarks.md, "Checks, and history's compression").
-- Runs inside a PL/pgSQL block (src/store/migrate.ts): plain DDL and IF only, no dollar quotes.
-- Takes an ACCESS EXCLUSIVE lock on messages while it runs: two columns are re-typed in place
-- (their two indexes are built again) and the new checks read every row once; the table itself
-- is not rewritten. It holds only undelivered rows, so this is short: 0.55 s for 200,000 here.
--
-- Why: PostgreSQL evaluates every CHECK of a table on every row version a claim or settle writes,
-- and reads each one's expression from its stored text again for every statement that writes.
-- The ten CHECKs cost a claim about 8,200 instructions per row claimed (callgrind, batch 100).
-- One CHECK for the state machine and the attempts costs about 5,000, with the key lengths
-- checked as domains only where keys are written (enqueue), as the kind is since 0003.

-- 1. Ordering and dedupe keys as domains. Each column takes its domain while the domain has no
-- constraint yet (the same bytes: no rewrite of the table or its indexes; a domain with a
-- constraint makes ALTER COLUMN ... TYPE rewrite both), then the domain gets its check, which
-- reads the rows once.
CREATE DOMAIN {{schema}}.message_ordering_key AS text;
CREATE DOMAIN {{schema}}.message_dedupe_key AS text;

-- The view names both columns; it is made again below as 0005 left it.
DROP VIEW {{schema}}.all_messages;
ALTER TABLE {{schema}}.messages
  DROP CONSTRAINT messages_ordering_key_length,
  DROP CONSTRAINT messages_dedupe_key_length,
  ALTER COLUMN ordering_key TYPE {{schema}}.message_ordering_key,
  ALTER COLUMN dedupe_key TYPE {{schema}}.message_dedupe_key;
ALTER DOMAIN {{schema}}.message_ordering_key
  ADD CONSTRAINT message_ordering_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);
ALTER DOMAIN {{schema}}.message_dedupe_key
  ADD CONSTRAINT message_dedupe_key_length CHECK (length(VALUE) BETWEEN 1 AND 200);

-- 2. The state machine (docs/state-machine.md) and the attempt count in one CHECK, the same rules
-- the eight it replaces held: which columns each state sets, and attempts within the maximum.
ALTER TABLE {{schema}}.messages
  DROP CONSTRAINT messages_state_known,
  DROP CONSTRAINT messages_attempts_within_max,
  DROP CONSTRAINT messages_claimed_has_claim,
  DROP CONSTRAINT messages_unclaimed_has_no_claim,
  DROP CONSTRAINT messages_claimed_has_lease,
  DROP CONSTRAINT messages_delivered_has_time,
  DROP CONSTRAINT messages_delivered_was_attempted,
  DROP CONSTRAINT messages_dead_has_time,
  ADD CONSTRAINT messages_state_machine CHECK (
    attempts BETWEEN 0 AND max_attempts AND max_attempts BETWEEN 1 AND 1000
    AND CASE state
      -- A claim exists exactly while the row is claimed; only claimed rows are delivered, so
      -- claimed and delivered rows have had an attempt.
      WHEN 'pending' THEN claim_token IS NULL AND claimed_at IS NULL
        AND lease_expires_at IS NULL AND delivered_at IS NULL AND dead_at IS NULL
      WHEN 'claimed' THEN claim_token IS NOT NULL AND claimed_at IS NOT NULL
        AND lease_expires_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
        AND attempts > 0
      WHEN 'delivered' THEN claim_token IS NULL AND claimed_at IS NULL
        AND lease_expires_at IS NULL AND delivered_at IS NOT NULL AND dead_at IS NULL
        AND attempts > 0
      WHEN 'dead' THEN claim_token IS NULL AND claimed_at IS NULL
        AND lease_expires_at IS NULL AND delivered_at IS NULL AND dead_at IS NOT NULL
      ELSE false
    END);

CREATE VIEW {{schema}}.all_messages AS
  SELECT id, key, kind::text AS kind, payload, ordering_key::text AS ordering_key,
    dedupe_key::text AS dedupe_key, state, attempts, max_attempts, due_at, claim_token,
    claimed_at, lease_expires_at, last_error, created_at, delivered_at, dead_at
  FROM {{schema}}.messages
  UNION ALL
  SELECT id, key, kind, payload, ordering_key, NULL, 'delivered', attempts, max_attempts, due_at,
    NULL, NULL, NULL, last_error, created_at, delivered_at, NULL
  FROM {{schema}}.delivered_messages;

-- 3. History's message arrays compressed with lz4 where the server is built with it (Neon's are,
-- and most packaged PostgreSQL): on PostgreSQL 15, the settle of a group of 300 cost about 15,000
-- instructions per message less than with pglz, the server's default. Groups written before keep
-- pglz; both read the same. A server without lz4 keeps pglz.
IF EXISTS (
  SELECT FROM pg_settings
  WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)
) THEN
  ALTER TABLE {{schema}}.delivered_groups ALTER COLUMN messages SET COMPRESSION lz4;
END IF;
