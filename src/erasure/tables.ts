// Where an app's and an organisation's rows live: every table of src/db/migrations that holds a tenant's data, in the
// order they are emptied (children before the parents their foreign keys name; the `apps` and `orgs` rows last, so a
// run cut short is found again and continued). `where` selects one tenant's rows with $1, the app's or the
// organisation's id; a table without the id is reached through its parent.

export interface TenantTable {
  /** The table (a partitioned one is emptied partition by partition). */
  table: string
  /** Condition on the table's own columns, $1 the tenant's id. */
  where: string
  /** An index leads with the condition's column: each batch finds the tenant's next rows through it. Without one
   *  (deliveries, receipts: keyed by send), batches walk the table once in physical order (src/erasure/erase.ts). */
  indexed?: true
}

const WEBHOOK_DESTINATIONS = 'SELECT id FROM webhook_destinations WHERE app_id = $1'

/** An app's rows, children first, the `apps` row last. */
export const APP_TABLES: readonly TenantTable[] = [
  { table: 'send_slices', where: 'app_id = $1' },
  { table: 'deliveries', where: 'app_id = $1' },
  { table: 'receipts', where: 'app_id = $1' },
  { table: 'receipt_archive', where: 'app_id = $1' },
  { table: 'sends', where: 'app_id = $1', indexed: true },
  { table: 'idempotency', where: 'app_id = $1', indexed: true },
  { table: 'inapp_events', where: 'app_id = $1', indexed: true },
  { table: 'inapp_served', where: 'app_id = $1' },
  { table: 'inapp_reactivations', where: 'app_id = $1', indexed: true },
  { table: 'inapp_campaigns', where: 'app_id = $1', indexed: true },
  { table: 'webhook_attempts', where: `destination_id IN (${WEBHOOK_DESTINATIONS})`, indexed: true },
  { table: 'webhook_abandoned', where: `(app_id = $1 OR destination_id IN (${WEBHOOK_DESTINATIONS}))` },
  { table: 'webhook_destinations', where: 'app_id = $1' },
  { table: 'events', where: 'app_id = $1', indexed: true },
  { table: 'event_seqs', where: 'app_id = $1', indexed: true },
  { table: 'event_streams', where: 'app_id = $1', indexed: true },
  { table: 'exports', where: 'app_id = $1' },
  { table: 'devices', where: 'app_id = $1', indexed: true },
  { table: 'credentials', where: 'app_id = $1', indexed: true },
  { table: 'app_keys', where: 'app_id = $1', indexed: true },
  { table: 'apps', where: 'id = $1', indexed: true },
]

/** An organisation's own rows once its apps are gone: its people (and their sessions), invitations, usage, itself. */
export const ORG_TABLES: readonly TenantTable[] = [
  { table: 'dashboard_sessions', where: 'user_id IN (SELECT id FROM dashboard_users WHERE org_id = $1)', indexed: true },
  { table: 'dashboard_invites', where: 'org_id = $1', indexed: true },
  { table: 'dashboard_users', where: 'org_id = $1' },
  { table: 'org_mau', where: 'org_id = $1', indexed: true },
  { table: 'orgs', where: 'id = $1', indexed: true },
]
