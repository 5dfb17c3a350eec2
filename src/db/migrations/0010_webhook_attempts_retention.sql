-- pombo:no-transaction
-- Failed webhook attempts are an audit trail, read by nothing on the hot path; the retention job
-- (src/confirmations/retention.ts) deletes those older than PM_WEBHOOK_ATTEMPTS_RETENTION_DAYS, oldest first.
-- Abandoned events (webhook_abandoned) are kept: they hold the only copy of an event that never arrived.
DROP INDEX CONCURRENTLY IF EXISTS webhook_attempts_at_idx;
CREATE INDEX CONCURRENTLY webhook_attempts_at_idx ON webhook_attempts (at);
