-- Organisations, apps and their keys (the spec, App, API key formats, Authentication).
CREATE TABLE orgs (
  id          uuid PRIMARY KEY,
  plan        text NOT NULL CHECK (plan IN ('free', 'pro')),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE apps (
  id               uuid PRIMARY KEY,
  org_id           uuid NOT NULL REFERENCES orgs (id),
  nome             text NOT NULL CHECK (nome <> ''),
  rate_por_min     integer NOT NULL CHECK (rate_por_min > 0),
  sandbox          boolean NOT NULL DEFAULT false,
  paused           boolean NOT NULL DEFAULT false,
  -- AES-256-GCM under PM_VAULT_KEY (src/vault.ts); the plain key is shown once at creation.
  receipt_key_enc  bytea NOT NULL,
  inapp_ativo      boolean NOT NULL DEFAULT false,
  inapp_cap_horas  integer NOT NULL DEFAULT 6 CHECK (inapp_cap_horas BETWEEN 0 AND 168),
  -- The five public provider parameters (the spec, App, firebase_params); null until configured.
  firebase_params  jsonb,
  criado_em        timestamptz NOT NULL
);
CREATE INDEX apps_org_idx ON apps (org_id);

-- Only sha256 of a key is kept. `kid` is the lookup index and not secret.
CREATE TABLE app_keys (
  kid         text PRIMARY KEY CHECK (kid ~ '^[a-z0-9]{8}$'),
  app_id      uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  key_hash    bytea NOT NULL,
  sandbox     boolean NOT NULL,
  created_at  timestamptz NOT NULL,
  -- Set when a rotation replaces the key: valid until then (the spec, Authentication 7).
  expires_at  timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX app_keys_app_idx ON app_keys (app_id);
