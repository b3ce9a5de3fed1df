-- The drain's hot path (docs/benchmarks.md, scenario 1): delivered rows leave the hot table at
-- settle, claims can be HOT updates, and the kind check runs only where kind is written.
-- Runs inside a PL/pgSQL block (src/store/migrate.ts): plain DDL only, no dollar quotes.
-- Takes an ACCESS EXCLUSIVE lock on messages while it runs (the kind column is re-typed).

-- 1. Delivered history: append-only, narrow (no claim, lease or dead columns), read by the
-- admin's lists, get, getByKey and stats, and emptied by purge. A delivered message moves here
-- in the settle statement itself. Messages with a dedupe key stay in messages as 'delivered'
-- instead, so the unique index there keeps their dedupe promise until purge, as before.
CREATE TABLE {{schema}}.delivered_messages (
  id bigint PRIMARY KEY,
  key uuid NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  ordering_key text,
  attempts integer NOT NULL,
  max_attempts integer NOT NULL,
  due_at timestamptz NOT NULL,
  last_error text,
  created_at timestamptz NOT NULL,
  delivered_at timestamptz NOT NULL
);
-- getByKey: operators arrive with the key from a receiver's log.
CREATE UNIQUE INDEX delivered_messages_key_unique ON {{schema}}.delivered_messages (key);
-- The delivered list (newest first) and purge (oldest first).
CREATE INDEX delivered_messages_delivered_at
  ON {{schema}}.delivered_messages (delivered_at, id);

INSERT INTO {{schema}}.delivered_messages
  (id, key, kind, payload, ordering_key, attempts, max_attempts, due_at, last_error,
   created_at, delivered_at)
SELECT id, key, kind, payload, ordering_key, attempts, max_attempts, due_at, last_error,
  created_at, delivered_at
FROM {{schema}}.messages
WHERE state = 'delivered' AND dedupe_key IS NULL;

DELETE FROM {{schema}}.messages WHERE state = 'delivered' AND dedupe_key IS NULL;

-- 2. The lease gets a column of its own, outside every index. Until now a claim moved due_at
-- (an index key) to the lease expiry and changed state (in partial-index predicates), so no
-- claim could be a HOT update: each wrote a new entry in every index. Now a claim changes only
-- state, attempts, claim_token, claimed_at and lease_expires_at, none of them in any index or
-- predicate, and due_at keeps the message's due time.
ALTER TABLE {{schema}}.messages ADD COLUMN lease_expires_at timestamptz;
UPDATE {{schema}}.messages SET lease_expires_at = due_at WHERE state = 'claimed';
ALTER TABLE {{schema}}.messages ADD CONSTRAINT messages_claimed_has_lease
  CHECK ((state = 'claimed') = (lease_expires_at IS NOT NULL));

-- Partial indexes now name the time columns, not state (equivalent under the CHECKs
-- messages_delivered_has_time and messages_dead_has_time), so state is in no predicate.
DROP INDEX {{schema}}.messages_claimable;
CREATE INDEX messages_claimable ON {{schema}}.messages (due_at, id)
  WHERE delivered_at IS NULL AND dead_at IS NULL;

DROP INDEX {{schema}}.messages_ordering_unfinished;
CREATE INDEX messages_ordering_unfinished ON {{schema}}.messages (ordering_key, id)
  WHERE ordering_key IS NOT NULL AND delivered_at IS NULL;

DROP INDEX {{schema}}.messages_delivered_at;
CREATE INDEX messages_delivered_at ON {{schema}}.messages (delivered_at, id)
  WHERE delivered_at IS NOT NULL;

DROP INDEX {{schema}}.messages_dead_at;
CREATE INDEX messages_dead_at ON {{schema}}.messages (dead_at, id)
  WHERE dead_at IS NOT NULL;

-- Room on each page for a claim's new row version, so the claim stays on the page (HOT). A
-- claim updates a whole batch at once, so each row on a page needs room for one more version
-- of itself. Measured on a no-op drain of 5,000 (batch 100): fillfactor 100 made 8% of claims
-- HOT (1,145 B of WAL per message), 70 made 47% (977 B), 50 made 96% (752 B). Applies to pages
-- written from now on; the hot table holds only undelivered rows, so the cost is small.
ALTER TABLE {{schema}}.messages SET (fillfactor = 50);

-- 3. The kind format as a domain: checked when a kind is written (enqueue), not on every row
-- version a claim or settle makes, as a table CHECK is. The regex was the costliest check.
CREATE DOMAIN {{schema}}.message_kind AS text
  CONSTRAINT message_kind_format CHECK (VALUE ~ '^[a-z][a-z0-9_.:-]{0,62}$');
ALTER TABLE {{schema}}.messages DROP CONSTRAINT messages_kind_format;
ALTER TABLE {{schema}}.messages ALTER COLUMN kind TYPE {{schema}}.message_kind;

-- 4. Every message, live or delivered, in one place for operators in psql (and tests): the
-- rows of messages and of delivered history, in the shape of messages. Reads only.
CREATE VIEW {{schema}}.all_messages AS
  SELECT id, key, kind::text AS kind, payload, ordering_key, dedupe_key, state, attempts,
    max_attempts, due_at, claim_token, claimed_at, lease_expires_at, last_error, created_at,
    delivered_at, dead_at
  FROM {{schema}}.messages
  UNION ALL
  SELECT id, key, kind, payload, ordering_key, NULL, 'delivered', attempts, max_attempts, due_at,
    NULL, NULL, NULL, last_error, created_at, delivered_at, NULL
  FROM {{schema}}.delivered_messages;
