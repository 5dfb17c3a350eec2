-- pombo:no-transaction
-- In-app events in week partitions on `em` (issue 32.1): the retention job drops a whole week once it is past
-- PM_INAPP_EVENTS_RETENTION_DAYS instead of deleting rows. The key starts with the tenant (issue 32.5) and holds the
-- partition column: (app_id, campanha_id, device_id, evento, ocorrencia_n, em). An occurrence is still counted
-- once whatever its `em` (the spec: `duplicado`): the writer probes the key's prefix in every partition before
-- inserting (src/inapp/events-writer.ts).
-- Done on a live database without moving a row, as 0028 does for the archive: a validated CHECK on `em` and the new
-- key built CONCURRENTLY on the existing table, then one short transaction renames it, creates the partitioned table
-- and attaches the old one FROM (MINVALUE) TO (the week boundary at least a day ahead: `em` is at most 5 minutes
-- ahead of the server), with no scan. Later weeks get partitions of their own (src/service/retention.ts creates
-- them ahead, aligned on 7-day blocks since 1970-01-01, as the boundary is here). Every step is safe to run again.
DROP INDEX CONCURRENTLY IF EXISTS inapp_events_0029_key;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS inapp_events_0029_key
  ON inapp_events (app_id, campanha_id, device_id, evento, ocorrencia_n, em);

SELECT set_config('pombo.cutover_0029',
  to_timestamp(ceil((extract(epoch FROM now()) + 86400) / 604800) * 604800)::text, false);

DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'inapp_events'::regclass) = 'r' THEN
    ALTER TABLE inapp_events DROP CONSTRAINT IF EXISTS inapp_events_em_bound;
    EXECUTE format('ALTER TABLE inapp_events ADD CONSTRAINT inapp_events_em_bound CHECK (em < %L::timestamptz) NOT VALID',
                   current_setting('pombo.cutover_0029'));
  END IF;
END
$$;

DO $$
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'inapp_events'::regclass) = 'r' THEN
    ALTER TABLE inapp_events VALIDATE CONSTRAINT inapp_events_em_bound;
  END IF;
END
$$;

DO $$
DECLARE c text;
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'inapp_events'::regclass) = 'r' THEN
    SET LOCAL lock_timeout = '10s';
    LOCK TABLE inapp_events IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('ALTER TABLE inapp_events DROP CONSTRAINT %I',
                   (SELECT conname FROM pg_constraint WHERE conrelid = 'inapp_events'::regclass AND contype = 'p'));
    ALTER TABLE inapp_events RENAME TO inapp_events_legacy;
    -- The new key as the old table's own: ATTACH then adopts it for the partitioned table's key instead of building one.
    ALTER TABLE inapp_events_legacy ADD CONSTRAINT inapp_events_legacy_pkey PRIMARY KEY USING INDEX inapp_events_0029_key;
    ALTER INDEX inapp_events_window_idx RENAME TO inapp_events_legacy_window_idx;
    -- ATTACH matches CHECK constraints by name: the old ones are given the names the new table's carry.
    SELECT conname INTO c FROM pg_constraint WHERE conrelid = 'inapp_events_legacy'::regclass AND contype = 'c'
       AND pg_get_constraintdef(oid) LIKE '%evento%';
    IF c <> 'inapp_events_evento_check' THEN
      EXECUTE format('ALTER TABLE inapp_events_legacy RENAME CONSTRAINT %I TO inapp_events_evento_check', c);
    END IF;
    SELECT conname INTO c FROM pg_constraint WHERE conrelid = 'inapp_events_legacy'::regclass AND contype = 'c'
       AND pg_get_constraintdef(oid) LIKE '%ocorrencia_n%';
    IF c <> 'inapp_events_ocorrencia_n_check' THEN
      EXECUTE format('ALTER TABLE inapp_events_legacy RENAME CONSTRAINT %I TO inapp_events_ocorrencia_n_check', c);
    END IF;
    CREATE TABLE inapp_events (
      app_id       uuid NOT NULL,
      campanha_id  uuid NOT NULL,
      device_id    uuid NOT NULL,
      evento       smallint NOT NULL CONSTRAINT inapp_events_evento_check CHECK (evento IN (1, 2, 3)),
      ocorrencia_n smallint NOT NULL CONSTRAINT inapp_events_ocorrencia_n_check CHECK (ocorrencia_n BETWEEN 1 AND 500),
      em           timestamptz NOT NULL,
      received_at  timestamptz NOT NULL,
      PRIMARY KEY (app_id, campanha_id, device_id, evento, ocorrencia_n, em)
    ) PARTITION BY RANGE (em);
    -- An empty table (a new deployment, every test) is not kept: the job's own partitions cover every range.
    IF EXISTS (SELECT 1 FROM inapp_events_legacy) THEN
      EXECUTE format('ALTER TABLE inapp_events ATTACH PARTITION inapp_events_legacy FOR VALUES FROM (MINVALUE) TO (%L)',
                     current_setting('pombo.cutover_0029'));
    ELSE
      DROP TABLE inapp_events_legacy;
    END IF;
    IF to_regclass('inapp_events_legacy') IS NOT NULL THEN
      ALTER TABLE inapp_events_legacy DROP CONSTRAINT inapp_events_em_bound;
    END IF;
    -- The window statistics' index (0013); the legacy table's own is attached, not built again.
    CREATE INDEX inapp_events_window_idx ON inapp_events (app_id, em);
  END IF;
END
$$;

-- A range without a partition yet (created ahead by the jobs) lands here rather than fails.
CREATE TABLE IF NOT EXISTS inapp_events_default PARTITION OF inapp_events DEFAULT;
