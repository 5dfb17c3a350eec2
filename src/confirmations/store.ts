// The SQL of the confirmation channel: the app's mode, its webhook destinations (one active at a time) and the
// queue each destination drains (the app's events after its cursor).
import { type Actor, BY_CODE, record } from '../audit/record'
import { randomBytes, randomUUID } from 'node:crypto'
import { type Db, query, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import type { Vault } from '../core/vault'
import type { ConfigChange, ConfirmMode } from './validate'

/** The vault's AAD of a destination's secret: a sealed secret cannot be moved to another row or app. */
export function secretAad(appId: string, destinationId: string): string {
  return `webhook:${appId}:${destinationId}`
}

/** the spec, Confirmation channel: `pm_whsec_` + 64 hex characters. */
export function mintSecret(): string {
  return `pm_whsec_${randomBytes(32).toString('hex')}`
}

export interface Applied {
  mode: ConfirmMode
  /** The new secret when this call registered a destination; shown once. */
  secret: string | null
  destinationId: string | null
}

/**
 * Applies a PUT in one transaction (concurrent PUTs of one app serialize): the URL first (a new destination with a
 * new secret; the previous one deactivated and its queue taken over), then the mode. A refusal rolls everything back.
 *
 * A URL change first waits, with no transaction open, for a dispatcher's turn in flight on the app's queue (at most
 * one attempt's timeout), so the new destination starts from the cursor that turn recorded and is never sent to
 * beside the previous one; while it waits, no new turn is claimed (handover_until). Lock order in the transaction,
 * always: the active destination's row, then the app's row, both FOR NO KEY UPDATE, which serializes PUTs without
 * conflicting with the KEY SHARE that the app's sends take on the app's row. `lock_timeout` bounds any lock wait and
 * `lockTimeoutMs` the wait for the turn: past either the PUT answers 503 and writes nothing.
 */
export async function applyChange(
  db: Db,
  vault: Vault,
  appId: string,
  change: ConfigChange,
  now: Date,
  lockTimeoutMs: number,
  by: Actor = BY_CODE,
): Promise<Applied> {
  if (change.url !== undefined) {
    vault.require()
    await waitForTurn(db, appId, lockTimeoutMs)
  }
  try {
    return await tx(db, async (c) => {
      await query(c, `SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`])
      if (change.url !== undefined) {
        const held = await locked(
          query<{ busy: boolean }>(
            c,
            `SELECT leased_until IS NOT NULL AND leased_until >= clock_timestamp() AS busy FROM webhook_destinations
              WHERE app_id = $1 AND active FOR NO KEY UPDATE`,
            [appId],
          ),
        )
        if (held.rows[0]?.busy) throw new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'postgres' })
      }
      const app = await locked(
        query<{ confirm_mode: ConfirmMode }>(c, 'SELECT confirm_mode FROM apps WHERE id = $1 FOR NO KEY UPDATE', [appId]),
      )
      let mode = app.rows[0]?.confirm_mode ?? 'consulta'
      let secret: string | null = null
      let destinationId: string | null = null
      if (change.url !== undefined) {
        secret = mintSecret()
        destinationId = randomUUID()
        await registerDestination(c, vault, appId, destinationId, change.url, secret, now)
      }
      if (change.mode !== undefined) {
        if (change.mode === 'webhook' && destinationId === null && !(await activeDestination(c, appId))) {
          throw new ApiError('WEBHOOK_DESTINATION_MISSING')
        }
        mode = change.mode
        await query(c, 'UPDATE apps SET confirm_mode = $2 WHERE id = $1', [appId, mode])
      }
      // The destination's origin only: a URL's user, path or query may carry a credential of the customer's.
      await record(
        c,
        {
          by,
          action: 'webhook.configurado',
          appId,
          details: {
            mode,
            destination_id: destinationId,
            origin: change.url === undefined ? null : new URL(change.url).origin,
          },
        },
        now,
      )
      return { mode, secret, destinationId }
    })
  } catch (err) {
    // The queue goes back to its dispatchers at once, not when the pause would have ended by itself.
    if (change.url !== undefined) await resumeTurns(db, appId).catch(() => {})
    throw err
  }
}

/** How often a URL change looks whether the turn in flight has ended. */
const TURN_POLL_MS = 20

/**
 * Pauses new turns on the app's queue (until the deadline at most) and waits for the one in flight, if any, to
 * record its outcome or lose its lease. Past the deadline: 503, and the pause is lifted.
 */
