// Erasing an app or an organisation (`pombo app delete`, `pombo org delete`): every row of it, its Redis keys, the
// work-stream entries that name it, its export files, its credentials and keys. First the app is made unusable
// (keys revoked and the app paused, published to every instance, so its keys stop at once everywhere); then its data
// goes, table by table, a bounded batch per statement (short transactions: the tenants beside it are never held up);
// the `apps` row goes last. Every step is idempotent and the `apps` (or `orgs`) row is the mark of an erasure in
// progress, so running the command again after a crash continues where it stopped.
// Every statement names the tenant's id: no other tenant's row is ever selected.
//
// The audit log is not the tenant's to erase: once everything is gone, the erasure writes its own record
// (`app.excluido`, `org.excluida`: who, the name and the counts removed, nothing of the end users), which outlives the
// tenant until the audit retention (src/audit/, migration 0031).
import { type Actor, BY_CODE, record } from '../audit/record'
import { readdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { type Db, query } from '../db/pool'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import { countAppKeys, deleteAppKeys, deleteStreamEntries } from './redis'
import { APP_TABLES, ORG_TABLES, type TenantTable } from './tables'

export interface ErasureDeps {
  db: Db
  redis: RedisClient
  keys: Keys
  /** Where export files are written (PM_EXPORT_DIR; empty: exports are off). */
  exportDir: string
  /** Rows per statement (PM_ERASE_BATCH). */
  batch: number
  /** Drops the app's cached keys and state on every instance (the directory's invalidation, as `pombo key revoke`). */
  invalidate: (appId: string) => Promise<void>
  /** A progress line (stderr). */
  progress: (line: string) => void
  now: () => number
}

export interface Removed {
  /** Rows removed per table. */
  rows: Record<string, number>
  redisKeys: number
  streamEntries: number
  files: number
}

export class ErasureError extends Error {}

const EXPORT_FILE = (hash: string) => new RegExp(`^\\.?${hash}(\\.csv\\.gz|\\.[0-9a-f]{8}\\.tmp|\\.tmp)$`)

function empty(): Removed {
  return { rows: {}, redisKeys: 0, streamEntries: 0, files: 0 }
}

function add(into: Removed, r: Removed): void {
  for (const [t, n] of Object.entries(r.rows)) into.rows[t] = (into.rows[t] ?? 0) + n
  into.redisKeys += r.redisKeys
  into.streamEntries += r.streamEntries
  into.files += r.files
}

const fmt = (n: number) => n.toLocaleString('en-US')

/** What an erasure's audit record says it removed: counts per table and of Redis keys, stream entries and files. */
function summary(r: Removed): Record<string, unknown> {
  return { rows: r.rows, redis_keys: r.redisKeys, stream_entries: r.streamEntries, files: r.files }
}

export class Eraser {
  constructor(private readonly d: ErasureDeps) {}

  async appExists(appId: string): Promise<boolean> {
    return (await query(this.d.db, 'SELECT 1 FROM apps WHERE id = $1', [appId])).rowCount === 1
  }

  async orgExists(orgId: string): Promise<boolean> {
    return (await query(this.d.db, 'SELECT 1 FROM orgs WHERE id = $1', [orgId])).rowCount === 1
  }

  async #orgApps(orgId: string): Promise<string[]> {
    const r = await query<{ id: string }>(this.d.db, 'SELECT id FROM apps WHERE org_id = $1 ORDER BY id', [orgId])
    return r.rows.map((x) => x.id)
  }

  /** What erasing the app would remove (rows per table, Redis keys), for the refusal without --yes. */
  async countApp(appId: string): Promise<Removed> {
    const out = empty()
    for (const t of APP_TABLES) out.rows[t.table] = await this.#count(t, appId)
    out.redisKeys = await countAppKeys(this.d.redis, this.d.keys.prefix, appId)
    return out
  }

  async countOrg(orgId: string): Promise<Removed & { apps: number }> {
    const out = empty()
    const apps = await this.#orgApps(orgId)
    for (const a of apps) add(out, await this.countApp(a))
    for (const t of ORG_TABLES) out.rows[t.table] = await this.#count(t, orgId)
    return { ...out, apps: apps.length }
  }

  /** Erases the app; answers what was removed by this run. `by`: who asked (the audit record's `quem`). */
  async eraseApp(appId: string, by: Actor = BY_CODE, withOrg = false): Promise<Removed> {
    const out = empty()
    const app = (await query<{ nome: string; org_id: string }>(this.d.db, 'SELECT nome, org_id FROM apps WHERE id = $1', [appId]))
      .rows[0]
    await this.#disable([appId])
    out.streamEntries += await deleteStreamEntries(this.d.redis, this.d.keys.prefix, appId)
    out.files += await this.#exportFiles(appId)
    const rows = APP_TABLES.slice(0, -1)
    for (const t of rows) out.rows[t.table] = await this.#erase(t, appId)
    // Once more before the app's own row: a worker that held one of its sends when the erasure began may have written
    // a row (an event, an outcome) into a table already emptied. With the sends gone, nothing more can come.
    for (const t of rows) out.rows[t.table] = (out.rows[t.table] ?? 0) + (await this.#erase(t, appId))
    const last = APP_TABLES[APP_TABLES.length - 1] as TenantTable
    out.rows[last.table] = await this.#erase(last, appId)
    // Last: keys written meanwhile by a request that was already past its checks (a counter, a lock) go too.
    out.redisKeys += await deleteAppKeys(this.d.redis, this.d.keys.prefix, appId)
    await this.d.invalidate(appId)
    if (app)
      await record(
        this.d.db,
        {
          by,
          action: 'app.excluido',
          orgId: app.org_id,
          appId,
          details: { name: app.nome, ...(withOrg ? { with_org: true } : {}), ...summary(out) },
        },
        new Date(this.d.now()),
      )
    return out
  }

  /** Erases the organisation: its people's sessions end first, then every app of it, then its own rows. */
  async eraseOrg(orgId: string, by: Actor = BY_CODE): Promise<Removed & { apps: number }> {
    const out = empty()
    const org = (await query<{ nome: string }>(this.d.db, 'SELECT nome FROM orgs WHERE id = $1', [orgId])).rows[0]
    const sessions = ORG_TABLES[0] as TenantTable
    out.rows[sessions.table] = await this.#erase(sessions, orgId)
    const apps = await this.#orgApps(orgId)
    await this.#disable(apps)
    for (const a of apps) add(out, await this.eraseApp(a, by, true))
    for (const t of ORG_TABLES) out.rows[t.table] = (out.rows[t.table] ?? 0) + (await this.#erase(t, orgId))
    if (org)
      await record(
        this.d.db,
        { by, action: 'org.excluida', orgId, details: { name: org.nome, apps: apps.length, ...summary(out) } },
        new Date(this.d.now()),
      )
    return { ...out, apps: apps.length }
  }

  /** Nothing new arrives: keys revoked, the app paused, every instance told (its caches, its providers, its in-app). */
  async #disable(appIds: string[]): Promise<void> {
    if (appIds.length === 0) return
    const at = new Date(this.d.now())
    await query(this.d.db, 'UPDATE app_keys SET revoked_at = $2 WHERE app_id = ANY($1::uuid[]) AND revoked_at IS NULL', [
      appIds,
      at,
    ])
    await query(this.d.db, 'UPDATE apps SET paused = true WHERE id = ANY($1::uuid[]) AND NOT paused', [appIds])
    for (const id of appIds) {
      await this.d.invalidate(id)
      await this.d.redis.publish(this.d.keys.credentials(), `${id}:fcm`)
      await this.d.redis.publish(this.d.keys.credentials(), `${id}:apns`)
      await this.d.redis.publish(this.d.keys.inappChanges(), id)
    }
  }

  /** The app's export files (finished and half-written), before their rows: a crash in between leaves rows to find. */
  async #exportFiles(appId: string): Promise<number> {
    if (!this.d.exportDir) return 0
    const r = await query<{ token_hash: string }>(this.d.db, 'SELECT token_hash FROM exports WHERE app_id = $1', [appId])
    if (r.rows.length === 0) return 0
    const names = await readdir(this.d.exportDir).catch(() => [] as string[])
    let n = 0
    for (const { token_hash } of r.rows) {
      const re = EXPORT_FILE(token_hash)
      for (const name of names) {
        if (!re.test(name)) continue
        await unlink(join(this.d.exportDir, name)).then(
          () => n++,
          () => {},
        )
      }
    }
    return n
  }

  async #leaves(table: string): Promise<string[]> {
    // A partitioned table is emptied partition by partition: a row's ctid names a place in one partition only.
    const r = await query<{ t: string }>(
      this.d.db,
      `SELECT relid::regclass::text AS t FROM pg_partition_tree(to_regclass($1)) WHERE isleaf`,
      [table],
    )
    return r.rows.length > 0 ? r.rows.map((x) => x.t) : [table]
  }

  async #count(t: TenantTable, id: string): Promise<number> {
    const r = await query<{ n: string }>(this.d.db, `SELECT count(*) AS n FROM ${t.table} WHERE ${t.where}`, [id])
    return Number(r.rows[0]?.n ?? 0)
  }

  /**
   * Deletes the tenant's rows of one table, `batch` rows per statement (each its own short transaction). On a table
   * with an index leading with the tenant's column, each statement takes the next rows through it. On one without
   * (deliveries, receipts), each statement takes the next rows in physical order, a TID range from where the last
   * one stopped, so the table is read once in all rather than once per batch; a pass that reaches the end starts over
   * until one finds nothing (rows written behind the cursor meanwhile).
   */
  async #erase(t: TenantTable, id: string): Promise<number> {
    const total = await this.#count(t, id)
    if (total === 0) return 0
    let done = 0
    for (const leaf of await this.#leaves(t.table)) {
      let cursor = '(0,0)'
      let seenThisPass = 0
      for (;;) {
        const r = await query<{ n: number; seen: number; last: string | null }>(
          this.d.db,
          `WITH v AS MATERIALIZED (SELECT ctid AS c FROM ${leaf} WHERE ${t.where} AND ctid > $2::tid LIMIT $3),
                d AS (DELETE FROM ${leaf} WHERE ctid = ANY(ARRAY(SELECT c FROM v)) AND ${t.where} RETURNING 1)
           SELECT (SELECT count(*) FROM d)::int AS n, (SELECT count(*) FROM v)::int AS seen,
                  (SELECT max(c) FROM v)::text AS last`,
          [id, cursor, this.d.batch],
        )
        const row = r.rows[0] as { n: number; seen: number; last: string | null }
        done += row.n
        seenThisPass += row.seen
        if (row.n > 0) this.d.progress(`${t.table}: ${fmt(done)} / ${fmt(Math.max(total, done))}`)
        if (t.indexed) {
          if (row.seen === 0) break
          continue
        }
        if (row.last !== null) {
          cursor = row.last
          continue
        }
        if (seenThisPass === 0) break // a whole pass found nothing of the tenant
        cursor = '(0,0)'
        seenThisPass = 0
      }
    }
    return done
  }
}
