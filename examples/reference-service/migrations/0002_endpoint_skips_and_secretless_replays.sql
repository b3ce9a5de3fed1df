-- Security review (issue 12): endpoints the outbox would refuse are skipped, not allowed to fail
-- the domain write they follow, and the skip is recorded here for the operator to see.
ALTER TABLE {{schema}}.webhook_endpoints
  ADD COLUMN skip_count integer NOT NULL DEFAULT 0,
  ADD COLUMN last_skipped_at timestamptz,
  ADD COLUMN last_skip_reason text;

-- Replays of a registration no longer carry the signing secret: scrub the ones stored before.
UPDATE {{schema}}.idempotency_keys
SET response = jsonb_set(
  response,
  '{secret}',
  'null'::jsonb
) || '{"secretNote": "the signing secret is returned only in the first response to this request"}'::jsonb
WHERE route = '/webhook-endpoints' AND response ? 'secret';
