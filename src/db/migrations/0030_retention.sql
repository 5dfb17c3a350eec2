-- pombo:no-transaction
-- Lifetimes of the rest (issue 32.1; docs/operations.md#retention): every deletion the retention job makes
-- (src/service/retention.ts) walks an index, a bounded batch per statement, oldest first.
-- An export may include dead devices when asked (`incluir_invalidos=true`, kept as include_dead); the flag travels with the build, so an
-- instance taking over a build (src/devices/export.ts recover()) writes the same file.
ALTER TABLE exports ADD COLUMN IF NOT EXISTS include_dead boolean NOT NULL DEFAULT false;
-- A run that failed half-way may have left an index invalid: each is built again from the start.
-- Dead devices (their token declared dead, or replaced): removed PM_DEAD_DEVICES_RETENTION_DAYS after their last
-- change; a dead device is changed by nothing but its death (a registration with the same token revives it).
DROP INDEX CONCURRENTLY IF EXISTS devices_dead_idx;
CREATE INDEX CONCURRENTLY devices_dead_idx ON devices (updated_at) WHERE invalid_identifier;
-- Completed sends (and their message) after PM_SENDS_RETENTION_DAYS.
DROP INDEX CONCURRENTLY IF EXISTS sends_completed_idx;
CREATE INDEX CONCURRENTLY sends_completed_idx ON sends (completed_at) WHERE completed_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS inapp_served_at_idx;
CREATE INDEX CONCURRENTLY inapp_served_at_idx ON inapp_served (served_at);
DROP INDEX CONCURRENTLY IF EXISTS inapp_reactivations_at_idx;
CREATE INDEX CONCURRENTLY inapp_reactivations_at_idx ON inapp_reactivations (reactivated_at);
DROP INDEX CONCURRENTLY IF EXISTS webhook_abandoned_at_idx;
CREATE INDEX CONCURRENTLY webhook_abandoned_at_idx ON webhook_abandoned (abandoned_at);
DROP INDEX CONCURRENTLY IF EXISTS dashboard_invites_expires_idx;
CREATE INDEX CONCURRENTLY dashboard_invites_expires_idx ON dashboard_invites (expires_at);
