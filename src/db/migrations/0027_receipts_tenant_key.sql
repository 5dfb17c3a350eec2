-- Distribution-ready keys (issue 32.5, docs/scaling.md) for the day-partitioned receipts: their key becomes
-- (app_id, day, send_id, device_id, kind). A distributed partitioned table's unique index must hold both its
-- distribution column (app_id) and its partition column (day).
-- Postgres builds a partitioned table's key on its partitions only under the table's lock (no CONCURRENTLY on a
-- partitioned table, and ADD CONSTRAINT ... USING INDEX is refused there): receipts waits for this statement, which
-- rebuilds the key of the days not yet archived (PM_RECEIPT_ARCHIVE_DAYS, the table's horizon). docs/scaling.md
-- gives its time per million rows on one machine; receipts arriving meanwhile wait in the group-commit writer's
-- queue (PM_RECEIPT_QUEUE_MAX), as during any short Postgres stall. Partitions created afterwards
-- (src/receipts/archive.ts) take the new key from the table.
SET LOCAL lock_timeout = '10s';
-- The key's name is read from the catalog: 0007 built the table beside the one it replaced, whose key held the name
-- receipts_pkey at the time (this one is receipts_pkey1 on a schema migrated from the start).
DO $$
DECLARE old text;
BEGIN
  SELECT conname INTO STRICT old FROM pg_constraint WHERE conrelid = 'receipts'::regclass AND contype = 'p';
  EXECUTE format('ALTER TABLE receipts DROP CONSTRAINT %I, '
    'ADD CONSTRAINT receipts_pkey PRIMARY KEY (app_id, day, send_id, device_id, kind)', old);
END
$$;
