-- Receipts kept in day partitions (the `tardio` path, the spec, Receipts): `day` is the UTC day the send was due
-- (COALESCE(send_after, queued_at)), so all of a send's receipts live in one partition. Days are created ahead by
-- the archival job (src/receipts/archive.ts); anything else lands in the default partition. When a day is older
-- than the archive horizon its detailed rows (time, partition) are folded into `receipt_archive` (the key alone,
-- still enough to count once) and the partition dropped; a receipt for an archived day is counted there, answered
-- `{ok: true, tardio: true}`.
ALTER TABLE receipts RENAME TO receipts_0006;
CREATE TABLE receipts (
  day         date NOT NULL,
  send_id     uuid NOT NULL,
  device_id   uuid NOT NULL,
  kind        smallint NOT NULL CHECK (kind IN (0, 1)),
  app_id      uuid NOT NULL,
  at          timestamptz NOT NULL,
  PRIMARY KEY (day, send_id, device_id, kind)
) PARTITION BY RANGE (day);
CREATE TABLE receipts_default PARTITION OF receipts DEFAULT;
INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
SELECT (COALESCE(s.send_after, s.queued_at) AT TIME ZONE 'UTC')::date, r.send_id, r.device_id, r.kind, r.app_id, r.at
  FROM receipts_0006 r JOIN sends s ON s.app_id = r.app_id AND s.id = r.send_id;
DROP TABLE receipts_0006;

CREATE TABLE receipt_archive (
  send_id     uuid NOT NULL,
  device_id   uuid NOT NULL,
  kind        smallint NOT NULL CHECK (kind IN (0, 1)),
  app_id      uuid NOT NULL,
  PRIMARY KEY (send_id, device_id, kind)
);

-- Every day before `archived_before` has been archived (null: none yet). One row.
CREATE TABLE receipt_archive_state (
  one             boolean PRIMARY KEY DEFAULT true CHECK (one),
  archived_before date
);
INSERT INTO receipt_archive_state DEFAULT VALUES;
