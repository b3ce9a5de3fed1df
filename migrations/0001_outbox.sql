-- The outbox table. {{schema}} is replaced by the configured schema, validated and quoted.
-- This file runs inside a PL/pgSQL block (see src/store/migrate.ts), so plain DDL only, and no
-- dollar-quoted strings.
--
-- States (docs/state-machine.md):
--   pending   -> claimed     a drain claimed it (attempts counted here)
--   claimed   -> delivered   the sender succeeded
--   claimed   -> pending     retryable failure (due again after backoff), or released unsent
--   claimed   -> dead        permanent failure, or attempts exhausted
--   claimed   -> claimed     the lease expired and another drain claimed it again
--   dead      -> pending     an operator retried it

CREATE TABLE {{schema}}.messages (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The stable ID receivers deduplicate on; it travels with every send of this message.
  key uuid NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  -- Same ordering key = delivered one at a time, in id (enqueue) order.
  ordering_key text,
  -- Enqueueing twice with one dedupe key yields one row.
  dedupe_key text,
  state text NOT NULL DEFAULT 'pending',
  -- Counted when a drain claims the row, so a message that crashes every drain still runs out.
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 10,
  -- When the row may next be claimed. While pending: its due time (backoff included). While
  -- claimed: the lease expiry, after which another drain may claim it again. One column for both
  -- lets one partial index answer "what can I claim now", including rows whose drain died.
  due_at timestamptz NOT NULL DEFAULT now(),
  -- Set at claim; every later write must present it, so a drain whose lease expired and whose
  -- row was re-claimed cannot overwrite the new owner's outcome.
  claim_token uuid,
  claimed_at timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz,
  dead_at timestamptz,

  CONSTRAINT messages_state_known
    CHECK (state IN ('pending', 'claimed', 'delivered', 'dead')),
  CONSTRAINT messages_kind_format
    CHECK (kind ~ '^[a-z][a-z0-9_.:-]{0,62}$'),
  CONSTRAINT messages_ordering_key_length
    CHECK (ordering_key IS NULL OR length(ordering_key) BETWEEN 1 AND 200),
  CONSTRAINT messages_dedupe_key_length
    CHECK (dedupe_key IS NULL OR length(dedupe_key) BETWEEN 1 AND 200),
  CONSTRAINT messages_attempts_within_max
    CHECK (attempts >= 0 AND max_attempts BETWEEN 1 AND 1000 AND attempts <= max_attempts),
  -- A claim exists exactly while the row is claimed.
  CONSTRAINT messages_claimed_has_claim
    CHECK ((state = 'claimed') = (claim_token IS NOT NULL AND claimed_at IS NOT NULL)),
  CONSTRAINT messages_unclaimed_has_no_claim
    CHECK (state = 'claimed' OR (claim_token IS NULL AND claimed_at IS NULL)),
  -- Only claimed rows can be delivered, so delivery implies an attempt.
  CONSTRAINT messages_delivered_has_time
    CHECK ((state = 'delivered') = (delivered_at IS NOT NULL)),
  CONSTRAINT messages_delivered_was_attempted
    CHECK (state NOT IN ('claimed', 'delivered') OR attempts >= 1),
  CONSTRAINT messages_dead_has_time
    CHECK ((state = 'dead') = (dead_at IS NOT NULL))
);

CREATE UNIQUE INDEX messages_key_unique ON {{schema}}.messages (key);

-- Dedupe applies among rows still in the table; purge frees the key.
CREATE UNIQUE INDEX messages_dedupe_key_unique ON {{schema}}.messages (dedupe_key)
  WHERE dedupe_key IS NOT NULL;

-- The claim scans this in due order. Partial, so delivered and dead rows (most of the table over
-- time) add nothing to it and the claim stays cheap however much history is kept.
CREATE INDEX messages_claimable ON {{schema}}.messages (due_at, id)
  WHERE state IN ('pending', 'claimed');

-- "Is there an earlier unfinished message with my ordering key?" for the ordering head check.
-- Delivered rows are excluded: they never block anything.
CREATE INDEX messages_ordering_unfinished ON {{schema}}.messages (ordering_key, id)
  WHERE ordering_key IS NOT NULL AND state <> 'delivered';

-- Purge, recent-delivery metrics and the delivered list walk these in time order.
CREATE INDEX messages_delivered_at ON {{schema}}.messages (delivered_at, id)
  WHERE state = 'delivered';

CREATE INDEX messages_dead_at ON {{schema}}.messages (dead_at, id)
  WHERE state = 'dead';
