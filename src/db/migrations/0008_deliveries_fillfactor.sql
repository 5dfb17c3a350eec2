-- A segment send writes each device's delivery row twice: a placeholder when the audience is expanded, then its
-- final state. With full pages the second write cannot stay on its page, so it costs a new index entry and more
-- WAL; half-empty pages let it be a heap-only (HOT) update (status, attempts and updated_at are in no index): 92%
-- of them were HOT here even when a whole page is updated at once, none at the default fill. List sends write
-- their rows once and pay the space for nothing; the segment sends are the big ones.
ALTER TABLE deliveries SET (fillfactor = 50);
