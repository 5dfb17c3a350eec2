-- A webhook destination whose last turn had a call of PM_WEBHOOK_SLOW_MS or more (or a timeout) is slow until a
-- call of its own is quicker (src/confirmations/dispatcher.ts, "Fair shares"): slow destinations share at most half
-- of each dispatcher's calls, and the look-up for due destinations leaves them out once their share is taken, so
-- however many of them are due, the ones that answer in time are still found. Written by the turn's record, so
-- every dispatcher process knows it. A constant default: adding the column rewrites nothing.
ALTER TABLE webhook_destinations ADD COLUMN slow boolean NOT NULL DEFAULT false;
