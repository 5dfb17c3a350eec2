// Retention of the audit log (PM_AUDIT_RETENTION_DAYS; 0 keeps it forever): records older than that are deleted,
// oldest first, a bounded chunk per statement, each statement its own short transaction. The only deletion of
// audit records there is: the table's trigger (0031_audit.sql) refuses any DELETE whose transaction has not set
// pombo.audit_retention, which only this job sets. Safe on many processes at once. Run by the retention pass
// (src/service/retention.ts) with the other lifetimes.
import { type Db, query, tx } from '../db/pool'
import { DAY_MS } from '../core/time'

export async function pruneAudit(db: Db, days: number, nowMs: number, chunk = 10_000): Promise<number> {
  if (days <= 0) return 0
  const before = new Date(nowMs - days * DAY_MS)
  let total = 0
  for (;;) {
    const n = await tx(db, async (c) => {
      await query(c, `SELECT set_config('pombo.audit_retention', 'on', true)`)
      const r = await query(
        c,
        `DELETE FROM audit_log WHERE (org_id, em, id) IN (
           SELECT org_id, em, id FROM audit_log WHERE em < $1 ORDER BY em, id LIMIT $2)`,
        [before, chunk],
      )
      return r.rowCount ?? 0
    })
    total += n
    if (n < chunk) return total
  }
}
