-- Sends, their delivery lists and idempotency records (the spec, Sends, Notification read shape).

-- How the app's results are read (the spec, Confirmation channel): the send-read routes answer 403 outside `consulta`.
ALTER TABLE apps ADD COLUMN confirm_modo text NOT NULL DEFAULT 'consulta' CHECK (confirm_modo IN ('consulta', 'webhook', 'grpc'));

CREATE TABLE sends (
  app_id              uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  id                  uuid NOT NULL,
  lane                smallint NOT NULL CHECK (lane IN (0, 1)),
  target_kind         text NOT NULL CHECK (target_kind IN ('players', 'users', 'segments')),
  included_segments   jsonb NOT NULL DEFAULT '[]',
  -- The request's lists, as sent (read shape); null for the other target kinds.
  include_player_ids        jsonb,
  include_external_user_ids jsonb,
  -- isIos / isAndroid / isAnyWeb after the exclusion logic: which platforms the audience covers.
  platforms           jsonb NOT NULL,
  -- List targets: the devices that were reachable when the send was accepted (its delivery list, written once, as
  -- one value). Null for segments, which the delivery engine expands in pages.
  audience            uuid[],
  -- The validated message the delivery engine renders (src/sends/payload.ts).
  message             jsonb NOT NULL,
  name                text,
  headings            jsonb,
  contents            jsonb NOT NULL,
  external_id         text,
  recipients          integer NOT NULL,
  -- false for segments: the worker expands them and corrects `recipients`.
  recipients_exact    boolean NOT NULL,
  successful          integer NOT NULL DEFAULT 0,
  failed              integer NOT NULL DEFAULT 0,
  errored             integer NOT NULL DEFAULT 0,
  remaining           integer NOT NULL,
  converted           integer NOT NULL DEFAULT 0,
  recebidos           integer NOT NULL DEFAULT 0,
  android_successful  integer NOT NULL DEFAULT 0,
  android_failed      integer NOT NULL DEFAULT 0,
  ios_successful      integer NOT NULL DEFAULT 0,
  ios_failed          integer NOT NULL DEFAULT 0,
  ttl_s               integer NOT NULL,
  queued_at           timestamptz NOT NULL,
  send_after          timestamptz,
  -- A worker's last sign of life on this send (set when it takes the send, refreshed while it works on it); the
  -- sweeper re-enqueues due, unfinished sends that no worker has touched for a grace period (Redis may lose data).
  picked_at           timestamptz,
  -- When the sweeper last put the send on its work stream (the API's own hand-off is not recorded: queued_at).
  enqueued_at         timestamptz,
  completed_at        timestamptz,
  PRIMARY KEY (app_id, id)
);
CREATE INDEX sends_app_queued_idx ON sends (app_id, queued_at DESC, id DESC);
-- The sweeper's scan: unfinished sends.
CREATE INDEX sends_open_idx ON sends ((COALESCE(send_after, queued_at))) WHERE completed_at IS NULL;

-- One row per (send, device) the delivery engine has attempted: written with the outcome (batched), so a device
-- costs one write in its send's life. status: 0 in flight/retrying, 1 successful, 2 failed (dead token),
-- 3 errored (attempts exhausted).
CREATE TABLE deliveries (
  send_id     uuid NOT NULL,
  device_id   uuid NOT NULL,
  app_id      uuid NOT NULL,
  device_type smallint NOT NULL,
  status      smallint NOT NULL DEFAULT 0,
  attempts    smallint NOT NULL DEFAULT 0,
  updated_at  timestamptz,
  PRIMARY KEY (send_id, device_id)
);

-- the spec, Sends idempotency: the first answer, byte for byte, for 30 days.
CREATE TABLE idempotency (
  app_id      uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  key         text NOT NULL,
  body_hash   text NOT NULL,
  status      smallint NOT NULL,
  lane        smallint NOT NULL,
  exact       boolean NOT NULL,
  response    text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (app_id, key)
);
CREATE INDEX idempotency_expires_idx ON idempotency (expires_at);

-- Monthly active users per organisation, measured periodically (the spec, Limits, free plan).
CREATE TABLE org_mau (
  org_id       uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
  month        text NOT NULL,
  mau          integer NOT NULL,
  measured_at  timestamptz NOT NULL
);
