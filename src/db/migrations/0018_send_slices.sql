-- A big segment send is cut into slices of the device id space that any worker may lease, so every worker with
-- room delivers it. A slice is leased like a work partition: an owner for a while (`lease_until`), renewed while it
-- works, taken over by any worker once it lapses. Each slice expands its own range of the segment into placeholder
-- delivery rows (`expanded_until`, `expansion_done`), so the send's audience becomes fixed once every slice is
-- expanded. `leases` counts how often the slice was taken (more than once: a takeover).
CREATE TABLE send_slices (
  app_id          uuid NOT NULL,
  send_id         uuid NOT NULL,
  slice           int NOT NULL,
  lane            smallint NOT NULL,
  -- The slice covers device ids in (lo, hi].
  lo              uuid NOT NULL,
  hi              uuid NOT NULL,
  expanded_until  uuid,
  expansion_done  boolean NOT NULL DEFAULT false,
  owner           text,
  lease_until     timestamptz NOT NULL DEFAULT '-infinity',
  leases          int NOT NULL DEFAULT 0,
  done_at         timestamptz,
  PRIMARY KEY (send_id, slice),
  FOREIGN KEY (app_id, send_id) REFERENCES sends (app_id, id) ON DELETE CASCADE
);
-- The lease statement's scan: open slices, free ones first.
CREATE INDEX send_slices_open_idx ON send_slices (lane, lease_until) WHERE done_at IS NULL;
