-- pombo:no-transaction
-- Distribution-ready keys (issue 32.5, docs/scaling.md), first half: what can be built while the previous release
-- still serves. Every tenant table's primary key is to start with `app_id`, so that the table could be distributed
-- by it (Citus) unchanged: a distributed table's unique indexes must contain its distribution column. Here the new
-- keys are built as unique indexes CONCURRENTLY (writes go on during the build) and the one missing column is added
-- and filled in batches; nothing the previous release reads or writes changes. 0026 then swaps each primary key to
-- its new index (catalog only) and 0027 re-keys the partitioned receipts.
--
-- A statement that fails leaves its index invalid: each build drops it first, so a run starts over cleanly.

-- An API key is looked up by its kid alone (pm_live_<kid>_<secret>, the spec's format: it names no app). Once
-- app_keys is keyed (app_id, kid), this small global table says which app a kid belongs to and keeps kids unique
-- across apps (a colliding new key is retried, src/apps/service.ts). Distributed, it is a reference table.
CREATE TABLE IF NOT EXISTS app_key_kids (
  kid     text PRIMARY KEY,
  app_id  uuid NOT NULL
);
INSERT INTO app_key_kids (kid, app_id) SELECT kid, app_id FROM app_keys ON CONFLICT DO NOTHING;

-- Webhook attempts named only their destination. The column is nullable until 0026 (the previous release writes
-- rows without it) and filled from the destination in batches of 5,000 ids, each committed on its own, so no long
-- transaction holds the rows and a run cut short keeps what it filled. On a new schema the table is empty and the
-- loop never runs (nor commits, which a transaction would refuse).
ALTER TABLE webhook_attempts ADD COLUMN IF NOT EXISTS app_id uuid;
DO $$
DECLARE
  lo bigint;
  hi bigint;
BEGIN
  SELECT min(id), max(id) INTO lo, hi FROM webhook_attempts WHERE app_id IS NULL;
  WHILE lo <= hi LOOP
    UPDATE webhook_attempts a SET app_id = d.app_id FROM webhook_destinations d
     WHERE a.id >= lo AND a.id < lo + 5000 AND a.app_id IS NULL AND d.id = a.destination_id;
    lo := lo + 5000;
    COMMIT;
  END LOOP;
END
$$;

DROP INDEX CONCURRENTLY IF EXISTS app_keys_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY app_keys_tenant_key ON app_keys (app_id, kid);
DROP INDEX CONCURRENTLY IF EXISTS exports_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY exports_tenant_key ON exports (app_id, token_hash);
-- A download link carries only its token: the file route finds the export by the token's digest (not unique by
-- itself any more; 256 random bits never collide).
DROP INDEX CONCURRENTLY IF EXISTS exports_token_idx;
CREATE INDEX CONCURRENTLY exports_token_idx ON exports (token_hash);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY deliveries_tenant_key ON deliveries (app_id, send_id, device_id);
DROP INDEX CONCURRENTLY IF EXISTS event_streams_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY event_streams_tenant_key ON event_streams (app_id, id);
DROP INDEX CONCURRENTLY IF EXISTS inapp_served_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY inapp_served_tenant_key ON inapp_served (app_id, campanha_id, device_id);
DROP INDEX CONCURRENTLY IF EXISTS inapp_reactivations_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY inapp_reactivations_tenant_key ON inapp_reactivations (app_id, campanha_id, device_id);
DROP INDEX CONCURRENTLY IF EXISTS send_slices_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY send_slices_tenant_key ON send_slices (app_id, send_id, slice);
DROP INDEX CONCURRENTLY IF EXISTS webhook_destinations_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY webhook_destinations_tenant_key ON webhook_destinations (app_id, id);
DROP INDEX CONCURRENTLY IF EXISTS webhook_attempts_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY webhook_attempts_tenant_key ON webhook_attempts (app_id, id);
DROP INDEX CONCURRENTLY IF EXISTS webhook_abandoned_tenant_key;
CREATE UNIQUE INDEX CONCURRENTLY webhook_abandoned_tenant_key ON webhook_abandoned (app_id, destination_id, event_seq);
