-- Column names follow docs/naming.md: a column keeps a Portuguese name only when it stores a wire field under that
-- field's exact name (apps.rate_por_min, inapp_events.em); every other column is English. These were not wire names:
--   apps.confirm_modo               (the wire's field is `modo`)              -> confirm_mode
--   inapp_campaigns.definicao       (the stored definition)                   -> definition
--   inapp_campaigns.usa_config_notif                                          -> uses_notification_settings
--   inapp_events.recebido_em        (when the server recorded the event)      -> received_at
--   inapp_served.em                 (when the campaign entered a package)     -> served_at
--   inapp_reactivations.em          (when the reactivation was stamped)       -> reactivated_at
--   webhook_attempts.entrega_id     (the value sent as X-PM-Entrega-Id)       -> attempt_id
--   dashboard_users.operador                                                  -> operator
--   dashboard_users.senha_hash                                                -> password_hash
--
-- On a live database: RENAME COLUMN changes the catalog only (no table rewrite, no index rebuild: instant at any
-- size) under a brief ACCESS EXCLUSIVE lock on each table. Taking that lock waits for the queries in flight on the
-- table, and every query after it waits behind it: lock_timeout bounds the wait, so a long query elsewhere makes
-- this migration fail (nothing changed, run it again) instead of stalling traffic.
-- The previous release reads and writes the old names and this one the new: stop every process of the previous
-- release (api, worker, dashboard) before this runs, then start this release (docs/operations.md, Migrations). A
-- previous-release process started afterwards refuses the schema (it does not know this migration).
SET LOCAL lock_timeout = '10s';

ALTER TABLE apps RENAME COLUMN confirm_modo TO confirm_mode;
ALTER TABLE apps RENAME CONSTRAINT apps_confirm_modo_check TO apps_confirm_mode_check;
ALTER TABLE inapp_campaigns RENAME COLUMN definicao TO definition;
ALTER TABLE inapp_campaigns RENAME COLUMN usa_config_notif TO uses_notification_settings;
ALTER TABLE inapp_events RENAME COLUMN recebido_em TO received_at;
ALTER TABLE inapp_served RENAME COLUMN em TO served_at;
ALTER TABLE inapp_reactivations RENAME COLUMN em TO reactivated_at;
ALTER TABLE webhook_attempts RENAME COLUMN entrega_id TO attempt_id;
ALTER TABLE dashboard_users RENAME COLUMN operador TO operator;
ALTER TABLE dashboard_users RENAME COLUMN senha_hash TO password_hash;

-- A function's body is text: the rename does not reach it. The trigger keeps calling it by name.
CREATE OR REPLACE FUNCTION inapp_stamp_reactivation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO inapp_reactivations (app_id, campanha_id, device_id, reactivated_at)
  SELECT DISTINCT e.app_id, e.campanha_id, e.device_id, NEW.updated_at
  FROM inapp_campaigns c
  -- The events' primary key (campanha_id, device_id, ...) answers each probe: no extra index on the hot table.
  JOIN inapp_events e ON e.campanha_id = c.id AND e.device_id = NEW.id AND e.app_id = c.app_id
  WHERE c.app_id = NEW.app_id AND c.uses_notification_settings
    AND e.em >= NEW.updated_at - interval '7 days' AND e.em <= NEW.updated_at
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