async function waitForTurn(db: Db, appId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  const paused = await tx(db, async (c) => {
    await query(c, `SELECT set_config('lock_timeout', $1, true)`, [`${timeoutMs}ms`])
    return locked(
      query<{ busy: boolean }>(
        c,
        `UPDATE webhook_destinations SET handover_until = clock_timestamp() + $2 * interval '1 millisecond'
          WHERE app_id = $1 AND active
        RETURNING leased_until IS NOT NULL AND leased_until >= clock_timestamp() AS busy`,
        [appId, timeoutMs],
      ),
    )
  })
  let busy = paused.rows[0]?.busy ?? false
  while (busy) {
    if (Date.now() >= deadline) {
      await resumeTurns(db, appId).catch(() => {})
      throw new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'postgres' })
    }
    await new Promise((r) => setTimeout(r, TURN_POLL_MS))
    const r = await query<{ busy: boolean }>(
      db,
      `SELECT leased_until IS NOT NULL AND leased_until >= clock_timestamp() AS busy FROM webhook_destinations
        WHERE app_id = $1 AND active`,
      [appId],
    )
    busy = r.rows[0]?.busy ?? false
  }
}

async function resumeTurns(db: Db, appId: string): Promise<void> {
  await query(db, 'UPDATE webhook_destinations SET handover_until = NULL WHERE app_id = $1 AND active', [appId])
}

/** A lock wait past `lock_timeout` (55P03) is answered as Postgres being unavailable for this change: 503. */
async function locked<T>(p: Promise<T>): Promise<T> {
  try {
    return await p
  } catch (err) {
    if ((err as { code?: string }).code === '55P03') throw new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'postgres' })
    throw err
  }
}

/**
 * The new destination takes over the previous one's cursor and retry state (its pending events go to the new URL,
 * signed with the new secret: nothing is dropped by a URL change); a first destination starts after the app's
 * newest event. The previous row's lease is cleared: a turn whose lease had expired records nothing on it.
 */
async function registerDestination(c: Tx, vault: Vault, appId: string, id: string, url: string, secret: string, now: Date) {
  const prev = await query<{ last_seq: string; head_attempts: number }>(
    c,
    `UPDATE webhook_destinations SET active = false, deactivated_at = $2, lease_id = NULL, leased_until = NULL,
            handover_until = NULL
      WHERE app_id = $1 AND active
     RETURNING last_seq, head_attempts`,
    [appId, now],
  )
  const p = prev.rows[0]
  const start = p
    ? p.last_seq
    : ((await query<{ m: string }>(c, 'SELECT COALESCE(max(seq), 0) AS m FROM events WHERE app_id = $1', [appId])).rows[0]?.m ??
      '0')
  await query(
    c,
    `INSERT INTO webhook_destinations (id, app_id, url, sealed_secret, last_seq, head_attempts, next_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
    [id, appId, url, vault.seal(secret, secretAad(appId, id)), start, p?.head_attempts ?? 0, now],
  )
}

async function activeDestination(c: Db | Tx, appId: string): Promise<boolean> {
  const r = await query(c, 'SELECT 1 FROM webhook_destinations WHERE app_id = $1 AND active', [appId])
  return r.rows.length > 0
}

/** `fila_pendente` (the spec, Events): the app's events after the active destination's cursor. */
export async function pendingCount(db: Db, appId: string): Promise<number> {
  const r = await query<{ n: number }>(
    db,
    `SELECT count(e.seq)::int AS n FROM webhook_destinations d
       JOIN events e ON e.app_id = d.app_id AND e.seq > d.last_seq AND e.canal = 'webhook'
      WHERE d.app_id = $1 AND d.active`,
    [appId],
  )
  return r.rows[0]?.n ?? 0
}

export interface EnableResult {
  destino: string
  url: string
  estava_desativado: boolean
}

/** `pombo webhook enable`: clears the disable and the failure streak; the queue drains at once. */
export async function enableDestination(db: Db, appId: string, now: Date, by: Actor = BY_CODE): Promise<EnableResult | null> {
  return tx(db, async (c) => {
    const r = await query<{ id: string; url: string; was: boolean }>(
      c,
      `UPDATE webhook_destinations d SET disabled_at = NULL, consecutive_failures = 0, next_at = $2
         FROM (SELECT id, disabled_at IS NOT NULL AS was FROM webhook_destinations WHERE app_id = $1 AND active) o
        WHERE d.app_id = $1 AND d.id = o.id
        RETURNING d.id, d.url, o.was`,
      [appId, now],
    )
    const row = r.rows[0]
    if (!row) return null
    await record(c, { by, action: 'webhook.reativado', appId, details: { destination_id: row.id, was_disabled: row.was } }, now)
    return { destino: row.id, url: row.url, estava_desativado: row.was }
  })
}
