// POST /api/v1/notifications after validation: idempotency, quota, the free-plan gate, the audience, the durable
// write (group commit) and the hand-off to the app's work partition. The answer never waits for a provider.
import { randomUUID } from 'node:crypto'
import type { AppRecord } from '../apps/store'
import type { Db } from '../db/pool'
import { ApiError } from '../core/errors'
import { isUuid } from '../http/router'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { WindowCounter } from '../redis/window-counter'
import { type Clock, DAY_MS } from '../core/time'
import { DEFAULT_LIMITS, type Limits } from '../core/config'
import type { MauGate } from './mau'
import type { Handoff } from '../handoff/stream'
import * as store from './store'
import type { Lane, SendInput } from '../message/types'
import { IdempotencyRace, type Resolution, type SendJob, type SendWriter } from './writer'

export const NOBODY_REACHABLE =
  'Nenhum destinatário alcançável: os dispositivos indicados são desconhecidos, inválidos, de teste ou estão fora das plataformas escolhidas.'

export interface SendAnswer {
  body: string
  lane: Lane
  exact: boolean
  replay: boolean
}

export interface CreateSend {
  app: AppRecord
  input: SendInput
  /** The canonical hash of the raw body (idempotency). */
  bodyHash: string
  /** Header, then body `idempotency_key`, then `external_id`. */
  idemKey?: string
  dryRun: boolean
}

export function platformMask(p: SendInput['platforms']): number {
  return (
    (p.ios ? store.PLATFORM_BIT.ios : 0) | (p.android ? store.PLATFORM_BIT.android : 0) | (p.web ? store.PLATFORM_BIT.web : 0)
  )
}

/**
 * The answer of a send (the spec, Sends, the four 200 shapes), in a fixed key order. The request's `external_id` is
 * "echoed in response" (the spec, Notification): the last key when the request had one, no key when it did not
 * (docs/decisions.md).
 */
export function renderAnswer(id: string, r: Resolution, externalId?: string): string {
  const out: Record<string, unknown> =
    r.recipients === 0 ? { id: '', recipients: 0, errors: [NOBODY_REACHABLE] } : { id, recipients: r.recipients }
  if (r.recipients > 0 && (r.invalidPlayers.length > 0 || r.invalidUsers.length > 0)) {
    const errors: Record<string, string[]> = {}
    if (r.invalidPlayers.length > 0) errors.invalid_player_ids = r.invalidPlayers
    if (r.invalidUsers.length > 0) errors.invalid_external_user_ids = r.invalidUsers
    out.errors = errors
  }
  if (externalId !== undefined) out.external_id = externalId
  return JSON.stringify(out)
}

/** The dry-run shape: audience counted, nothing stored. */
function dryRunAnswer(recipients: number, externalId: string | undefined): string {
  const out: Record<string, unknown> = { id: '', recipients, dry_run: true }
  if (externalId !== undefined) out.external_id = externalId
  return JSON.stringify(out)
}

export class SendService {
  constructor(
    private readonly db: Db,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly writer: SendWriter,
    private readonly handoff: Handoff,
    private readonly quota: WindowCounter,
    private readonly mau: MauGate,
    private readonly clock: Clock,
    private readonly limits: Pick<
      Limits,
      'idempotencyTtlDays' | 'idempotencyWaitMs' | 'idempotencyLockTtlMs' | 'idempotencyPollMs'
    > = DEFAULT_LIMITS,
  ) {}

