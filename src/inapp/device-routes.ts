// The public in-app device routes (the spec, In-app device routes): GET /api/v1/inapp/pending and POST
// /api/v1/inapp/eventos. No credential: app_id checked before anything else, 16 KB bodies, the shared per-IP limit.
// A warm poll is answered synchronously from memory (package cache + device profile cache): no database round trip,
// no promise; a 304 costs a selection and one hash. A poll for a player_id the app has no device for (deleted in the
// dashboard) gets the empty package the spec wants, marked so the SDK registers again (src/http/unknown-device.ts).
import { createHash } from 'node:crypto'
import type { AppDirectory } from '../apps/directory'
import type { Config } from '../core/config'
import { UNKNOWN_DEVICE_HEADERS } from '../http/unknown-device'
import { ApiError, fieldError } from '../core/errors'
import type { IpLimiter } from '../http/ip-limit'
import { JSON_TYPE, ok, type Reply } from '../http/reply'
import type { Request } from '../http/request'
import { isUuid, type Router } from '../http/router'
import type { Clock } from '../core/time'
import type { DeviceProfiles, Profile } from './device-profiles'
import { parseEvents } from './events-validate'
import type { EventJob, EventWriter, Verdict } from './events-writer'
import { type AppPack, type PackageCache, type PackCampaign, selectFor } from './packages'
import { EPOCH_MS, epochOf, INAPP_KEY_LABEL, inappProof, verifyInappProof } from './proof'
import type { ServedWriter } from './served-writer'
import { parseSchema } from './validate'

export interface DeviceRouteDeps {
  cfg: Config
  clock: Clock
  dir: AppDirectory
  publicLimiter: IpLimiter
  packages: PackageCache
  profiles: DeviceProfiles
  served: ServedWriter
  events: EventWriter
  /** The app's proof key (its receipt key), kept resolved so a warm poll stays synchronous. */
  keys: { peek(appId: string): Buffer | undefined; get(appId: string): Promise<Buffer | null> }
}

interface Memo {
  pack: AppPack
  profile: Profile | null
  level: number | null
  /** The selection holds until the next proof epoch, the next `inicia_em`/`termina_em` of the app's campaigns, and
   *  the expiry of the device's cached profile. */
  until: number
  /** The proof epoch the selection was made in. */
  epoch: number
  chosen: PackCampaign[]
  digest: string
  etag: string
}

interface PendingQuery {
  appId: string
  playerId: string
  level: number | null
  ifNoneMatch: string | undefined
}

/** The query's parameters without URLSearchParams (the hot path): first occurrence wins, as URLSearchParams.get. */
function readQuery(raw: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  for (const part of raw.split('&')) {
    const eq = part.indexOf('=')
    const k = eq < 0 ? part : part.slice(0, eq)
    if ((k !== 'app_id' && k !== 'player_id' && k !== 'schema') || out[k] !== undefined) continue
    let v = eq < 0 ? '' : part.slice(eq + 1)
    if (v.includes('%') || v.includes('+')) {
      try {
        v = decodeURIComponent(v.replaceAll('+', ' '))
      } catch {
        v = '\uFFFD' // malformed escapes: an invalid value, refused below
      }
    }
    out[k] = v
  }
  return out
}

function parsePending(req: Request): PendingQuery {
  const q = readQuery(req.rawQuery)
  const appId = q.app_id
  if (!isUuid(appId)) throw fieldError('app_id', 'é obrigatório, um UUID')
  const playerId = q.player_id
  if (!isUuid(playerId)) throw fieldError('player_id', 'é obrigatório, um UUID')
  const raw = q.schema
  let level: number | null = null
  if (raw !== undefined && raw !== '') {
    level = parseSchema(raw)
    if (level === null) throw fieldError('schema', 'deve ser a versão do SDK, MAJOR.MINOR (ex.: 0.6 ou 0.6.2)')
  }
  return { appId: appId.toLowerCase(), playerId: playerId.toLowerCase(), level, ifNoneMatch: req.header('if-none-match') }
}

