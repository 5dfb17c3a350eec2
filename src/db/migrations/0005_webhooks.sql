-- Webhook destinations, their delivery cursor over `events`, attempts and abandoned events (the spec, Events,
-- Webhook destination). Written by src/confirmations/.

-- `xid` lets the dispatcher read only events whose writing transaction can no longer be overtaken: a transaction
-- still open may hold a lower `seq` than an event already committed, and a cursor that passed it would skip it.
-- The writers do not name the column: the default records their own transaction.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();

-- One active destination per app (registering a new URL deactivates the previous one). `last_seq` is the cursor:
-- every event of the app with a higher seq is still to be attempted, in seq order. `head_attempts` counts the
-- failed attempts of the event right after the cursor; `next_at` is when it may be attempted again.
-- `disabled_at`: 20 consecutive failed deliveries (events wait); `pombo webhook enable` clears it.
CREATE TABLE webhook_destinations (
  id                    uuid PRIMARY KEY,
  app_id                uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  url                   text NOT NULL,
  -- The secret (pm_whsec_…) sealed with the vault, AAD `webhook:<app_id>:<id>`.
  sealed_secret         bytea NOT NULL,
  active                boolean NOT NULL DEFAULT true,
  disabled_at           timestamptz,
  consecutive_failures  int NOT NULL DEFAULT 0,
  last_seq              bigint NOT NULL,
  head_attempts         int NOT NULL DEFAULT 0,
  next_at               timestamptz NOT NULL,
  created_at            timestamptz NOT NULL,
  deactivated_at        timestamptz
);
CREATE UNIQUE INDEX webhook_destinations_active_idx ON webhook_destinations (app_id) WHERE active;
CREATE INDEX webhook_destinations_due_idx ON webhook_destinations (next_at) WHERE active AND disabled_at IS NULL;

-- Failed attempts, and the attempt that finally succeeded for an event that had failed before (a first-try
-- success leaves no row: the cursor moving past the event is its record).
CREATE TABLE webhook_attempts (
  id              bigserial PRIMARY KEY,
  destination_id  uuid NOT NULL REFERENCES webhook_destinations (id) ON DELETE CASCADE,
  event_seq       bigint NOT NULL,
  n               int NOT NULL,
  entrega_id      uuid NOT NULL,
  -- ok | http | timeout | refused (address not allowed) | network
  result          text NOT NULL,
  http_status     int,
  reason          text,
  at              timestamptz NOT NULL,
  next_at         timestamptz
);
CREATE INDEX webhook_attempts_dest_idx ON webhook_attempts (destination_id, event_seq, n);

-- Events given up after the last attempt: kept with their body, never silently dropped.
CREATE TABLE webhook_abandoned (
  destination_id  uuid NOT NULL REFERENCES webhook_destinations (id) ON DELETE CASCADE,
  event_seq       bigint NOT NULL,
  app_id          uuid NOT NULL,
  evento          text NOT NULL,
  body            jsonb NOT NULL,
  attempts        int NOT NULL,
  last_reason     text,
  abandoned_at    timestamptz NOT NULL,
  PRIMARY KEY (destination_id, event_seq)
);
