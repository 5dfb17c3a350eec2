-- Webhook queue leases (src/confirmations/lease.ts, docs/design/webhooks.md "Several dispatchers"): a dispatcher
-- claims an app's queue for a short time in one statement, makes its calls with no transaction open, and records
-- their outcome in one statement that applies only while the lease is still its own.
--   lease_id        the claim's random id; the outcome of a turn is written only where it still matches
--   leased_until    the claim's end on the database's clock; renewed while a call is in flight, so a dispatcher that
--                   dies stops renewing and another takes the queue over once this has passed
--   handover_until  set by a URL change waiting for the turn in flight: no new claim until the change is done
-- Nullable columns without defaults: adding them rewrites nothing and the previous release ignores them.
ALTER TABLE webhook_destinations
  ADD COLUMN lease_id uuid,
  ADD COLUMN leased_until timestamptz,
  ADD COLUMN handover_until timestamptz;
