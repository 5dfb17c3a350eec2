// Group commit of registrations (docs/design/devices.md): requests that arrive while the database is
// busy are gathered and written in one multi-row upsert; each request is answered only after its batch commits.
// At low load a batch is whatever arrived in one event-loop turn (latency ~ one round trip); under load batches
// grow to `maxBatch` while `concurrency` statements are in flight, so throughput follows the database's batch rate.
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { GroupCommit, type GroupCommitStats } from '../db/group-commit'
import { type Db, retryingConflicts, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import type { Clock } from '../core/time'
import { boundDevices, lockAll, lockKey, retireInstallTokens, rowKey, type UpsertRow, upsertBatch } from './store'
import { PROFILE_KEYS, type RegistrationRow } from './validate'

export interface WriterOptions {
  /** Rows per statement (~500 gives the most registrations a second on 2 cores: fewer cost more statements). */
  maxBatch: number
  /** Statements in flight at once (pool connections the writer may hold). */
  concurrency: number
  /** Registrations waiting beyond this answer 503 at once: memory stays bounded whatever the load. */
  maxQueue: number
  /** the spec, Limits: devices per external_user_id. */
  devicesPerUser: number
}

/** One device of a batch: the merged row and the positions (in the batch) of every request that asked for it. */
interface Group {
  row: UpsertRow
  waiters: number[]
}

/** What each request of a batch gets: its player_id, or the error for it alone. */
type Results = Array<string | Error>

/**
 * Two registrations of one token in one batch become one row, as if applied in order: identity fields from the
 * later one (POST erases what it omits), profile fields and transporte from the later one unless it omitted them,
 * sessoes the highest seen.
 */
export function mergeRegistration(earlier: UpsertRow, later: RegistrationRow): UpsertRow {
  const m: UpsertRow = { ...later, id: earlier.id }
  m.transporte = later.transporte ?? earlier.transporte
  for (const k of PROFILE_KEYS) (m as unknown as Record<string, unknown>)[k] = later[k] ?? earlier[k]
  m.sessoes =
    later.sessoes === null ? earlier.sessoes : earlier.sessoes === null ? later.sessoes : Math.max(later.sessoes, earlier.sessoes)
  return m
}

export class RegistrationWriter {
  readonly #gc: GroupCommit<RegistrationRow, string>
  /** Its group commit as metrics see it (queue depth, batches). */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }
  /** Statements written and registrations they carried (tests and logs read them). */
  readonly stats = { statements: 0, registrations: 0 }

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly o: WriterOptions,
  ) {
    this.#gc = new GroupCommit((rows) => this.#write(rows), {
      ...o,
      onSplit: (err, rows) => this.log.error({ err, rows }, 'registration batch refused by Postgres; isolating the row'),
    })
  }

  get queued(): number {
    return this.#gc.queued
  }

  /** Resolves with the player_id once the row is durable. */
  submit(row: RegistrationRow): Promise<string> {
    return this.#gc.submit(row)
  }

  /** Refuses new work and resolves once everything accepted has been written. */
  stop(): Promise<void> {
    return this.#gc.stop()
  }

  async #write(batch: RegistrationRow[]): Promise<Results> {
    this.stats.statements++
    this.stats.registrations += batch.length
    const groups = new Map<string, Group>()
    batch.forEach((row, i) => {
      const k = rowKey(row.app_id, row.identifier)
      const g = groups.get(k)
      if (g) {
        g.row = mergeRegistration(g.row, row)
        g.waiters.push(i)
      } else {
        groups.set(k, { row: { ...row, id: randomUUID() }, waiters: [i] })
      }
    })
    // One lock order for every batch: concurrent batches touching the same rows wait, never deadlock.
    const sorted = [...groups.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1])
    const results: Results = new Array(batch.length)
    // A deadlock or serialisation failure is retried whole; any other failure is thrown to GroupCommit, which
    // narrows it down by halves to the registration Postgres refused.
    const refused = await retryingConflicts(() => this.#statement(sorted), undefined, 3)
    for (const g of sorted) {
      const r = refused.has(g) ? new ApiError('EXTERNAL_USER_DEVICE_LIMIT', { limite: this.o.devicesPerUser }) : g.row.id
      for (const i of g.waiters) results[i] = r
    }
    return results
  }

  /** Writes the batch; answers the groups refused by the per-user cap. Ids of existing devices are read back. */
  async #statement(groups: Group[]): Promise<Set<Group>> {
    const now = new Date(this.clock())
    const refused = new Set<Group>()
    const slow = groups.some((g) => g.row.external_user_id !== null || g.row.instalacao_id !== null)
    if (!slow) {
      // The common case: one autocommitted statement.
      this.#applyIds(
        groups,
        await upsertBatch(
          this.db,
          groups.map((g) => g.row),
          now,
        ),
      )
      return refused
    }
    // Rows that bind a user or name an install need the per-user cap and the install retirement to hold across
    // batches and instances: the transaction first takes an advisory lock per user and per install (sorted),
    // so two batches binding the same user are serialised, then checks and writes.
    await tx(this.db, async (c) => {
      const locks: string[] = []
      for (const g of groups) {
        if (g.row.external_user_id !== null) locks.push(lockKey(g.row.app_id, 'user', g.row.external_user_id))
        if (g.row.instalacao_id !== null) locks.push(lockKey(g.row.app_id, 'install', g.row.instalacao_id))
      }
      await lockAll(c, locks)
      for (const g of await this.#overCap(c, groups)) refused.add(g)
      const accepted = groups.filter((g) => !refused.has(g))
      if (accepted.length === 0) return
      this.#applyIds(
        accepted,
        await upsertBatch(
          c,
          accepted.map((g) => g.row),
          now,
        ),
      )
      // The last registration of an install in this batch is its newest token; every other token of it retires.
      const keepers = new Map<string, { app_id: string; instalacao_id: string; identifier: string }>()
      for (const g of accepted) {
        const inst = g.row.instalacao_id
        if (inst !== null)
          keepers.set(g.row.app_id + inst, { app_id: g.row.app_id, instalacao_id: inst, identifier: g.row.identifier })
      }
      await retireInstallTokens(c, [...keepers.values()], now)
    })
    return refused
  }

  #applyIds(groups: Group[], ids: Map<string, string>): void {
    for (const g of groups) {
      const id = ids.get(rowKey(g.row.app_id, g.row.identifier))
      if (!id) throw new Error('upsert returned no row for a registration')
      g.row.id = id
    }
  }

  /**
   * The groups that would bind an 11th valid device to a user. A valid device already bound to the user is not a
   * new binding; a device leaving a user in this batch frees its place. Dead tokens do not count toward the cap, so
   * an install's retired tokens never lock its user out (and reviving one is a new binding, checked like any other).
   */
  async #overCap(c: Tx, groups: Group[]): Promise<Group[]> {
    const binding = groups.filter((g) => g.row.external_user_id !== null)
    if (binding.length === 0) return []
    const pairs = new Map<string, [string, string]>()
    for (const g of binding)
      pairs.set(g.row.app_id + (g.row.external_user_id as string), [g.row.app_id, g.row.external_user_id as string])
    // user key → identifier → valid
    const users = new Map<string, Map<string, boolean>>()
    for (const d of await boundDevices(c, [...pairs.values()])) {
      const k = d.app_id + d.external_user_id
      const m = users.get(k) ?? new Map<string, boolean>()
      users.set(k, m)
      m.set(d.identifier, !d.invalid_identifier)
    }
    const inBatch = new Map<string, Group>()
    for (const g of groups) inBatch.set(rowKey(g.row.app_id, g.row.identifier), g)
    for (const [userKey, devices] of users) {
      for (const ident of [...devices.keys()]) {
        const g = inBatch.get(rowKey(userKey.slice(0, 36), ident))
        if (g && g.row.app_id + (g.row.external_user_id ?? '') !== userKey) devices.delete(ident)
      }
    }
    const over: Group[] = []
    for (const g of binding) {
      const k = g.row.app_id + (g.row.external_user_id as string)
      const devices = users.get(k) ?? new Map<string, boolean>()
      users.set(k, devices)
      // Already bound and valid: not a new binding. Bound but dead: registering revives it, so it counts as joining.
      if (devices.get(g.row.identifier) === true) continue
      let valid = 0
      for (const [ident, v] of devices) if (v && ident !== g.row.identifier) valid++
      if (valid >= this.o.devicesPerUser) over.push(g)
      else devices.set(g.row.identifier, true)
    }
    return over
  }
}