/** RFC 9110 §13.1.2: a list of entity tags (weak ones compare weakly), or `*`. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  for (const part of header.split(',')) {
    const t = part.trim()
    if (t === etag || t === `W/${etag}`) return true
  }
  return false
}

export function inappDeviceRoutes(r: Router, d: DeviceRouteDeps): void {
  const pub = { ipLimit: d.publicLimiter, hot: true, cors: true }
  const lim = d.cfg.limits

  /** The device's last selection, reused while nothing it depends on changed (the 304 path's cost). */
  const memos = new Map<string, Memo>()

  function chooseFor(pack: AppPack, q: PendingQuery, profile: Profile | null, profileUntil: number, now: number): Memo {
    const epoch = epochOf(now)
    // An unknown player gets an empty package (never 404): proofs are only ever minted for real devices.
    const chosen = profile ? selectFor(pack, q.playerId, profile, q.level, now, lim.inappPackageMax) : []
    // The proofs' construction is part of what a package is: a new one (INAPP_KEY_LABEL) is a new ETag at once, so
    // a device holding proofs of the previous one fetches fresh ones instead of a 304.
    const h = createHash('sha256').update(`${pack.digest}|${epoch}|${q.playerId}|${profile ? 1 : 0}|${INAPP_KEY_LABEL}`)
    for (const c of chosen) h.update(c.id)
    const digest = h.digest('base64url')
    let until = Math.min((epoch + EPOCH_MS / 1000) * 1000, profileUntil)
    for (const c of pack.campaigns) {
      if (c.startMs !== null && c.startMs > now) until = Math.min(until, c.startMs)
      if (c.endMs !== null && c.endMs > now) until = Math.min(until, c.endMs)
    }
    const memo: Memo = { pack, profile, level: q.level, until, epoch, chosen, digest, etag: `"${digest.slice(0, 22)}"` }
    if (memos.size >= lim.inappMemoMax) memos.clear()
    memos.set(q.appId + q.playerId, memo)
    return memo
  }

  /** The device's last selection while nothing it depends on changed: a warm poll's one lookup. */
  function memoFor(pack: AppPack, q: PendingQuery, now: number): Memo | undefined {
    const m = memos.get(q.appId + q.playerId)
    return m && m.pack === pack && m.level === q.level && now < m.until ? m : undefined
  }

  function answer(pack: AppPack | null, q: PendingQuery, m: Memo | null, key: Buffer | undefined): Reply | Promise<Reply> {
    if (pack === null) throw new ApiError('APP_ID_UNKNOWN')
    if (pack.paused) throw new ApiError('APP_PAUSED')
    if (!pack.active) throw new ApiError('INAPP_CHANNEL_OFF')
    const { chosen, digest, etag, epoch } = m ?? chooseFor(pack, q, null, Number.POSITIVE_INFINITY, d.clock())
    const headers = m?.profile === null ? { ETag: etag, ...UNKNOWN_DEVICE_HEADERS } : { ETag: etag }
    if (matches(q.ifNoneMatch, etag)) return { status: 304, headers }
    if (chosen.length > 0 && !key) {
      return d.keys.get(q.appId).then((k) => {
        if (!k) throw new ApiError('APP_ID_UNKNOWN')
        return answer(pack, q, m, k)
      })
    }
    const items = chosen.map((c) => `${c.head}${inappProof(key as Buffer, c.id, q.playerId, epoch)}"}`)
    const hex = createHash('sha256').update(digest).digest('hex')
    const packageId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
    for (const c of chosen) d.served.note(q.appId, c.id, q.playerId)
    const body = `{"pacote_id":"${packageId}","messages":[${items.join(',')}],"validade_s":${lim.inappValidityS},"cap_global_h":${pack.capH},"etag":${JSON.stringify(etag)}}`
    return { status: 200, body, contentType: JSON_TYPE, headers }
  }

  /** Loads what the warm path lacked (the app's pack, the device's profile), then answers. */
  async function slow(q: PendingQuery): Promise<Reply> {
    const pack = d.packages.peek(q.appId) ?? (await d.packages.load(q.appId))
    if (pack === null || pack.paused || !pack.active) return answer(pack, q, null, undefined)
    const now = d.clock()
    const memo = memoFor(pack, q, now)
    if (memo) return answer(pack, q, memo, d.keys.peek(q.appId))
    let e = d.profiles.peekEntry(q.appId, q.playerId)
    if (e === undefined) {
      const p = await d.profiles.load(q.appId, q.playerId)
      e = d.profiles.peekEntry(q.appId, q.playerId) ?? { p, until: d.clock() + 1_000 }
    }
    return answer(pack, q, chooseFor(pack, q, e.p, e.until, d.clock()), d.keys.peek(q.appId))
  }

  r.get('/api/v1/inapp/pending', { ...pub, headers: ['if-none-match'] }, (req) => {
    const q = parsePending(req)
    const pack = d.packages.peek(q.appId)
    if (pack === undefined) return slow(q)
    if (pack === null || pack.paused || !pack.active) return answer(pack, q, null, undefined)
    const now = d.clock()
    const memo = memoFor(pack, q, now)
    if (memo) return answer(pack, q, memo, d.keys.peek(q.appId))
    // Also in an app with no active campaign: the answer says whether the device exists (cached like any profile).
    const e = d.profiles.peekEntry(q.appId, q.playerId)
    if (e === undefined) return slow(q)
    return answer(pack, q, chooseFor(pack, q, e.p, e.until, now), d.keys.peek(q.appId))
  })

  r.post('/api/v1/inapp/eventos', { ...pub, bodyLimit: lim.deviceBodyBytes }, async (req) => {
    const now = d.clock()
    const input = parseEvents(await req.json(), now, {
      batchMax: lim.inappEventsBatchMax,
      pastMs: lim.inappEventPastMs,
      futureMs: lim.inappEventFutureMs,
      occurrenceMax: lim.inappOccurrenceMax,
    })
    const app = await d.dir.app(input.appId)
    if (!app) throw new ApiError('APP_ID_UNKNOWN')
    if (app.paused) throw new ApiError('APP_PAUSED')
    const key = await d.keys.get(app.id)
    const maxAge = lim.inappEventPastMs + lim.inappValidityS * 1000
    const verdicts: Array<Verdict | Promise<Verdict>> = input.items.map((it) => {
      if (!key || !verifyInappProof(key, it.campaignId, input.playerId, it.proof, now, maxAge)) return 'prova_invalida'
      const job: EventJob = {
        appId: app.id,
        campaignId: it.campaignId,
        deviceId: input.playerId,
        event: it.event,
        n: it.n,
        atMs: it.atMs,
      }
      return d.events.submit(job)
    })
    if (verdicts.every((v) => v === 'prova_invalida')) throw new ApiError('INAPP_PROOF_INVALID')
    const results = await Promise.all(verdicts)
    if (results.every((v) => v === 'prova_invalida')) throw new ApiError('INAPP_PROOF_INVALID')
    return ok({ ok: true, resultados: results })
  })
}
