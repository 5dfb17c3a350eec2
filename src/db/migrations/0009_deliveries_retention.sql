-- pombo:no-transaction
-- A send's delivery rows exist to count each device once while the send is open; once it is completed nothing
-- reads them. The retention job (src/delivery/retention.ts) deletes a completed send's rows after
-- PM_DELIVERIES_RETENTION_DAYS and stamps the send, so the table holds the open sends and the recent past rather
-- than every device of every send ever (a 200,000-device send is ~40 MB of rows at fillfactor 50).
ALTER TABLE sends ADD COLUMN IF NOT EXISTS deliveries_pruned_at timestamptz;
-- A run that failed half-way may have left the index invalid: built again from the start.
DROP INDEX CONCURRENTLY IF EXISTS sends_deliveries_to_prune_idx;
CREATE INDEX CONCURRENTLY sends_deliveries_to_prune_idx ON sends (completed_at)
  WHERE completed_at IS NOT NULL AND deliveries_pruned_at IS NULL;
