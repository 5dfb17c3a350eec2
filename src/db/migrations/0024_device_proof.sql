-- A device counts toward the free plan's monthly active users only once it has shown it is real (issue #31, point 5;
-- docs/decisions.md "Monthly active users: only devices shown to be real"): a provider accepted a push to its token
-- (this column, written once by the outcome batch, src/delivery/outcomes.ts) or it returned a delivery receipt
-- (last_receipt_at). NULL: registered, never shown real. Nullable without a default: adding it rewrites nothing.
ALTER TABLE devices ADD COLUMN push_accepted_at timestamptz;
