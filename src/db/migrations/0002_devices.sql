-- Devices (the spec, Device (player), Device validity) and CSV exports (the spec, Export).
-- Registration is an upsert keyed by (app_id, identifier); the public id is `id` (player_id).
-- No foreign key to apps: every write path checks the app first (spec: app_id validated before any write), apps are
-- never deleted by a route, and a FK would take a KEY SHARE lock on the one app row for every inserted device, which
-- concurrent registration batches of a busy app would all contend on.
CREATE TABLE devices (
  app_id              uuid NOT NULL,
  id                  uuid NOT NULL,
  identifier          text NOT NULL,
  device_type         smallint NOT NULL CHECK (device_type IN (0, 1, 5, 7, 8)),
  -- `test:` tokens: registered, never in an audience, left out of the export.
  sandbox             boolean NOT NULL,
  transporte          text NOT NULL CHECK (transporte IN ('fcm', 'apns')),
  -- Identity/content fields: a POST that omits them erases them (the spec, Devices, registration rule).
  external_user_id    text,
  app_version         text,
  device_model        text,
  tags                jsonb,
  language            text,
  timezone            integer,
  -- Best-effort profile fields: an absent value never erases the stored one.
  device_os           text,
  fabricante          text,
  sdk_versao          text,
  timezone_id         text,
  pais                text,
  net_type            text,
  carrier             text,
  standby_bucket      text,
  instalacao_id       text,
  rooted              boolean,
  bateria_irrestrita  boolean,
  sessoes             integer,
  notif_permissoes    integer,
  -- Born 1 and stays 1 (no route writes 0 or -2); reachability is invalid_identifier = false.
  notification_types  integer NOT NULL DEFAULT 1,
  invalid_identifier  boolean NOT NULL DEFAULT false,
  -- Why the token died (provider answer, 'substituido' by a newer token of the same install); cleared on re-registration.
  invalid_reason      text,
  -- Real sign of life: registration/session or delivery receipt (the spec, Export).
  last_active         timestamptz NOT NULL,
  -- Last delivery receipt (Engaged Users); written by receipts.
  last_receipt_at     timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  PRIMARY KEY (app_id, id),
  UNIQUE (app_id, identifier)
);
-- Partial: most devices carry neither, and registrations at SDK scale should not pay for indexing NULLs.
CREATE INDEX devices_external_user_idx ON devices (app_id, external_user_id) WHERE external_user_id IS NOT NULL;
CREATE INDEX devices_instalacao_idx ON devices (app_id, instalacao_id) WHERE instalacao_id IS NOT NULL;

-- One row per export. The URL carries a random token; only its sha256 is stored and names the file, so neither a
-- database dump nor a directory listing yields a working URL.
CREATE TABLE exports (
  token_hash  text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  app_id      uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  status      text NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
  rows        bigint,
  bytes       bigint,
  created_at  timestamptz NOT NULL,
  ready_at    timestamptz,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX exports_expires_idx ON exports (expires_at);
