// The confirmation stream (`modo: grpc`; docs/spec/contract.md "Confirmation stream", proto/pombo/confirmacoes/v1): a gRPC
// server on PM_GRPC_PORT in the API role. `Assinar` authenticates the app key from the metadata entry
// `authorization` (the HTTP forms, through the same cached directory), then streams the app's `grpc` events with
// seq > desde_seq, then live ones, in seq order, which is the app's commit order (src/confirmations/events.ts).
//
// Each stream is a loop over Postgres: read the next page after its cursor, write it, and when caught up wait for a
// wake-up (a NOTIFY sent by the writing transaction at commit, or by nothing) or POLL_MS. The notification never
// carries an event: what is sent and in which order is what Postgres answers. Flow control is gRPC's: when write()
// answers false the loop waits for 'drain', so a slow consumer holds at most one page plus the transport's
// buffer, and nothing is dropped; it simply reads later. Revocation, pause and mode changes reach open streams
// through the directory's invalidation (AppDirectory.onDrop): every open stream of the app checks its key and app
// again and ends at once (no further event is written) with the status a new call would get.
//
// API keys travel in the metadata: with PM_GRPC_TLS_CERT / PM_GRPC_TLS_KEY the server speaks TLS; without them it is
// plaintext and belongs behind a TLS proxy (compose.yaml's nginx terminates TLS and passes it on with grpc_pass).
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import * as grpc from '@grpc/grpc-js'
import pg from 'pg'
import type { Logger } from 'pino'
import type { Auth } from '../apps/auth'
import type { AppDirectory } from '../apps/directory'
import type { KeyRecord } from '../apps/store'
import type { Config } from '../core/config'
import { type Db, query } from '../db/pool'
import { ProxyTrust } from '../http/client-ip'
import { isUuid } from '../http/router'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Clock } from '../core/time'
import { eventsChannel } from './events'
import { Presence, type Tracked } from './presence'
import { confirmationStream } from './proto'
import { type Call, type EventRow, endCall, Refusal, refusalOf, Session, type SessionHost } from './session'

const MAX_SEQ = 9223372036854775807n

export interface StreamDeps {
  cfg: Config
  log: Logger
  db: Db
  redis: RedisClient
  keys: Keys
  dir: AppDirectory
  auth: Auth
  clock: Clock
}

/** TLS with the configured PEM files (no client certificate asked: callers authenticate with their API key), or
 *  plaintext. An unreadable file stops the start with the setting's name. */
function serverCredentials(tls: Config['grpcTls']): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure()
  const read = (name: string, file: string): Buffer => {
    try {
      return readFileSync(file)
    } catch (err) {
      throw new Error(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
    }
  }
  const cert = read('PM_GRPC_TLS_CERT', tls.certFile)
  const key = read('PM_GRPC_TLS_KEY', tls.keyFile)
  return grpc.ServerCredentials.createSsl(null, [{ cert_chain: cert, private_key: key }], false)
}

