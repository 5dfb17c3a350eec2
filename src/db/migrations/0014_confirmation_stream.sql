-- The confirmation stream (`modo: grpc`, src/confirmations/stream.ts) and a per-app event sequence in commit order.
--
-- Ordering: `events.seq` was one global bigserial. A sequence value is taken before commit, so two writers of one
-- app could commit out of seq order, and a reader that had passed seq 11 would never see seq 10 committed after
-- it. (The dispatcher's `xid < snapshot xmin` guard did not close this: a transaction's xid is assigned at its
-- first write, which can come before the other transaction's seq was drawn.) Now each app's seq comes from its
-- row in `event_seqs`, incremented in the writing statement itself (src/confirmations/events.ts): the row stays
-- locked until that transaction ends, so a second writer of the app draws its numbers only after the first has
-- committed (or rolled back, leaving no gap). Per app, seq order IS commit order: whoever sees seq n committed
-- can see every seq below it, and a reader never skips anything by moving its cursor.
CREATE TABLE event_seqs (
  app_id  uuid PRIMARY KEY,
  last    bigint NOT NULL
);
-- Existing events keep their numbers (webhook cursors and X-PM-Evento-Id stay valid); each app continues above them.
INSERT INTO event_seqs (app_id, last) SELECT app_id, max(seq) FROM events GROUP BY app_id;
ALTER TABLE events ALTER COLUMN seq DROP DEFAULT;
DROP SEQUENCE IF EXISTS events_seq_seq;
ALTER TABLE events DROP CONSTRAINT events_pkey;
DROP INDEX IF EXISTS events_app_idx;
ALTER TABLE events ADD PRIMARY KEY (app_id, seq);
-- The channel the event was written for: the app's mode when the fact committed. The webhook dispatcher delivers
-- the `webhook` ones, the stream the `grpc` ones; a mode change leaves each event with the channel it was made for.
ALTER TABLE events ADD COLUMN canal text NOT NULL DEFAULT 'webhook' CHECK (canal IN ('webhook', 'grpc'));
-- Retention walks events by age; rows arrive in time order, so a BRIN index is nearly free to keep.
CREATE INDEX events_created_brin ON events USING brin (created_at);

-- One row per stream ever opened (recently): how far it was sent. Retention keeps every `grpc` event after the
-- lowest `last_seq` of the app's streams seen within PM_EVENTS_RETENTION_DAYS, however old the event.
CREATE TABLE event_streams (
  id         uuid PRIMARY KEY,
  app_id     uuid NOT NULL,
  last_seq   bigint NOT NULL,
  opened_at  timestamptz NOT NULL,
  seen_at    timestamptz NOT NULL
);
CREATE INDEX event_streams_app_idx ON event_streams (app_id, seen_at);

-- A row inserted without a seq (operator scripts, tests, a writer that predates this migration) takes the next
-- number of its app the same way, one row at a time, under the same row lock. The service's writers number a
-- whole statement's events at once (src/confirmations/events.ts) and never reach this function.
CREATE FUNCTION events_assign_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_seqs AS q (app_id, last) VALUES (NEW.app_id, 1)
  ON CONFLICT (app_id) DO UPDATE SET last = q.last + 1
  RETURNING q.last INTO NEW.seq;
  RETURN NEW;
END $$;
CREATE TRIGGER events_assign_seq BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.seq IS NULL) EXECUTE FUNCTION events_assign_seq();
