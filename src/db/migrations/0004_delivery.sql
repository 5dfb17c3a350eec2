-- Delivery credentials (the spec, Delivery credentials) and the events outbox (the spec, Events).

-- One credential per app and platform, sealed with the vault (src/vault.ts, AAD `credential:<app>:<platform>`);
-- `meta` holds only what is not secret (project id, client email, key id, team id, bundle id, environment).
CREATE TABLE credentials (
  app_id      uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  platform    text NOT NULL CHECK (platform IN ('fcm', 'apns')),
  sealed      bytea NOT NULL,
  meta        jsonb NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (app_id, platform)
);

-- Events are written in the same transaction as the fact they report (the spec, Events); the webhook dispatcher drains
-- them per destination. `seq` orders an app's events.
CREATE TABLE events (
  seq         bigserial PRIMARY KEY,
  app_id      uuid NOT NULL,
  evento      text NOT NULL CHECK (evento IN ('delivery.received', 'delivery.clicked', 'notification.completed')),
  body        jsonb NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX events_app_idx ON events (app_id, seq);

-- Why a send's deliveries stopped short (credential missing or refused, environment mismatch): shown to the caller.
ALTER TABLE sends ADD COLUMN problem text;
-- Segment expansion: the last device id already paged out of the segment (bounded memory for any size), and
-- whether the whole segment has been paged out (until then `recipients` is the send-time estimate and the send
-- cannot close). List sends know their audience from the start.
ALTER TABLE sends ADD COLUMN expanded_until uuid;
ALTER TABLE sends ADD COLUMN expansion_done boolean;
UPDATE sends SET expansion_done = recipients_exact;
ALTER TABLE sends ALTER COLUMN expansion_done SET NOT NULL;
