-- The people of the dashboard (docs/dashboard.md): sessions also end after PM_DASHBOARD_IDLE_MIN without use,
-- besides their absolute expiry. `last_seen_at` is a session's last use, written at most once a minute; sessions
-- open when this runs count as used now.
ALTER TABLE dashboard_sessions ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE dashboard_sessions ALTER COLUMN last_seen_at DROP DEFAULT;
-- Ending every session of a person (sign out everywhere, removal) finds them by person.
CREATE INDEX dashboard_sessions_user_idx ON dashboard_sessions (user_id);

-- Invitations are listed and cancelled by an id of their own (the token's digest is never shown).
ALTER TABLE dashboard_invites ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX dashboard_invites_id_idx ON dashboard_invites (id);
CREATE INDEX dashboard_invites_org_idx ON dashboard_invites (org_id, created_at DESC);
