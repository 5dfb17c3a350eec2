// A delivery worker: holds leases on a fair share of the work partitions, reads their streams through one consumer
// group, and runs one actor per app with work. A partition has one owner at a time (its lease), so an app's actor
// runs in one process only; when a worker dies its leases lapse, another takes them and claims the pending entries.
// A stream entry is acknowledged only when every device of its send has a durable outcome.
// A big send's slices are not tied to partitions: every worker leases them while it has room (slices.ts) and walks
// each in an actor of its app kept apart from the partition's actors (a partition lost does not stop a slice).
// On a single Redis one blocking XREADGROUP reads every owned stream. On a Redis Cluster each partition's stream is
// in its own slot (a multi-stream read would be CROSSSLOT) and a blocked read holds its connection, so each owned
// partition gets its own reader on a connection of its own to the partition's master.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Db } from '../db/pool'
import { query } from '../db/pool'
import { duplicateClient, isCluster, type RedisClient, slotConnection } from '../redis/client'
import type { Keys } from '../redis/keys'
import { partitionOf, WORK_GROUP } from '../redis/partitions'
import { firstError, keySlot, pipelineBySlot } from '../redis/slots'
import { type Clock, systemClock } from '../core/time'
import { type ActorDeps, AppActor } from './actor'
import { refreshPicked } from './audience'
import { abortableSleep } from './pacer'
import { decodeCarried } from '../handoff/carried'
import type { SendSource } from './actor'
import { type SliceLease, SliceRunner, type SliceSettings, sliceKey } from './slices'

export interface WorkerSettings {
  partitions: number
  leaseMs: number
  /** Stream entries read per call. */
  readCount: number
  /** Sends held at once (read, not yet finished): the reader waits below this (a backlog waits in Redis). */
  maxHeldSends: number
  /** While a worker works on a send it refreshes the send's `picked_at` this often (the sweeper's sign of life). */
  heartbeatMs: number
  slices: Omit<SliceSettings, 'leaseMs'>
}

const GROUP = WORK_GROUP
/** How often a reader held back by maxHeldSends looks again (a few ms of a worker's sends finish meanwhile). */
const ROOM_POLL_MS = 10

// Renews a lease only if it is still ours.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`

/** A worker's id: its host and process, and a nonce (a reused pid is another worker). */
function workerIdPrefix(pid: number): string {
  return `${hostname()}:${pid}:`
}

/**
 * What a worker process that died held, given back at once by whoever saw it exit (its process group's parent,
 * src/group/): its partition leases and its place among the live workers (Redis), and its slice leases (Postgres).
 * The next owner then takes them at its next look instead of after PM_LEASE_MS; its pending stream entries are
 * claimed by that owner as usual. Only the worker ids of `pid` on this host are touched. Answers the ids released.
 */
export async function releaseDeadWorker(
  d: { redis: RedisClient; keys: Keys; db: Db; partitions: number },
  pid: number,
): Promise<string[]> {
  const prefix = workerIdPrefix(pid)
  const ids = (await d.redis.zrange(d.keys.workers(), '0', '-1')).filter((id) => id.startsWith(prefix))
  if (ids.length === 0) return ids
  // Every partition's lease, owner-checked, in one pipeline per cluster slot.
  const leases = ids.flatMap((id) => Array.from({ length: d.partitions }, (_, p) => ({ key: d.keys.lease(p), id })))
  const res = await pipelineBySlot(
    d.redis,
    leases,
    (l) => l.key,
    (pipe, l) => {
      pipe.eval(RELEASE, 1, l.key, l.id)
    },
  )
  const failed = firstError(res)
  if (failed) throw failed
  await d.redis.zrem(d.keys.workers(), ...ids)
  await query(d.db, `UPDATE send_slices SET lease_until = '-infinity' WHERE owner = ANY($1::text[]) AND done_at IS NULL`, [ids])
  return ids
}

