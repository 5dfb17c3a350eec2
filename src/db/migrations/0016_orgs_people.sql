-- Organisations with a name, and the people who sign in to the dashboard (docs/dashboard.md).
-- Every app already belongs to an organisation (one each until now); an organisation's plan and its
-- monthly-active-user allowance (org_mau) are shared by all its apps. Existing organisations take their app's name.
ALTER TABLE orgs ADD COLUMN nome text;
UPDATE orgs o SET nome = COALESCE((SELECT min(a.nome) FROM apps a WHERE a.org_id = o.id), 'Organização');
ALTER TABLE orgs ALTER COLUMN nome SET NOT NULL;
ALTER TABLE orgs ADD CONSTRAINT orgs_nome_check CHECK (nome <> '');
CREATE INDEX apps_org_criado_idx ON apps (org_id, criado_em DESC, id DESC);
CREATE INDEX apps_criado_idx ON apps (criado_em DESC, id DESC);

-- A person belongs to one organisation, or is an operator (sees every organisation). Passwords: scrypt.
CREATE TABLE dashboard_users (
  id          uuid PRIMARY KEY,
  email       text NOT NULL CHECK (email = lower(email) AND email <> ''),
  org_id      uuid REFERENCES orgs (id) ON DELETE CASCADE,
  operador    boolean NOT NULL DEFAULT false,
  senha_hash  text NOT NULL,
  created_at  timestamptz NOT NULL,
  CHECK (operador OR org_id IS NOT NULL)
);
CREATE UNIQUE INDEX dashboard_users_email_idx ON dashboard_users (email);

-- Sign-in sessions: only a digest of the cookie's random id is kept; `csrf` is the session's synchroniser token.
CREATE TABLE dashboard_sessions (
  id_hash     bytea PRIMARY KEY,
  user_id     uuid NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
  csrf        text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);

-- One-time sign-up links (`pombo user invite`): a digest of the token, used once, valid 72 h.
CREATE TABLE dashboard_invites (
  token_hash  bytea PRIMARY KEY,
  email       text NOT NULL,
  org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
