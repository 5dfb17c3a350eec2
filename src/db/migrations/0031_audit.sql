-- The audit log (issue #32 point 3, src/audit/): every change a person, an operator command or a key made, one row
-- each, append-only.
--
-- Keyed like a tenant table, by the organisation first, so it could be distributed by org_id unchanged. An action
-- of no organisation (an operator's own sign-in, creating an operator, a refused sign-in for an unknown address)
-- is filed under the nil UUID, the platform's own "organisation" (read back as null). There is deliberately no
-- foreign key to orgs or apps: the record of an app's or an organisation's deletion (`app.excluido`,
-- `org.excluida`) must outlive the rows it names, so the erasure (src/erasure/tables.ts) leaves this table alone and
-- writes that record after it has removed everything else. Rows hold ids, names and counts, never end-user data
-- and never a secret (src/audit/record.ts refuses secret-looking details).
CREATE TABLE audit_log (
  org_id uuid NOT NULL,
  em timestamptz NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  app_id uuid,
  quem text NOT NULL,
  acao text NOT NULL,
  detalhes jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (org_id, em, id)
);
-- An app's log, newest first (the dashboard's app page, `pombo audit --app`); an organisation's is the primary key.
CREATE INDEX audit_log_app_idx ON audit_log (app_id, em DESC, id DESC) WHERE app_id IS NOT NULL;
-- Everything, by time (`pombo audit` with no filter, `--desde`), and the retention job's oldest-first deletes.
CREATE INDEX audit_log_em_idx ON audit_log (em, id);

-- Append-only in the database itself: no UPDATE, and no DELETE or TRUNCATE except by the retention job, which marks
-- its own transaction (SET LOCAL pombo.audit_retention = 'on', src/audit/retention.ts). Statement-level, so an
-- insert pays nothing.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('pombo.audit_retention', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