  async create(c: CreateSend): Promise<SendAnswer> {
    const lane = c.input.lane
    const exact = c.input.target.kind !== 'segments'
    if (c.dryRun) {
      // spec: a dry run resolves the audience for real and consumes quota, but stores nothing and keeps the key free.
      await this.#takeQuota(c.app)
      await this.mau.check(c.app)
      const recipients = await this.#estimate(c)
      return { body: dryRunAnswer(recipients, c.input.externalId), lane, exact, replay: false }
    }
    if (!c.idemKey) return this.#create(c, undefined)

    const now = new Date(this.clock())
    const prior = await store.findIdempotency(this.db, c.app.id, c.idemKey, now)
    if (prior) return this.#replay(prior, c.bodyHash)
    const lockKey = this.keys.idempotencyLock(c.app.id, c.idemKey)
    const token = randomUUID()
    if ((await this.redis.set(lockKey, token, 'PX', this.limits.idempotencyLockTtlMs, 'NX')) !== 'OK')
      return this.#waitForFirst(c)
    try {
      // The first call may have committed between the lookup and the lock.
      const settled = await store.findIdempotency(this.db, c.app.id, c.idemKey, now)
      if (settled) return this.#replay(settled, c.bodyHash)
      return await this.#create(c, c.idemKey)
    } catch (err) {
      if (err instanceof IdempotencyRace) {
        const winner = await store.findIdempotency(this.db, c.app.id, c.idemKey, new Date(this.clock()))
        if (winner) return this.#replay(winner, c.bodyHash)
      }
      throw err
    } finally {
      // Released only if still ours (a lock that outlived its TTL may belong to someone else now).
      await this.redis
        .eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, lockKey, token)
        .catch(() => {})
    }
  }

  async #create(c: CreateSend, idemKey: string | undefined): Promise<SendAnswer> {
    await this.#takeQuota(c.app)
    await this.mau.check(c.app)
    const job = await this.#job(c, idemKey)
    const written = await this.writer.submit(job)
    if (written.created) this.handoff.enqueue(c.app.id, job.row.id, c.input.lane, c.input.sendAfterMs, written.carried)
    return { body: written.answer, lane: c.input.lane, exact: job.row.recipientsExact, replay: false }
  }

  async #job(c: CreateSend, idemKey: string | undefined): Promise<SendJob> {
    const { input, app } = c
    const id = randomUUID()
    const now = this.clock()
    const t = input.target
    const exact = t.kind !== 'segments'
    const job: SendJob = {
      row: {
        appId: app.id,
        id,
        lane: input.lane,
        targetKind: t.kind,
        includedSegments: t.kind === 'segments' ? t.names : [],
        includePlayerIds: t.kind === 'players' ? t.ids : null,
        includeExternalUserIds: t.kind === 'users' ? t.ids : null,
        platforms: input.platforms,
        message: input.message,
        name: input.name ?? null,
        headings: input.headings ?? null,
        contents: input.contents,
        externalId: input.externalId ?? null,
        recipientsExact: exact,
        ttlS: input.ttlS,
        queuedAt: new Date(now),
        sendAfter: input.sendAfterMs === null ? null : new Date(input.sendAfterMs),
      },
      mask: platformMask(input.platforms),
      idem: idemKey
        ? { key: idemKey, hash: c.bodyHash, expiresAt: new Date(now + this.limits.idempotencyTtlDays * DAY_MS) }
        : undefined,
      render: (r) => renderAnswer(id, r, input.externalId),
    }
    if (t.kind === 'players') job.players = splitPlayerIds(t.ids)
    else if (t.kind === 'users') job.users = [...new Set(t.ids)]
    else job.segmentEstimate = await store.countSegment(this.db, app.id, t.names, job.mask, new Date(now))
    return job
  }

  async #estimate(c: CreateSend): Promise<number> {
    const t = c.input.target
    const mask = platformMask(c.input.platforms)
    if (t.kind === 'players') {
      const p = splitPlayerIds(t.ids)
      return p.ids.length ? (await store.countPlayers(this.db, c.app.id, p.ids, mask)).size : 0
    }
    if (t.kind === 'users') {
      let n = 0
      for (const v of (await store.countUsers(this.db, c.app.id, [...new Set(t.ids)], mask)).values()) n += v
      return n
    }
    return store.countSegment(this.db, c.app.id, t.names, mask, new Date(this.clock()))
  }

  async #takeQuota(app: AppRecord): Promise<void> {
    if (!(await this.quota.take(app.id))) throw new ApiError('SEND_RATE_LIMITED', { limite: this.quota.limit })
  }

  #replay(prior: store.StoredAnswer, hash: string): SendAnswer {
    if (prior.bodyHash !== hash)
      throw new ApiError('IDEMPOTENCY_BODY_MISMATCH', { hash_original: prior.bodyHash, hash_recebido: hash })
    return { body: prior.response, lane: prior.lane as Lane, exact: prior.exact, replay: true }
  }

  /** the spec, Sends: a concurrent call waits up to 3 s for the first call's answer, then 409. */
  async #waitForFirst(c: CreateSend): Promise<SendAnswer> {
    // A real wait (not the service clock): the first call is running now, on this or another instance.
    // the spec, Sends: a concurrent call with the same key waits this long for the first.
    const deadline = Date.now() + this.limits.idempotencyWaitMs
    const key = c.idemKey as string
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, this.limits.idempotencyPollMs))
      const done = await store.findIdempotency(this.db, c.app.id, key, new Date(this.clock()))
      if (done) return this.#replay(done, c.bodyHash)
    }
    throw new ApiError('IDEMPOTENCY_IN_FLIGHT')
  }
}

/** Well-formed ids de-duplicated (case-insensitively, as UUIDs are), the rest listed as sent. */
export function splitPlayerIds(ids: string[]): { ids: string[]; asSent: Map<string, string>; malformed: string[] } {
  const asSent = new Map<string, string>()
  const malformed: string[] = []
  for (const raw of ids) {
    if (!isUuid(raw)) {
      malformed.push(raw)
      continue
    }
    const id = raw.toLowerCase()
    if (!asSent.has(id)) asSent.set(id, raw)
  }
  return { ids: [...asSent.keys()], asSent, malformed }
}
