-- pombo:no-transaction
-- The receipt archive in day partitions (issue 32.1): its keys are useless once their send is past the 90-day
-- acceptance window (the spec, Receipts), so the retention job drops a whole day's partition then
-- (src/service/retention.ts) instead of deleting rows. Its key starts with the tenant (issue 32.5) and holds the
-- partition column: (app_id, send_id, device_id, kind, day).
-- Done on a live database without moving a row: the existing table gets its `day` (the UTC day its send was due,
-- the same day as the receipts partition it came from), filled in committed batches of pages, while a trigger fills
-- it on rows the previous release still writes without it; a validated CHECK and a unique index built CONCURRENTLY
-- then let one short transaction rename it, create the partitioned table and attach the old one as its first
-- partition, FROM (MINVALUE) TO (the day after tomorrow), with no scan. That legacy partition is dropped by the same
-- rule as any other once its last possible day is past the window. Rows whose send is gone get day 1970-01-01:
-- nothing can count against them (a receipt needs its send). Every step is safe to run again.
ALTER TABLE receipt_archive ADD COLUMN IF NOT EXISTS day date;

CREATE OR REPLACE FUNCTION receipt_archive_fill_day() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.day IS NULL THEN
    SELECT (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date INTO NEW.day
      FROM sends s WHERE s.app_id = NEW.app_id AND s.id = NEW.send_id;
    NEW.day := COALESCE(NEW.day, DATE '1970-01-01');
  END IF;
  RETURN NEW;
END
$$;

DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'receipt_archive'::regclass) = 'r' THEN
    DROP TRIGGER IF EXISTS receipt_archive_fill_day ON receipt_archive;
    CREATE TRIGGER receipt_archive_fill_day BEFORE INSERT ON receipt_archive
      FOR EACH ROW EXECUTE FUNCTION receipt_archive_fill_day();
  END IF;
END
$$;

-- 1,000 pages (about 8 MB) per committed batch, found by a TID range scan: no batch rereads the ones before it.
-- On a new schema the table has no page and the loop never runs (nor commits).
DO $$
DECLARE p bigint := 0; pages bigint;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'receipt_archive'::regclass) = 'r' THEN
    pages := pg_relation_size('receipt_archive') / current_setting('block_size')::int;
    WHILE p < pages LOOP
      UPDATE receipt_archive a
         SET day = COALESCE((SELECT (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date
                               FROM sends s WHERE s.app_id = a.app_id AND s.id = a.send_id), DATE '1970-01-01')
       WHERE a.ctid >= format('(%s,0)', p)::tid AND a.ctid < format('(%s,0)', p + 1000)::tid AND a.day IS NULL;
      p := p + 1000;
      COMMIT;
    END LOOP;
  END IF;
END
$$;

-- The legacy partition's upper bound: nothing archived can be due after today, and two days leave room for a run
-- that crosses midnight. Kept in the session for the swap below.
SELECT set_config('pombo.cutover_0028', ((now() AT TIME ZONE 'UTC')::date + 2)::text, false);

DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'receipt_archive'::regclass) = 'r' THEN
    ALTER TABLE receipt_archive DROP CONSTRAINT IF EXISTS receipt_archive_day_bound;
    EXECUTE format('ALTER TABLE receipt_archive ADD CONSTRAINT receipt_archive_day_bound '
                   'CHECK (day IS NOT NULL AND day < %L::date) NOT VALID', current_setting('pombo.cutover_0028'));
  END IF;
END
$$;

-- Validation reads the table under a lock that lets receipts keep arriving.
DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'receipt_archive'::regclass) = 'r' THEN
    ALTER TABLE receipt_archive VALIDATE CONSTRAINT receipt_archive_day_bound;
    -- Proven by the validated CHECK: no scan.
    ALTER TABLE receipt_archive ALTER COLUMN day SET NOT NULL;
  END IF;
END
$$;

-- A run that failed half-way may have left it invalid: built again. After the swap it belongs to the legacy
-- partition under another name, and both statements do nothing.
DROP INDEX CONCURRENTLY IF EXISTS receipt_archive_0028_key;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS receipt_archive_0028_key ON receipt_archive (app_id, send_id, device_id, kind, day);

DO $$
DECLARE c text;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'receipt_archive'::regclass) = 'r' THEN
    SET LOCAL lock_timeout = '10s';
    LOCK TABLE receipt_archive IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('ALTER TABLE receipt_archive DROP CONSTRAINT %I',
                   (SELECT conname FROM pg_constraint WHERE conrelid = 'receipt_archive'::regclass AND contype = 'p'));
    DROP TRIGGER receipt_archive_fill_day ON receipt_archive;
    DROP FUNCTION receipt_archive_fill_day();
    ALTER TABLE receipt_archive RENAME TO receipt_archive_legacy;
    -- The new key as the old table's own: ATTACH then adopts it for the partitioned table's key instead of building one.
    ALTER TABLE receipt_archive_legacy ADD CONSTRAINT receipt_archive_legacy_pkey PRIMARY KEY USING INDEX receipt_archive_0028_key;
    -- ATTACH matches CHECK constraints by name: the old one is given the name the new table's carries.
    SELECT conname INTO c FROM pg_constraint WHERE conrelid = 'receipt_archive_legacy'::regclass AND contype = 'c'
       AND pg_get_constraintdef(oid) LIKE '%kind%';
    IF c <> 'receipt_archive_kind_check' THEN
      EXECUTE format('ALTER TABLE receipt_archive_legacy RENAME CONSTRAINT %I TO receipt_archive_kind_check', c);
    END IF;
    CREATE TABLE receipt_archive (
      app_id     uuid NOT NULL,
      send_id    uuid NOT NULL,
      device_id  uuid NOT NULL,
      kind       smallint NOT NULL CONSTRAINT receipt_archive_kind_check CHECK (kind IN (0, 1)),
      day        date NOT NULL,
      PRIMARY KEY (app_id, send_id, device_id, kind, day)
    ) PARTITION BY RANGE (day);
    -- An empty table (a new deployment, every test) is not kept: the job's own partitions cover every range.
    IF EXISTS (SELECT 1 FROM receipt_archive_legacy) THEN
      EXECUTE format('ALTER TABLE receipt_archive ATTACH PARTITION receipt_archive_legacy FOR VALUES FROM (MINVALUE) TO (%L)',
                     current_setting('pombo.cutover_0028'));
    ELSE
      DROP TABLE receipt_archive_legacy;
    END IF;
    IF to_regclass('receipt_archive_legacy') IS NOT NULL THEN
      ALTER TABLE receipt_archive_legacy DROP CONSTRAINT receipt_archive_day_bound;
    END IF;
  END IF;
END
$$;

-- A range without a partition yet (created ahead by the jobs) lands here rather than fails.
CREATE TABLE IF NOT EXISTS receipt_archive_default PARTITION OF receipt_archive DEFAULT;
