// Which tenant each table belongs to (issue 32.5, docs/scaling.md). A tenant table holds one app's or one
// organisation's rows: its primary key and every unique index start with the tenant column, and every foreign key to
// another tenant table carries it, so the table could be distributed by that column (Citus) unchanged and each of
// its rows lives with the rest of its tenant. A global table is the deployment's own, or small and read by a key that
// names no tenant: distributed, it is a reference table (a copy on every node). test/integration/schema-tenancy.test.ts
// reads a migrated schema's catalog and holds every table to this.

/** The tenant column of a tenant table: `app_id`, except the tenant tables themselves and the organisations' own. */
export const TENANT_COLUMN: Readonly<Record<string, string>> = {
  // The app is its own tenant: distributed by its id, the app's rows everywhere sit with it.
  apps: 'id',
  org_mau: 'org_id',
  audit_log: 'org_id',
}

/** Every table that is no tenant's, with why (docs/scaling.md lists them as reference tables). */
export const GLOBAL_TABLES: Readonly<Record<string, string>> = {
  schema_migrations: 'the migrations applied (src/db/migrate.ts)',
  deployment_partitions: "the deployment's partition count, one row (src/redis/partitions.ts)",
  receipt_archive_state: 'how far the receipts were archived, one row (src/receipts/archive.ts)',
  orgs: "the organisations: a few rows each read with its apps and people; the apps' foreign key names it",
  app_key_kids: "which app an API key's kid belongs to: a key names no app (pm_live_<kid>_<secret>)",
  dashboard_users: 'the people who sign in, found by e-mail at sign-in; operators belong to no organisation',
  dashboard_sessions: "sign-in sessions, found by the cookie's digest, which names no organisation",
  dashboard_invites: "sign-up links, found by the token's digest, which names no organisation",
}

/** The column a table is distributed by; null for a global table. */
export function tenantColumn(table: string): string | null {
  if (table in GLOBAL_TABLES) return null
  return TENANT_COLUMN[table] ?? 'app_id'
}
