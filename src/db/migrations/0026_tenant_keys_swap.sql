-- Distribution-ready keys (issue 32.5, docs/scaling.md), second half: each primary key becomes the index 0025 built
-- (ADD CONSTRAINT ... USING INDEX renames it, builds nothing), and the foreign keys between tenant tables carry the
-- tenant. Catalog changes under a brief ACCESS EXCLUSIVE lock per table, bounded by lock_timeout like 0019's; the
-- only scans are webhook_attempts' (its last unfilled rows, its NOT NULL and its new foreign key), a table the
-- retention job keeps to PM_WEBHOOK_ATTEMPTS_RETENTION_DAYS.
-- The previous release writes deliveries with ON CONFLICT (send_id, device_id) and webhook attempts without app_id,
-- which this schema refuses: stop every process of the previous release before this runs, then start this release
-- (docs/operations.md, Migrations), as for 0019.
SET LOCAL lock_timeout = '10s';

-- What the previous release wrote after 0025: keys it created, attempts it recorded.
INSERT INTO app_key_kids (kid, app_id) SELECT kid, app_id FROM app_keys ON CONFLICT DO NOTHING;
UPDATE webhook_attempts a SET app_id = d.app_id FROM webhook_destinations d WHERE a.app_id IS NULL AND d.id = a.destination_id;
ALTER TABLE webhook_attempts ALTER COLUMN app_id SET NOT NULL;

-- The foreign keys naming a destination by its id alone go first: they depend on the key being replaced.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_destination_id_fkey;
ALTER TABLE webhook_abandoned DROP CONSTRAINT webhook_abandoned_destination_id_fkey;

ALTER TABLE app_keys DROP CONSTRAINT app_keys_pkey, ADD CONSTRAINT app_keys_pkey PRIMARY KEY USING INDEX app_keys_tenant_key;
ALTER TABLE exports DROP CONSTRAINT exports_pkey, ADD CONSTRAINT exports_pkey PRIMARY KEY USING INDEX exports_tenant_key;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey, ADD CONSTRAINT deliveries_pkey PRIMARY KEY USING INDEX deliveries_tenant_key;
ALTER TABLE event_streams DROP CONSTRAINT event_streams_pkey,
  ADD CONSTRAINT event_streams_pkey PRIMARY KEY USING INDEX event_streams_tenant_key;
ALTER TABLE inapp_served DROP CONSTRAINT inapp_served_pkey,
  ADD CONSTRAINT inapp_served_pkey PRIMARY KEY USING INDEX inapp_served_tenant_key;
ALTER TABLE inapp_reactivations DROP CONSTRAINT inapp_reactivations_pkey,
  ADD CONSTRAINT inapp_reactivations_pkey PRIMARY KEY USING INDEX inapp_reactivations_tenant_key;
ALTER TABLE send_slices DROP CONSTRAINT send_slices_pkey,
  ADD CONSTRAINT send_slices_pkey PRIMARY KEY USING INDEX send_slices_tenant_key;
ALTER TABLE webhook_destinations DROP CONSTRAINT webhook_destinations_pkey,
  ADD CONSTRAINT webhook_destinations_pkey PRIMARY KEY USING INDEX webhook_destinations_tenant_key;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey,
  ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY USING INDEX webhook_attempts_tenant_key,
  ADD CONSTRAINT webhook_attempts_destination_fkey FOREIGN KEY (app_id, destination_id)
    REFERENCES webhook_destinations (app_id, id) ON DELETE CASCADE;
ALTER TABLE webhook_abandoned DROP CONSTRAINT webhook_abandoned_pkey,
  ADD CONSTRAINT webhook_abandoned_pkey PRIMARY KEY USING INDEX webhook_abandoned_tenant_key,
  ADD CONSTRAINT webhook_abandoned_destination_fkey FOREIGN KEY (app_id, destination_id)
    REFERENCES webhook_destinations (app_id, id) ON DELETE CASCADE;

-- The new key leads with app_id: this index only repeated its first column.
DROP INDEX app_keys_app_idx;
