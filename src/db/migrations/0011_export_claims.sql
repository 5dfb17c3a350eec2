-- pombo:no-transaction
-- An export's build belongs to the instance that queued it, which refreshes `claimed_at` while the build waits or
-- runs. A build whose claim went stale (its instance died or was stopped first) is taken over by another instance
-- (src/devices/export.ts recover()), so a URL already handed out becomes ready instead of answering 404 until it
-- expires.
ALTER TABLE exports ADD COLUMN IF NOT EXISTS claimed_at timestamptz;
DROP INDEX CONCURRENTLY IF EXISTS exports_building_idx;
CREATE INDEX CONCURRENTLY exports_building_idx ON exports (created_at) WHERE status = 'building';
