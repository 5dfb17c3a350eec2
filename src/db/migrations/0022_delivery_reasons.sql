-- What the provider (or Pombo) said when a delivery did not end accepted: `<category>:<provider's reason>`, for
-- example `dead_token:UNREGISTERED`, `rejected:InvalidArgument`, `credential:InvalidProviderToken`,
-- `provider_error:Unavailable` (attempts exhausted), `expired` (past the send's ttl). Null for accepted and pending
-- rows. The send's page groups its failures by category and a test send shows the provider's words. Written by the
-- outcome statement with the final status (src/delivery/outcomes.ts); in no index, so that update stays heap-only.
-- Adding a nullable column with no default changes the catalog only (no rewrite at any size); the lock it takes is
-- bounded like 0019's.
SET LOCAL lock_timeout = '10s';
ALTER TABLE deliveries ADD COLUMN reason text;
