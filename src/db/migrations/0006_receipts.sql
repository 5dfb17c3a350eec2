-- Receipts (the spec, Receipt, Receipts): one row per (send, device, kind) counted, so a receipt counts once however
-- often it arrives. kind 0 = arrival (`recebido`, or implied by a `clique` without one), 1 = click. The key is the
-- unique index the group-commit writer inserts against (ON CONFLICT DO NOTHING): what it returns is what is new,
-- and exactly that is added to sends.recebidos / sends.converted in the same statement.
CREATE TABLE receipts (
  send_id     uuid NOT NULL,
  device_id   uuid NOT NULL,
  kind        smallint NOT NULL CHECK (kind IN (0, 1)),
  app_id      uuid NOT NULL,
  at          timestamptz NOT NULL,
  PRIMARY KEY (send_id, device_id, kind)
);