export class DeliveryWorker {
  readonly id = `${workerIdPrefix(process.pid)}${randomBytes(3).toString('hex')}`
  readonly #owned = new Set<number>()
  readonly #actors = new Map<string, AppActor>()
  /** Actors walking leased slices, per app. */
  readonly #sliceActors = new Map<string, AppActor>()
  readonly #slices: SliceRunner
  /** Stream entries per send, acknowledged together when the send is finished. */
  readonly #entries = new Map<string, Array<{ stream: string; id: string }>>()
  /** Acknowledgements waiting for the end of the event-loop turn, per stream. */
  readonly #acks = new Map<string, string[]>()
  #ackScheduled = false
  readonly #stop = new AbortController()
  readonly #streamPartition = new Map<string, number>()
  #reader: RedisClient | null = null
  /** The reader connection's id on the server (none on a cluster: no such reader), learnt at each (re)connection:
   *  stop() ends a blocking read with CLIENT UNBLOCK instead of waiting out its BLOCK. */
  #readerId: number | null = null
  /** Cluster only: the reader of each owned partition (it ends once the partition is no longer ours). */
  readonly #partitionReaders = new Map<number, Promise<void>>()
  #loops: Promise<unknown>[] = []
  readonly #clock: Clock

  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly s: WorkerSettings,
    private readonly actorDeps: Omit<ActorDeps, 'finished' | 'sliceFinished' | 'slicesPlanned'>,
    private readonly log: Logger,
    clock?: Clock,
  ) {
    this.#clock = clock ?? systemClock
    this.#slices = new SliceRunner(
      db,
      this.id,
      { ...s.slices, leaseMs: s.leaseMs },
      this.#clock,
      log,
      (lease) => this.#startSlice(lease),
      (keys) => {
        for (const a of this.#sliceActors.values()) a.abandon(keys)
      },
    )
  }

  /** Slices this worker holds (metrics, tests). */
  get heldSlices(): number {
    return this.#slices.held
  }

  /** Sends read from the streams and not finished yet (bounded by maxHeldSends; tests, metrics). */
  get heldSends(): number {
    return this.#entries.size
  }

  get maxHeldSends(): number {
    return this.s.maxHeldSends
  }

  /**
   * Entries the next read may take: what is left below maxHeldSends, waiting (in short polls) while nothing is. A
   * backlog then waits in the stream, not in this process: memory, the heartbeat's rows and the actors' lanes stay
   * bounded whatever its size, and the sweeper leaves unread entries alone (Handoff.sweep).
   */
  async #room(signal: AbortSignal, streams = 1): Promise<number> {
    for (;;) {
      const room = this.s.maxHeldSends - this.#entries.size
      // COUNT is per stream: one read of every owned stream takes up to `streams` times it.
      if (room > 0 || signal.aborted) return Math.max(1, Math.min(this.s.readCount, Math.floor(room / streams)))
      await abortableSleep(ROOM_POLL_MS, signal)
    }
  }

  /** App actors alive in this process (metrics). */
  get actorCount(): number {
    return this.#actors.size
  }

  get ownedPartitions(): number[] {
    return [...this.#owned].sort((a, b) => a - b)
  }

  async start(): Promise<void> {
    const cluster = isCluster(this.redis)
    if (!cluster) {
      // Named, so an operator's CLIENT LIST tells which worker a blocked read belongs to.
      const reader = duplicateClient(this.redis, `pombo-reader:${this.id}`)
      this.#reader = reader
      // Asked before the first read: a question queued behind a blocking read would wait out its BLOCK. Asked again
      // after a reconnection (a new connection has a new id).
      const learnId = async () => {
        this.#readerId = Number(await reader.client('ID'))
      }
      reader.on('ready', () => void learnId().catch(() => {}))
      await learnId()
    }
    await this.#balance()
    this.#loops = [
      this.#every(this.s.leaseMs / 3, () => this.#balance()),
      this.#every(this.s.leaseMs / 3, () => this.#slices.renew()),
      this.#every(this.s.slices.pollMs, () => this.#slices.poll()),
      this.#every(this.s.heartbeatMs, () => this.#heartbeat()),
    ]
    if (!cluster) this.#loops.push(this.#read())
  }

  /** Stops reading, lets actors finish what is in flight, releases the leases. Pending entries stay for the next owner. */
  async stop(): Promise<void> {
    this.#stop.abort()
    // The reader may be in a blocking read (up to 500 ms): it ends now, answering as a timeout would, so it has taken
    // nothing. A read sent just after this waits out its BLOCK, as before.
    if (this.#readerId !== null) await this.redis.client('UNBLOCK', this.#readerId).catch(() => {})
    // Until every read and poll under way has ended, one may still hand work over: the actors are stopped until none
    // is left unstopped. An actor left running would tick forever, and keep the process alive, after the stop.
    const stopped = new Set<AppActor>()
    for (;;) {
      const left = [...this.#actors.values(), ...this.#sliceActors.values()].filter((a) => !stopped.has(a))
      if (left.length === 0) break
      for (const a of left) stopped.add(a)
      await Promise.all(left.map((a) => a.stop()))
    }
    await Promise.allSettled(this.#loops)
    await this.#slices.stop()
    await Promise.allSettled([...this.#partitionReaders.values()])
    for (const p of this.#owned) await this.redis.eval(RELEASE, 1, this.keys.lease(p), this.id).catch(() => {})
    this.#owned.clear()
    await this.redis.zrem(this.keys.workers(), this.id).catch(() => {})
    this.#reader?.disconnect()
  }

  async #every(ms: number, f: () => Promise<void>): Promise<void> {
    while (!this.#stop.signal.aborted) {
      await abortableSleep(ms, this.#stop.signal)
      if (this.#stop.signal.aborted) return
      await f().catch((err) => this.log.warn({ err: String(err) }, 'worker housekeeping failed'))
    }
  }

  /** Renew our leases, then take free partitions up to a fair share of the live workers. */
  async #balance(): Promise<void> {
    const now = Date.now()
    await this.redis.zadd(this.keys.workers(), now, this.id)
    await this.redis.zremrangebyscore(this.keys.workers(), 0, now - this.s.leaseMs * 2)
    const live = Math.max(1, await this.redis.zcard(this.keys.workers()))
    for (const p of [...this.#owned]) {
      if (Number(await this.redis.eval(RENEW, 1, this.keys.lease(p), this.id, this.s.leaseMs)) === 1) continue
      // Lost it (Redis flushed, or we stalled past the lease). Still free: take it back and carry on.
      this.#owned.delete(p)
      if ((await this.redis.set(this.keys.lease(p), this.id, 'PX', this.s.leaseMs, 'NX')) === 'OK') {
        this.log.warn({ partition: p }, 'partition lease lost and taken back')
        await this.#adopt(p)
        continue
      }
      // Another worker holds it and has claimed (or will claim) our pending entries: one actor per app, so ours stop.
      this.log.warn({ partition: p }, 'partition lease lost to another worker: its actors here stop')
      this.#drop(p)
    }
    const share = Math.ceil(this.s.partitions / live)
    if (this.#owned.size > share) await this.#handBack()
    for (let p = 0; p < this.s.partitions && this.#owned.size < share; p++) {
      if (this.#owned.has(p)) continue
      if ((await this.redis.set(this.keys.lease(p), this.id, 'PX', this.s.leaseMs, 'NX')) === 'OK') {
        await this.#adopt(p)
      }
    }
  }

  /**
   * Another worker joined and we hold more than a fair share: give back one partition on which nothing is under way
   * here (no actor with work, no unacknowledged entry), so the newcomer takes it with SET NX. One per round, so the
   * shares settle without thrashing; a busy partition stays until its work is done.
   */
  async #handBack(): Promise<void> {
    const busy = new Set<number>()
    for (const [appId, a] of this.#actors) if (!a.idle) busy.add(partitionOf(appId, this.s.partitions))
    for (const list of this.#entries.values()) for (const e of list) busy.add(this.#partitionOfStream(e.stream))
    const spare = [...this.#owned].sort((a, b) => b - a).find((p) => !busy.has(p))
    if (spare === undefined) return
    this.#owned.delete(spare) // first: the reader stops asking for it
    await this.redis.eval(RELEASE, 1, this.keys.lease(spare), this.id)
    this.log.info({ partition: spare }, 'partition handed back to share the work')
  }

  /**
   * Forgets a partition's work here: its actors stop (in-flight requests finish and are recorded), then its
   * unacknowledged entries go back to the end of their stream. The new owner claimed what was pending when it adopted
   * the partition, and never looks again: an entry this worker read after that would stay pending here.
   */
  #drop(p: number): void {
    const stopped: Promise<void>[] = []
    for (const [appId, a] of this.#actors) {
      if (partitionOf(appId, this.s.partitions) !== p) continue
      this.#actors.delete(appId)
      stopped.push(a.stop().catch((err) => this.log.warn({ err: String(err), app: appId }, 'actor stop failed')))
    }
    const left: Array<{ stream: string; id: string }> = []
    for (const [sendId, list] of this.#entries) {
      const rest = list.filter((e) => this.#partitionOfStream(e.stream) !== p)
      left.push(...list.filter((e) => this.#partitionOfStream(e.stream) === p))
      if (rest.length === 0) this.#entries.delete(sendId)
      else this.#entries.set(sendId, rest)
    }
    if (left.length > 0) void Promise.all(stopped).then(() => this.#handOver(left))
  }

  /** Moves entries this worker still holds to the end of their stream (their fields read back from it). */
  async #handOver(entries: ReadonlyArray<{ stream: string; id: string }>): Promise<void> {
    for (const e of entries) {
      const [entry] = (await this.redis.xrange(e.stream, e.id, e.id).catch(() => [])) as Array<[string, string[]]>
      if (entry) this.#move(e.stream, e.stream, e.id, entry[1], 'an entry of a partition lost to another worker')
    }
  }

  #partitionOfStream(stream: string): number {
    if (this.#streamPartition.size === 0)
      for (let p = 0; p < this.s.partitions; p++) this.#streamPartition.set(this.keys.workStream(p), p)
    return this.#streamPartition.get(stream) ?? -1
  }

  /** A partition just became ours: make sure its group exists and claim what its previous owner left pending. */
  async #adopt(p: number): Promise<void> {
    const stream = this.keys.workStream(p)
    await this.#ensureGroup(stream)
    this.#owned.add(p)
    if (isCluster(this.redis)) this.#readPartition(p)
    let cursor = '0-0'
    do {
      const [next, entries] = (await this.redis.xautoclaim(stream, GROUP, this.id, 0, cursor, 'COUNT', 500)) as [
        string,
        Array<[string, string[]] | null>,
      ]
      // Claimed, not fresh: the dead consumer may have delivered their sends already, so each is loaded.
      for (const e of entries) if (e) this.#dispatch(stream, e[0], e[1], false)
      cursor = next
    } while (cursor !== '0-0')
  }

  async #ensureGroup(stream: string): Promise<void> {
    // From the start of the stream: entries added before the group existed are work too.
    await this.redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
      if (!/BUSYGROUP/.test(err.message)) throw err
    })
  }

  async #read(): Promise<void> {
    const reader = this.#reader as RedisClient
    while (!this.#stop.signal.aborted) {
      const owned = this.ownedPartitions
      if (owned.length === 0) {
        await new Promise((r) => setTimeout(r, 200))
        continue
      }
      const streams = owned.map((p) => this.keys.workStream(p))
      const count = await this.#room(this.#stop.signal, streams.length)
      if (this.#stop.signal.aborted) return
      try {
        const res = (await reader.xreadgroup(
          'GROUP',
          GROUP,
          this.id,
          'COUNT',
          count,
          'BLOCK',
          500,
          'STREAMS',
          ...streams,
          ...streams.map(() => '>'),
        )) as Array<[string, Array<[string, string[]]>]> | null
        this.#took(res)
      } catch (err) {
        // Redis lost the group (flushed): recreate it; the sweeper re-enqueues what was lost.
        if (/NOGROUP/.test(String(err))) for (const s of streams) await this.#ensureGroup(s).catch(() => {})
        else await new Promise((r) => setTimeout(r, 200))
      }
    }
  }

  /** Cluster: reads partition `p`'s stream while it is ours, on a connection of its own to the slot's master. */
  #readPartition(p: number): void {
    if (this.#partitionReaders.has(p)) return
    const cluster = this.redis
    if (!isCluster(cluster)) return
    const stream = this.keys.workStream(p)
    const slot = keySlot(stream)
    const run = async (): Promise<void> => {
      let conn: ReturnType<typeof slotConnection> = null
      try {
        while (!this.#stop.signal.aborted && this.#owned.has(p)) {
          conn ??= slotConnection(cluster, slot, `pombo-reader-p${p}`)
          if (!conn) {
            await new Promise((r) => setTimeout(r, 200))
            continue
          }
          const count = await this.#room(this.#stop.signal)
          if (this.#stop.signal.aborted) break
          try {
            const res = (await conn.xreadgroup(
              'GROUP',
              GROUP,
              this.id,
              'COUNT',
              count,
              'BLOCK',
              500,
              'STREAMS',
              stream,
              '>',
            )) as Array<[string, Array<[string, string[]]>]> | null
            this.#took(res)
          } catch (err) {
            // The node went away, the slot moved (MOVED) or Redis lost the group: a fresh connection to whoever
            // serves the slot now, once the cluster client has looked again.
            conn.disconnect()
            conn = null
            if (/NOGROUP/.test(String(err))) await this.#ensureGroup(stream).catch(() => {})
            else {
              cluster.refreshSlotsCache()
              await new Promise((r) => setTimeout(r, 200))
            }
          }
        }
      } finally {
        conn?.disconnect()
        this.#partitionReaders.delete(p)
      }
    }
    this.#partitionReaders.set(p, run())
  }

  #took(res: Array<[string, Array<[string, string[]]>]> | null): void {
    for (const [stream, entries] of res ?? []) {
      // A partition handed back (or lost) while this read was under way: its new owner may have adopted it already,
      // claiming what was pending then, so an entry left pending here would wait until the partition moved again
      // (its send until the sweeper's grace). Each goes back to the end of its stream, where the owner reads it.
      if (!this.#owned.has(this.#partitionOfStream(stream))) {
        for (const [id, fields] of entries) this.#move(stream, stream, id, fields, 'an entry of a partition no longer ours')
        continue
      }
      for (const [id, fields] of entries) this.#dispatch(stream, id, fields, true)
    }
  }

  /**
   * Adds the entry to stream `to` and acknowledges it in `from` once the copy is stored (a failure leaves it pending
   * here). Its carried send is left out: the copy is loaded where it lands, since another entry of the same send may
   * have been delivered meanwhile.
   */
  #move(from: string, to: string, id: string, fields: string[], what: string): void {
    this.redis
      .xadd(to, '*', ...withoutCarried(fields))
      .then(() => this.redis.xack(from, GROUP, id))
      .catch((err) => this.log.warn({ err: String(err), stream: from, entry: id }, `could not move ${what}; it stays pending`))
  }

  /** `fresh`: read for the first time (XREADGROUP >), so a send the entry carries can be trusted (carried.ts). */
  #dispatch(stream: string, id: string, fields: string[], fresh: boolean): void {
    // Read while stopping: left pending, for the next owner (an actor started now would never be stopped).
    if (this.#stop.signal.aborted) return
    const f: Record<string, string> = {}
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string
    const appId = f.a
    const sendId = f.s
    if (!appId || !sendId) {
      // A malformed entry is dropped; a failed ack only means it is read again and dropped again.
      this.redis.xack(stream, GROUP, id).catch(() => {})
      return
    }
    const home = partitionOf(appId, this.s.partitions)
    if (home !== this.#partitionOfStream(stream)) {
      // On another partition's stream (written by a process that hashed with another count): moved to the app's own
      // stream, so only the owner of the app's partition runs its actor.
      this.#move(stream, this.keys.workStream(home), id, fields, 'a misrouted entry')
      return
    }
    const list = this.#entries.get(sendId) ?? []
    list.push({ stream, id })
    this.#entries.set(sendId, list)
    let actor = this.#actors.get(appId)
    if (!actor) {
      actor = new AppActor(appId, {
        ...this.actorDeps,
        finished: (a, s) => this.#finished(a, s),
        slicesPlanned: () => this.#slices.wake(),
      })
      this.#actors.set(appId, actor)
    }
    const carried = fresh && f.c ? decodeCarried(appId, sendId, f.l === '1' ? 1 : 0, f.c, this.actorDeps.pageSize) : null
    actor
      .add(sendId, carried)
      .catch((err) => this.log.warn({ err: String(err), app: appId, send: sendId }, 'could not take a send'))
  }

  /** A slice was leased: its send's meta (batched with other loads), then an actor of its app walks it. */
  async #startSlice(lease: SliceLease): Promise<void> {
    const loaded = await (this.actorDeps.sends as SendSource).load({ appId: lease.appId, sendId: lease.sendId })
    // Leased while stopping: its lease lapses and another worker takes the slice.
    if (this.#stop.signal.aborted) return
    if (!loaded || loaded.meta.completed) {
      await this.#slices.finish(lease, true) // nothing left to deliver in it
      return
    }
    let actor = this.#sliceActors.get(lease.appId)
    if (!actor) {
      actor = new AppActor(lease.appId, {
        ...this.actorDeps,
        finished: () => {},
        sliceFinished: (l, complete) => this.#slices.finish(l, complete),
      })
      this.#sliceActors.set(lease.appId, actor)
    }
    actor.addSlice(loaded.meta, lease)
    this.log.debug({ app: lease.appId, send: lease.sendId, slice: sliceKey(lease.sendId, lease.slice) }, 'slice leased')
  }

  #finished(_appId: string, sendId: string): void {
    const entries = this.#entries.get(sendId) ?? []
    this.#entries.delete(sendId)
    for (const e of entries) {
      const ids = this.#acks.get(e.stream)
      if (ids) ids.push(e.id)
      else this.#acks.set(e.stream, [e.id])
    }
    if (this.#acks.size > 0 && !this.#ackScheduled) {
      this.#ackScheduled = true
      setImmediate(() => this.#flushAcks())
    }
  }

  /** The acknowledgements of one event-loop turn: one XACK per stream, pipelined (per cluster slot). A lost ack only
   *  means a redelivered entry, which finds its send closed. */
  #flushAcks(): void {
    this.#ackScheduled = false
    const acks = [...this.#acks]
    this.#acks.clear()
    pipelineBySlot(
      this.redis,
      acks,
      ([stream]) => stream,
      (pipe, [stream, ids]) => {
        pipe.xack(stream, GROUP, ...ids)
      },
    ).catch(() => {})
  }

  /** Refreshes picked_at of every send an actor is working on (the sweeper leaves them alone); retires idle actors. */
  async #heartbeat(): Promise<void> {
    const rows: Array<{ appId: string; sendId: string }> = []
    for (const [appId, a] of this.#sliceActors) {
      if (!a.idle) continue
      this.#sliceActors.delete(appId)
      void a.stop()
    }
    for (const [appId, a] of this.#actors) {
      if (a.idle) {
        this.#actors.delete(appId) // memory stays bounded by the apps with work, not every app ever seen
        void a.stop()
        continue
      }
      for (const sendId of a.activeSends()) rows.push({ appId, sendId })
    }
    await refreshPicked(this.db, rows, new Date(this.#clock()))
  }
}

/** An entry's fields without its carried send (`c`). */
function withoutCarried(fields: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] !== 'c') out.push(fields[i] as string, fields[i + 1] as string)
  return out
}
