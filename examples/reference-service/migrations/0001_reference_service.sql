-- The reference service's own tables: a small but real domain whose writes carry side effects.
-- {{schema}} is the app schema (default "app"). Runs inside a PL/pgSQL block: plain DDL only.

CREATE TABLE {{schema}}.users (
  id uuid PRIMARY KEY,
  email text NOT NULL,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT users_email_lowercase CHECK (email = lower(email))
);
CREATE UNIQUE INDEX users_email_unique ON {{schema}}.users (email);

CREATE TABLE {{schema}}.orders (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{schema}}.users (id),
  total_cents bigint NOT NULL CHECK (total_cents >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_user ON {{schema}}.orders (user_id);

CREATE TABLE {{schema}}.order_items (
  order_id uuid NOT NULL REFERENCES {{schema}}.orders (id),
  position integer NOT NULL,
  sku text NOT NULL,
  qty integer NOT NULL CHECK (qty > 0),
  unit_price_cents bigint NOT NULL CHECK (unit_price_cents >= 0),
  PRIMARY KEY (order_id, position)
);

-- Subscribers to domain events. The secret signs every delivery (Standard Webhooks); it is
-- shown once at creation and read by the webhook sender by endpoint id, never put in payloads.
CREATE TABLE {{schema}}.webhook_endpoints (
  id uuid PRIMARY KEY,
  url text NOT NULL,
  events text[] NOT NULL CHECK (cardinality(events) > 0),
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);
-- "Who subscribes to order.created?" on every order.
CREATE INDEX webhook_endpoints_events ON {{schema}}.webhook_endpoints USING gin (events)
  WHERE disabled_at IS NULL;

-- Idempotency-Key: a replay returns the stored response and writes nothing.
CREATE TABLE {{schema}}.idempotency_keys (
  key text NOT NULL,
  route text NOT NULL,
  request_hash text NOT NULL,
  status integer NOT NULL,
  response jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (route, key)
);
CREATE INDEX idempotency_keys_expiry ON {{schema}}.idempotency_keys (expires_at);
