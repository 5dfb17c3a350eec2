-- In-app messages (the spec, In-app campaign, its States, In-app management, In-app device routes).
-- The channel switch and the app-wide cap already live on apps (inapp_ativo, inapp_cap_horas).
-- No foreign keys from the event tables to campaigns: a FK would take a KEY SHARE lock on the one campaign row for
-- every inserted event, which concurrent batches of a hot campaign would contend on. Deleting a campaign deletes
-- its trail in the same transaction (src/inapp/store.ts).
CREATE TABLE inapp_campaigns (
  app_id        uuid NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  id            uuid NOT NULL,
  estado        text NOT NULL CHECK (estado IN ('rascunho', 'ativa', 'pausada', 'encerrada')),
  nome          text NOT NULL,
  alvo_tipo     text NOT NULL,
  -- The whole validated campaign as the caller will read it back (formato, alvo, conteudo, estilo, gatilho,
  -- regras, inicia_em, termina_em), defaults applied.
  definicao     jsonb NOT NULL,
  prioridade    integer NOT NULL,
  cap_total     integer NOT NULL,
  -- Uses the action open_notification_settings somewhere (reativados attribution).
  usa_config_notif boolean NOT NULL,
  -- The counters of the funnel; servidos by the server, the others only from proven events.
  servidos      bigint NOT NULL DEFAULT 0,
  impressoes    bigint NOT NULL DEFAULT 0,
  cliques       bigint NOT NULL DEFAULT 0,
  fechados      bigint NOT NULL DEFAULT 0,
  origem_id     uuid,
  criado_em     timestamptz NOT NULL,
  atualizado_em timestamptz NOT NULL,
  publicado_em  timestamptz,
  encerrado_em  timestamptz,
  PRIMARY KEY (app_id, id)
);
CREATE INDEX inapp_campaigns_list_idx ON inapp_campaigns (app_id, criado_em DESC, id DESC);
CREATE INDEX inapp_campaigns_active_idx ON inapp_campaigns (app_id) WHERE estado = 'ativa';

-- servidos: one row per (campaign, device) the first time the campaign entered that device's package.
CREATE TABLE inapp_served (
  app_id      uuid NOT NULL,
  campanha_id uuid NOT NULL,
  device_id   uuid NOT NULL,
  em          timestamptz NOT NULL,
  PRIMARY KEY (campanha_id, device_id)
);

-- Proven device events: one row per occurrence (campaign, device, event, ocorrencia_n); a retry or a race finds
-- the row and counts nothing. evento: 1 impressao, 2 clique, 3 fechou.
CREATE TABLE inapp_events (
  app_id       uuid NOT NULL,
  campanha_id  uuid NOT NULL,
  device_id    uuid NOT NULL,
  evento       smallint NOT NULL CHECK (evento IN (1, 2, 3)),
  ocorrencia_n smallint NOT NULL CHECK (ocorrencia_n BETWEEN 1 AND 500),
  em           timestamptz NOT NULL,
  recebido_em  timestamptz NOT NULL,
  PRIMARY KEY (campanha_id, device_id, evento, ocorrencia_n)
);
CREATE INDEX inapp_events_window_idx ON inapp_events (app_id, em);

-- reativados: a device that had an occasion of a campaign using open_notification_settings in the last 7 days and
-- then reports notification permission enabled; once per (campaign, device).
CREATE TABLE inapp_reactivations (
  app_id      uuid NOT NULL,
  campanha_id uuid NOT NULL,
  device_id   uuid NOT NULL,
  em          timestamptz NOT NULL,
  PRIMARY KEY (campanha_id, device_id)
);
CREATE INDEX inapp_reactivations_window_idx ON inapp_reactivations (app_id, em);

-- The attribution hook: fires only on the rows of a registration batch whose permission bit (notif_permissoes & 1)
-- flips from off to on, inside the registration's own transaction: no round trip, nothing for any other row.
CREATE FUNCTION inapp_stamp_reactivation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO inapp_reactivations (app_id, campanha_id, device_id, em)
  SELECT DISTINCT e.app_id, e.campanha_id, e.device_id, NEW.updated_at
  FROM inapp_campaigns c
  -- The events' primary key (campanha_id, device_id, ...) answers each probe: no extra index on the hot table.
  JOIN inapp_events e ON e.campanha_id = c.id AND e.device_id = NEW.id AND e.app_id = c.app_id
  WHERE c.app_id = NEW.app_id AND c.usa_config_notif
    AND e.em >= NEW.updated_at - interval '7 days' AND e.em <= NEW.updated_at
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

CREATE TRIGGER devices_inapp_reactivation AFTER UPDATE OF notif_permissoes ON devices FOR EACH ROW
  WHEN (OLD.notif_permissoes IS NOT NULL AND OLD.notif_permissoes & 1 = 0 AND NEW.notif_permissoes & 1 = 1)
  EXECUTE FUNCTION inapp_stamp_reactivation();