export class ConfirmationStreamServer implements SessionHost {
  readonly #server = new grpc.Server({
    // The only request is tiny; metadata beyond the default 8 KB is refused by the transport.
    'grpc.max_receive_message_length': 4 * 1024,
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  })
  readonly #byApp = new Map<string, Set<Session>>()
  readonly #proxies: ProxyTrust
  readonly #presence: Presence
  readonly #runs = new Set<Promise<void>>()
  #listener: pg.Client | null = null
  #beat: NodeJS.Timeout | null = null
  #unsubscribe: (() => void) | null = null
  #closing = false
  #lastRecheck = Date.now()
  port = 0
  /** Back-pressure seen (tests, bench): waits for 'drain', and the most messages ever queued on one stream. */
  readonly stats = { waitingDrain: 0, maxQueued: 0 }

  constructor(readonly d: StreamDeps) {
    this.#presence = new Presence(d.db, d.redis, d.keys, d.clock, d.cfg.stream)
    this.#proxies = new ProxyTrust(d.cfg.trustProxy)
    this.#server.addService(confirmationStream().service, {
      Assinar: (call: Call) => {
        const run = this.#subscribe(call).catch((err) => {
          this.d.log.error({ err: String(err) }, 'confirmation stream failed')
          endCall(call, grpc.status.INTERNAL, 'Erro interno.')
        })
        this.#runs.add(run)
        void run.finally(() => this.#runs.delete(run))
      },
    })
  }

  async listen(host: string, port: number): Promise<number> {
    const credentials = serverCredentials(this.d.cfg.grpcTls)
    this.port = await new Promise<number>((resolve, reject) =>
      this.#server.bindAsync(`${host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))),
    )
    this.#unsubscribe = this.d.dir.onDrop((appId) => this.#recheck(appId))
    await this.#listen()
    this.#beat = setInterval(() => this.#heartbeat(), this.d.cfg.stream.heartbeatMs)
    this.#beat.unref()
    return this.port
  }

  /** Ends every stream (UNAVAILABLE: resume from the last seq elsewhere), then the server. */
  async close(): Promise<void> {
    if (this.#closing) return
    this.#closing = true
    if (this.#beat) clearInterval(this.#beat)
    this.#unsubscribe?.()
    for (const set of this.#byApp.values())
      for (const s of set) s.end(grpc.status.UNAVAILABLE, 'Servidor encerrando; retome a partir do último seq.')
    await Promise.all(this.#runs)
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#server.forceShutdown()
        resolve()
      }, 2_000)
      this.#server.tryShutdown(() => {
        clearTimeout(force)
        resolve()
      })
    })
    await this.#listener?.end().catch(() => {})
  }

  /** Open streams on this instance (tests). */
  get open(): number {
    let n = 0
    for (const set of this.#byApp.values()) n += set.size
    return n
  }

  async #subscribe(call: Call): Promise<void> {
    const who = { ip: this.#clientIp(call), route: 'grpc Assinar', id: randomUUID() }
    let session: Session
    try {
      const key = await this.#key(call, who)
      const req = call.request
      const appId = typeof req?.app_id === 'string' ? req.app_id.toLowerCase() : ''
      if (!isUuid(appId)) throw new Refusal(grpc.status.INVALID_ARGUMENT, 'app_id ausente ou não é um UUID.')
      if (appId !== key.appId) {
        this.d.auth.reject(who, 'foreign-app', key.kid)
        throw new Refusal(grpc.status.PERMISSION_DENIED, 'A chave não é deste app.')
      }
      const after = typeof req.desde_seq === 'string' && /^\d{1,20}$/.test(req.desde_seq) ? BigInt(req.desde_seq) : -1n
      if (after < 0n || after > MAX_SEQ) throw new Refusal(grpc.status.INVALID_ARGUMENT, 'desde_seq fora do intervalo.')
      await this.#checkApp(appId)
      const set = this.#byApp.get(appId) ?? new Set<Session>()
      const max = this.d.cfg.stream.maxPerApp
      if (set.size >= max)
        throw new Refusal(grpc.status.RESOURCE_EXHAUSTED, `Mais de ${max} streams abertos deste app nesta instância.`)
      if (this.#closing) throw new Refusal(grpc.status.UNAVAILABLE, 'Servidor encerrando.')
      session = new Session(appId, key, call, after.toString(), this)
      set.add(session)
      this.#byApp.set(appId, set)
    } catch (err) {
      const r = refusalOf(err)
      endCall(call, r.code, r.details)
      return
    }
    try {
      await this.#presence.opened(session)
      // A revocation published between the checks above and the registration is seen here.
      await this.recheckOne(session)
      await session.run()
    } catch (err) {
      if (!(err instanceof Refusal))
        this.d.log.warn({ err: String(err), app_id: session.appId }, 'confirmation stream ended by a failure')
      const r = refusalOf(err)
      session.end(r.code, r.details)
    } finally {
      this.forget(session)
      await this.#presence.closed(session)
    }
  }

  /** The caller's address (its failed keys count toward its per-IP limit): the peer's, or behind a trusted proxy
   *  (PM_TRUST_PROXY, e.g. compose.yaml's nginx) the one its X-Forwarded-For metadata names, as for HTTP. */
  #clientIp(call: Call): string {
    const peer = call.getPeer().replace(/:\d+$/, '') // grpc-js writes `<address>:<port>`
    const fwd = call.metadata.get('x-forwarded-for')
    return this.#proxies.clientIp(peer, fwd.length === 1 && typeof fwd[0] === 'string' ? fwd[0] : undefined)
  }

  async #key(call: Call, who: { ip: string; route: string; id: string }): Promise<KeyRecord> {
    const values = call.metadata.get('authorization')
    if (values.length > 1 || (values.length === 1 && typeof values[0] !== 'string')) {
      this.d.auth.reject(who, 'malformed')
      throw new Refusal(grpc.status.UNAUTHENTICATED, 'Chave de API em formato desconhecido.')
    }
    return this.d.auth.keyOf(values[0] as string | undefined, who)
  }

  /** The app is readable by stream: known, not paused (PERMISSION_DENIED), in `grpc` mode (FAILED_PRECONDITION). */
  async #checkApp(appId: string): Promise<void> {
    const app = await this.d.dir.app(appId)
    if (!app) throw new Refusal(grpc.status.UNAUTHENTICATED, 'Chave de API desconhecida, revogada ou expirada.')
    if (app.paused) throw new Refusal(grpc.status.PERMISSION_DENIED, 'App pausado.')
    if (app.confirmMode !== 'grpc') {
      throw new Refusal(
        grpc.status.FAILED_PRECONDITION,
        `O modo de confirmação do app é ${app.confirmMode}, não grpc (PUT /api/v1/confirmacoes).`,
      )
    }
  }

  /** Checks an open stream's key and app as a new call would; ends it with that status when it would be refused. */
  async recheckOne(s: Session): Promise<void> {
    try {
      const key = await this.d.dir.key(s.key.kid)
      if (!key || key.revoked || key.appId !== s.appId || (key.expiresAtMs !== null && this.d.clock() >= key.expiresAtMs)) {
        throw new Refusal(grpc.status.UNAUTHENTICATED, 'Chave de API desconhecida, revogada ou expirada.')
      }
      s.key = key
      await this.#checkApp(s.appId)
    } catch (err) {
      // A dependency outage is not a refusal: the stream goes on and the next check decides.
      if (err instanceof Refusal) s.end(err.code, err.details)
    }
  }

  #recheck(appId: string | null): void {
    const sets = appId === null ? [...this.#byApp.values()] : [this.#byApp.get(appId) ?? new Set<Session>()]
    for (const set of sets) for (const s of set) void this.recheckOne(s)
    if (appId === null) for (const set of sets) for (const s of set) s.wake()
  }

  forget(s: Session): void {
    const set = this.#byApp.get(s.appId)
    if (!set) return
    set.delete(s)
    if (set.size === 0) this.#byApp.delete(s.appId)
  }

  #heartbeat(): void {
    const open: Tracked[] = []
    for (const set of this.#byApp.values()) open.push(...set)
    this.#presence.beat(open).catch((err) => this.d.log.warn({ err: String(err) }, 'confirmation streams: heartbeat failed'))
    if (Date.now() - this.#lastRecheck >= this.d.cfg.stream.recheckMs) {
      this.#lastRecheck = Date.now()
      this.#recheck(null)
    }
  }

  /** LISTEN for commits of `grpc` events; lost connections are re-made (streams poll meanwhile). */
  async #listen(): Promise<void> {
    if (this.#closing) return
    // LISTEN needs a session of its own: never through a transaction pooler.
    const c = new pg.Client({ connectionString: this.d.cfg.databaseDirectUrl })
    const retry = (): void => {
      if (this.#listener !== c) return
      this.#listener = null
      c.end().catch(() => {})
      if (!this.#closing) setTimeout(() => void this.#listen(), 1_000).unref()
    }
    this.#listener = c
    c.on('error', retry)
    c.on('end', retry)
    c.on('notification', (m) => {
      const set = m.payload ? this.#byApp.get(m.payload) : undefined
      if (set) for (const s of set) s.wake()
    })
    try {
      await c.connect()
      await c.query(`LISTEN "${eventsChannel(this.d.cfg.dbSchema)}"`)
      // Anything committed while no one listened is found by this read.
      for (const set of this.#byApp.values()) for (const s of set) s.wake()
    } catch (err) {
      this.d.log.warn({ err: String(err) }, 'confirmation streams: LISTEN failed; polling until it is back')
      retry()
    }
  }

  /** Reads one page of the app's stream events after `cursor`. */
  page(appId: string, cursor: string): Promise<EventRow[]> {
    return query<EventRow>(
      this.d.db,
      `SELECT seq, evento, body FROM events
        WHERE app_id = $1 AND canal = 'grpc' AND seq > $2 ORDER BY seq LIMIT $3`,
      [appId, cursor, this.d.cfg.stream.page],
    ).then((r) => r.rows)
  }

  get clock(): Clock {
    return this.d.clock
  }

  get pageSize(): number {
    return this.d.cfg.stream.page
  }

  get pollMs(): number {
    return this.d.cfg.stream.pollMs
  }

  get log(): Logger {
    return this.d.log
  }
}
