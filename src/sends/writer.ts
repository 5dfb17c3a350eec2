// The send hot path's database side: many requests' sends written together (group commit), with no explicit
// transaction: the listed ids resolved inside Postgres (a read per target kind), then every send row, each carrying its
// delivery list, and its idempotency record written by one statement, which is atomic. Each caller is answered
// after that statement with the answer it will also replay from then on.
import type { Db } from '../db/pool'
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from '../db/group-commit'
import { encodeCarried } from '../handoff/carried'
import * as store from './store'

/** What a send resolved to; `render` turns it into the exact answer bytes (stored for idempotent replays). */
export interface Resolution {
  recipients: number
  /** List targets: the reachable device ids (the send's delivery list); null for segments. */
  audience: string[] | null
  /** The same devices with their tokens, in the same order; null for segments. */
  targets: store.Target[] | null
  /** Player ids (as sent) that were malformed, unknown or unreachable. */
  invalidPlayers: string[]
  invalidUsers: string[]
}

export interface SendJob {
  row: Omit<store.SendRow, 'recipients' | 'audience' | 'idemKey'>
  /** Well-formed, de-duplicated ids (lower-case UUIDs or user ids) and, for players, the spelling each arrived in. */
  players?: { ids: string[]; asSent: Map<string, string>; malformed: string[] }
  users?: string[]
  /** Segment sends carry their estimate; the worker expands the segment. */
  segmentEstimate?: number
  mask: number
  idem?: { key: string; hash: string; expiresAt: Date }
  render(r: Resolution): string
}

export interface WrittenSend {
  /** False when nobody was reachable: nothing was stored but the idempotency record. */
  created: boolean
  answer: string
  /** A small list send due now, whole, for its hand-off entry (src/handoff/carried.ts); null otherwise. */
  carried: string | null
}

/** Another request stored an answer under the same idempotency key first (Redis lost the in-flight lock). */
export class IdempotencyRace extends Error {}

export class SendWriter {
  readonly #gc: GroupCommit<SendJob, WrittenSend>
  /** Its group commit as metrics see it (queue depth, batches). */
  get groupCommit(): GroupCommitStats {
    return this.#gc
  }

  constructor(
    private readonly db: Db,
    opts: GroupCommitOptions,
    /** Sends of at most this many devices are carried whole by their hand-off (0: none). */
    private readonly carryDevices = 0,
  ) {
    // A batch carries at most ~2,000 listed ids: a list send of 2,000 goes alone, so several of them are written
    // by several backends at once instead of one after another in one statement.
    this.#gc = new GroupCommit((jobs) => this.#writeBatch(jobs), {
      ...opts,
      weight: (j) => 1 + (j.players?.ids.length ?? 0) + (j.users?.length ?? 0),
      maxWeight: 2_500,
    })
  }

  submit(job: SendJob): Promise<WrittenSend> {
    return this.#gc.submit(job)
  }

  stop(): Promise<void> {
    return this.#gc.stop()
  }

  /**
   * No explicit transaction: the audiences are resolved (a read per target kind present), then the sends and
   * their idempotency records are written by one statement. A send whose key another request holds is not written
   * and answers IdempotencyRace (the service then replays the winner's answer).
   */
  async #writeBatch(jobs: SendJob[]): Promise<Array<WrittenSend | Error>> {
    const reqs = (kind: 'players' | 'users') =>
      jobs.flatMap((j) => {
        const ids = kind === 'players' ? j.players?.ids : j.users
        return ids && ids.length > 0 ? [{ sendId: j.row.id, appId: j.row.appId, ids, mask: j.mask }] : []
      })
    const players = await store.resolvePlayers(this.db, reqs('players'))
    const users = await store.resolveUsers(this.db, reqs('users'))
    const sends: store.SendRow[] = []
    const idem: store.IdemRow[] = []
    const written: Array<WrittenSend | Error> = []
    // ON CONFLICT cannot touch one row twice in a statement: a second send with the same key in this batch lost.
    const keys = new Set<string>()
    for (const j of jobs) {
      const idemKey = j.idem ? `${j.row.appId}:${j.idem.key}` : null
      if (idemKey && keys.has(idemKey)) {
        written.push(new IdempotencyRace())
        continue
      }
      if (idemKey) keys.add(idemKey)
      const r = resolve(j, players.get(j.row.id), users.get(j.row.id))
      const answer = j.render(r)
      // Completed in place: spreading a 20-field row into a new object showed in the send path's profile.
      if (r.recipients > 0)
        sends.push(Object.assign(j.row, { recipients: r.recipients, audience: r.audience, idemKey: j.idem?.key ?? null }))
      if (j.idem) {
        idem.push({
          appId: j.row.appId,
          key: j.idem.key,
          bodyHash: j.idem.hash,
          status: 200,
          lane: j.row.lane,
          exact: j.row.recipientsExact,
          response: answer,
          createdAt: j.row.queuedAt,
          expiresAt: j.idem.expiresAt,
        })
      }
      written.push({ created: r.recipients > 0, answer, carried: this.#carried(j, r) })
    }
    const won = await store.writeSends(this.db, sends, idem)
    return jobs.map((j, i) => {
      const w = written[i] as WrittenSend | Error
      return w instanceof Error || !j.idem || won.has(`${j.row.appId}:${j.idem.key}`) ? w : new IdempotencyRace()
    })
  }

  /** The hand-off's copy of a small list send that is due now; a scheduled, large or heavy (over CARRY_MAX_BYTES)
   *  send is loaded by its worker. */
  #carried(j: SendJob, r: Resolution): string | null {
    const t = r.targets
    if (!t || t.length === 0 || t.length > this.carryDevices || j.row.sendAfter !== null || j.row.targetKind === 'segments')
      return null
    return encodeCarried({
      targetKind: j.row.targetKind,
      platformMask: j.mask,
      ttlS: j.row.ttlS,
      queuedAtMs: j.row.queuedAt.getTime(),
      message: j.row.message,
      devices: t,
    })
  }
}

function resolve(j: SendJob, players?: store.Target[], users?: Map<string, store.Target[]>): Resolution {
  if (j.players) {
    // Each device once (splitPlayerIds listed each id once), in the order Postgres answered.
    const targets = players ?? []
    const audience = targets.map((t) => t.id)
    const matched = new Set(audience)
    const invalid = [...j.players.malformed]
    // In request order, as sent.
    for (const id of j.players.ids) if (!matched.has(id)) invalid.push(j.players.asSent.get(id) ?? id)
    return { recipients: targets.length, audience, targets, invalidPlayers: invalid, invalidUsers: [] }
  }
  if (j.users) {
    const byUser = users ?? new Map<string, store.Target[]>()
    const targets = [...byUser.values()].flat()
    return {
      recipients: targets.length,
      audience: targets.map((t) => t.id),
      targets,
      invalidPlayers: [],
      invalidUsers: j.users.filter((u) => !byUser.has(u)),
    }
  }
  return { recipients: j.segmentEstimate ?? 0, audience: null, targets: null, invalidPlayers: [], invalidUsers: [] }
}
