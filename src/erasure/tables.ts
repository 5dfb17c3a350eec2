// Where an app's and an organisation's rows live: every table of src/db/migrations that holds a tenant's data, in the
// order they are emptied (children before the parents their foreign keys name; the `apps` and `orgs` rows last, so a
// run cut short is found again and continued). `where` selects one tenant's rows with $1, the app's or the
// organisation's id; a table without the id is reached through its parent.

export interface TenantTable {
  /** The table (a partitioned one is emptied partition by partition). */
  table: string
  /** Condition on the table's own columns, $1 the tenant's id. */
  where: string
  /** An index leads with the condition's column: each batch finds the tenant's next rows through it. Without one,
   *  batches walk the table once in physical order (src/erasure/erase.ts). Every tenant table's primary key leads
   *  with its tenant (migrations 0025-0027, docs/scaling.md). */
  indexed?: true
}

/** An app's rows, children first, the `apps` row last. */
export const APP_TABLES: readonly TenantTable[] = [
  { table: 'send_slices', where: 'app_id = $1', indexed: true },
  { table: 'deliveries', where: 'app_id = $1', indexed: true },
  { table: 'receipts', where: 'app_id = $1', indexed: true },
  { table: 'receipt_archive', where: 'app_id = $1' },
  { table: 'sends', where: 'app_id = $1', indexed: true },
  { table: 'idempotency', where: 'app_id = $1', indexed: true },
  { table: 'inapp_events', where: 'app_id = $1', indexed: true },
  { table: 'inapp_served', where: 'app_id = $1', indexed: true },
  { table: 'inapp_reactivations', where: 'app_id = $1', indexed: true },
  { table: 'inapp_campaigns', where: 'app_id = $1', indexed: true },
  { table: 'webhook_attempts', where: 'app_id = $1', indexed: true },
  { table: 'webhook_abandoned', where: 'app_id = $1', indexed: true },
  { table: 'webhook_destinations', where: 'app_id = $1', indexed: true },
  { table: 'events', where: 'app_id = $1', indexed: true },
  { table: 'event_seqs', where: 'app_id = $1', indexed: true },
  { table: 'event_streams', where: 'app_id = $1', indexed: true },
  { table: 'exports', where: 'app_id = $1', indexed: true },
  { table: 'devices', where: 'app_id = $1', indexed: true },
  { table: 'credentials', where: 'app_id = $1', indexed: true },
  { table: 'app_keys', where: 'app_id = $1', indexed: true },
  // A global table (docs/scaling.md): which app a key's kid belongs to; small, walked in physical order.
  { table: 'app_key_kids', where: 'app_id = $1' },
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
