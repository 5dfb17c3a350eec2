// The in-app feed: fetches the device's package (`GET /api/v1/inapp/pending` with If-None-Match, so an unchanged
// package costs a 304), watches the triggers of its campaigns, and when one fires and `atraso_ms` has passed,
// asks rules.ts whether a campaign may be shown (dates, caps, priority), hands it to the app's `onShow` callbacks to
// draw, and reports `impressao`, `clique` and `fechou` with the campaign's proof through the durable outbox, which
// sends them in batches.
//
// A session is one `init` in the foreground. `ao_abrir` fires once per session for each campaign held; `evento`
// fires when `trigger(key, value)` brings the app's state to match the comparator (and at the session's start for
// `nao_existe`); `sessao_duracao` fires `segundos` after the session started; `inatividade` fires at the start of a
// session that comes `horas` or more after the previous one. A campaign whose `inicia_em` is still ahead is
// scheduled for it. The feed starts with the first `onShow` callback (an app that draws nothing is served nothing).
import { messageOf, type ErrorHandler } from '../errors.js'
import type { InappEventJob, InappEventName, Outbox } from '../outbox.js'
import type { Store } from '../storage.js'
import { call, serviceNow, type Transport } from '../transport.js'
import { SDK_VERSION } from '../version.js'
import {
  ATRASO_DEFAULT_MS,
  choose,
  type History,
  type InappMessage,
  matches,
  pickContent,
  record,
  type Regras,
  startsAt,
  type TriggerValue,
} from './rules.js'

export interface InappDisplay {
  campanhaId: string
  formato: string
  /** The content block for the device's language (else `pt`). */
  conteudo: Record<string, unknown>
  /** The language of `conteudo`. */
  idioma: string
  /** Every language block, as the campaign has them. */
  conteudoCompleto: Record<string, unknown>
  estilo: Record<string, unknown>
  regras: Regras
  /** Which display of this campaign on this device this is (the events' `ocorrencia_n`). */
  ocorrencia: number
  /** The person tapped the card or a button: reports `clique` (once). */
  click(): void
  /** The card was dismissed: reports `fechou` (once). The SDK calls it itself after `regras.fechar_apos_ms`. */
  close(): void
  /** Called when the SDK closes the card (`fechar_apos_ms`), so the app can take it off the screen. */
  onClose?: () => void
}

export type ShowCallback = (display: InappDisplay) => void

interface Package {
  pacote_id: string
  messages: InappMessage[]
  validade_s: number
  cap_global_h: number
  etag: string
  /** When this device last heard the package was current (epoch ms). */
  fetchedAt: number
}

export interface FeedDeps {
  appId: string
  store: Store
  transport: Transport
  outbox: Outbox
  playerId: () => string | null
  language: string | undefined
  now: () => number
  report: ErrorHandler
  /** When this session started, and when the previous one did (null: first session). */
  sessionStart: number
  previousSession: number | null
  pollIntervalMs: number
  /** False for a background init (service worker, extension): no UI, so no feed. */
  enabled: boolean
  /** The service answered a poll for a player_id it has no device for (never awaited: it re-registers). */
  unknownPlayer: (player: string) => void
}

const PKG_KEY = 'inapp:package'
const HIST_KEY = 'inapp:history'
const KEY_RE = /^[A-Za-z0-9_.:-]{1,64}$/
const MAX_TIMER_MS = 2_147_000_000

export class InappFeed {
  readonly #d: FeedDeps
  readonly #callbacks = new Set<ShowCallback>()
  readonly #values = new Map<string, TriggerValue>()
  /** Campaigns whose once-per-session triggers were armed this session. */
  readonly #armed = new Set<string>()
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()
  /** Campaigns that fired and whose `atraso_ms` has passed, decided together. */
  #due: InappMessage[] = []
  #deciding = false
  #pkg: Package | null = null
  #hist: History = { shown: {}, lastAny: 0 }
  #loaded: Promise<void> | null = null
  #started = false
  #closed = false
  #poller: ReturnType<typeof setTimeout> | undefined
  /** The serial of the current chain of work (polls, shows), so tests and `flush` can wait for it. */
  #work: Promise<unknown> = Promise.resolve()

  constructor(d: FeedDeps) {
    this.#d = d
  }

  /** Registers what draws a campaign; the first callback starts the feed. Answers a function that removes it. */
  onShow(callback: ShowCallback): () => void {
    if (typeof callback !== 'function') {
      this.#d.report({ kind: 'inapp', message: 'onShow precisa de uma função' })
      return () => {}
    }
    this.#callbacks.add(callback)
    if (!this.#started && this.#d.enabled && !this.#closed) {
      this.#started = true
      this.#chain(() => this.#poll(true))
    }
    return () => {
      this.#callbacks.delete(callback)
    }
  }

  /**
   * Feeds the app's state to `evento` triggers: `value` a text or a finite number; null/undefined forgets the key
   * (so `nao_existe` can match). A bad key or value is reported and ignored.
   */
  trigger(key: string, value?: TriggerValue | null): void {
    try {
      if (typeof key !== 'string' || !KEY_RE.test(key)) {
        this.#d.report({
          kind: 'inapp',
          message: `chave de gatilho inválida: ${JSON.stringify(key)} (1-64: letras, dígitos e _ . : -)`,
        })
        return
      }
      if (value === null || value === undefined) this.#values.delete(key)
      else if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) this.#values.set(key, value)
      else {
        this.#d.report({ kind: 'inapp', message: `valor de gatilho para ${key} deve ser texto ou número` })
        return
      }
      if (this.#started) this.#chain(async () => this.#evaluateKey(key))
    } catch (err) {
      this.#d.report({ kind: 'inapp', message: messageOf(err), cause: err })
    }
  }

  /** Asks the service for the package now (also done at start and every `pollIntervalMs`). */
  refresh(): Promise<void> {
    if (!this.#d.enabled || this.#closed || !this.#started) return Promise.resolve()
    return this.#chain(() => this.#poll(false))
  }

  /**
   * The device's player id changed (first registration, or a new token): the package held was made for the other
   * device (its proofs name it), so it is dropped and, if the feed runs, fetched again. The display history stays:
   * it is this install's, and caps are about the person.
   */
  deviceChanged(): Promise<void> {
    return this.#chain(async () => {
      await this.#load()
      if (this.#pkg) {
        this.#pkg = null
        await this.#d.store.remove(PKG_KEY)
      }
      if (this.#started && !this.#closed) await this.#poll(false)
    })
  }

  /** Resolves when the work already asked for (polls, decisions, displays) is done. */
  idle(): Promise<void> {
    return this.#work.then(() => {})
  }

  /** The campaigns this device holds now (diagnostics, tests). */
  get messages(): InappMessage[] {
    return this.#pkg?.messages ?? []
  }

  close(): void {
    this.#closed = true
    for (const t of this.#timers) clearTimeout(t)
    this.#timers.clear()
    if (this.#poller !== undefined) clearTimeout(this.#poller)
  }

  #chain(fn: () => Promise<void>): Promise<void> {
    const p = this.#work.then(fn).catch((err) => this.#d.report({ kind: 'inapp', message: messageOf(err), cause: err }))
    this.#work = p
    return p
  }

  #later(ms: number, fn: () => void): void {
    if (this.#closed) return
    const t = setTimeout(
      () => {
        this.#timers.delete(t)
        if (!this.#closed) fn()
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    )
    ;(t as unknown as { unref?: () => void }).unref?.()
    this.#timers.add(t)
  }

  #load(): Promise<void> {
    this.#loaded ??= (async () => {
      const pkg = await this.#d.store.get<Package>(PKG_KEY)
      if (pkg && Array.isArray(pkg.messages) && typeof pkg.etag === 'string') this.#pkg = pkg
      const h = await this.#d.store.get<History>(HIST_KEY)
      if (h && typeof h.shown === 'object' && h.shown !== null && Number.isFinite(h.lastAny)) this.#hist = h
    })()
    return this.#loaded
  }

  /** The package's campaigns while it is still valid (`validade_s` from when it was last confirmed). */
  #live(): InappMessage[] {
    const p = this.#pkg
    if (!p) return []
    return this.#d.now() - p.fetchedAt <= (p.validade_s || 86_400) * 1000 ? p.messages : []
  }

  async #poll(first: boolean): Promise<void> {
    await this.#load()
    const player = this.#d.playerId()
    if (player) {
      const q = `app_id=${encodeURIComponent(this.#d.appId)}&player_id=${encodeURIComponent(player)}&schema=${SDK_VERSION}`
      const headers: Record<string, string> = {}
      if (this.#pkg?.etag) headers['if-none-match'] = this.#pkg.etag
      const out = await call(this.#d.transport, `/api/v1/inapp/pending?${q}`, { method: 'GET', headers })
      const now = this.#d.now()
      if (out.kind === 'ok' && out.unknownDevice) this.#d.unknownPlayer(player)
      if (out.kind === 'ok' && out.status === 304 && this.#pkg) {
        this.#pkg = { ...this.#pkg, fetchedAt: now }
        await this.#d.store.set(PKG_KEY, this.#pkg)
      } else if (out.kind === 'ok' && out.status === 200) {
        const b = out.body as Partial<Package> | undefined
        if (b && Array.isArray(b.messages)) {
          this.#pkg = {
            pacote_id: String(b.pacote_id ?? ''),
            messages: b.messages.filter((m) => m && typeof m.campanha_id === 'string' && typeof m.prova === 'string'),
            validade_s: Number(b.validade_s) || 86_400,
            cap_global_h: Number.isFinite(b.cap_global_h) ? Number(b.cap_global_h) : 6,
            etag: String(b.etag ?? out.etag ?? ''),
            fetchedAt: now,
          }
          await this.#d.store.set(PKG_KEY, this.#pkg)
        }
      } else if (out.kind !== 'ok') {
        this.#d.report({ kind: 'inapp', message: `pending: ${out.reason}`, status: out.status ?? undefined })
      }
    }
    this.#arm(first)
    if (!this.#closed && this.#d.pollIntervalMs > 0) {
      if (this.#poller !== undefined) clearTimeout(this.#poller)
      this.#poller = setTimeout(() => void this.refresh(), this.#d.pollIntervalMs)
      ;(this.#poller as unknown as { unref?: () => void }).unref?.()
    }
  }

  /** Arms the once-per-session triggers of campaigns not armed yet, and checks `evento` ones against the state. */
  #arm(first: boolean): void {
    const now = this.#d.now()
    const start = this.#d.sessionStart
    for (const m of this.#live()) {
      const g = m.gatilho ?? { tipo: 'ao_abrir' }
      if (g.tipo === 'evento') {
        if (first || !this.#armed.has(m.campanha_id)) this.#evaluate(m)
        this.#armed.add(m.campanha_id)
        continue
      }
      if (this.#armed.has(m.campanha_id)) continue
      this.#armed.add(m.campanha_id)
      if (g.tipo === 'ao_abrir') this.#fired(m, now)
      else if (g.tipo === 'sessao_duracao') this.#fired(m, start + (g.segundos ?? 0) * 1000)
      else if (g.tipo === 'inatividade') {
        const prev = this.#d.previousSession
        if (prev !== null && start - prev >= (g.horas ?? 0) * 3_600_000) this.#fired(m, now)
      }
    }
  }

  #evaluateKey(key: string): Promise<void> {
    for (const m of this.#live()) if (m.gatilho?.tipo === 'evento' && m.gatilho.chave === key) this.#evaluate(m)
    return Promise.resolve()
  }

  #evaluate(m: InappMessage): void {
    const g = m.gatilho
    const key = g.chave ?? ''
    if (matches(g.comparador, g.valor, this.#values.has(key), this.#values.get(key))) this.#fired(m, this.#d.now())
  }

  /** The campaign's condition matched at `at`: it is due `atraso_ms` later (not before its `inicia_em`). */
  #fired(m: InappMessage, at: number): void {
    const atraso = Number.isFinite(m.gatilho?.atraso_ms) ? (m.gatilho.atraso_ms as number) : ATRASO_DEFAULT_MS
    const when = Math.max(at, startsAt(m) ?? at) + atraso
    this.#later(when - this.#d.now(), () => {
      this.#due.push(m)
      if (this.#deciding) return
      this.#deciding = true
      // Campaigns due in the same moment are decided together, so priority can choose among them.
      this.#later(0, () => {
        this.#deciding = false
        const due = this.#due
        this.#due = []
        void this.#chain(() => this.#decide(due))
      })
    })
  }

  async #decide(due: InappMessage[]): Promise<void> {
    const pkg = this.#pkg
    if (!pkg || this.#callbacks.size === 0) return
    const live = new Set(this.#live().map((m) => m.campanha_id))
    const now = this.#d.now()
    const order = pkg.messages.map((m) => m.campanha_id)
    // A campaign the service no longer serves (paused, ended, out of the audience) is not shown.
    const pick = choose(
      due.filter((m) => live.has(m.campanha_id)),
      order,
      this.#hist,
      pkg.cap_global_h,
      now,
    )
    if (!pick) return
    this.#hist = record(this.#hist, pick.m.campanha_id, pick.n, now)
    await this.#d.store.set(HIST_KEY, this.#hist)
    await this.#show(pick.m, pick.n)
  }

  async #show(m: InappMessage, n: number): Promise<void> {
    const { idioma, bloco } = pickContent(m.conteudo ?? {}, this.#d.language)
    let clicked = false
    let closed = false
    const display: InappDisplay = {
      campanhaId: m.campanha_id,
      formato: m.formato,
      conteudo: bloco,
      idioma,
      conteudoCompleto: m.conteudo ?? {},
      estilo: m.estilo ?? {},
      regras: m.regras,
      ocorrencia: n,
      click: () => {
        if (clicked) return
        clicked = true
        void this.#chain(() => this.#event(m, n, 'clique'))
      },
      close: () => {
        if (closed) return
        closed = true
        void this.#chain(() => this.#event(m, n, 'fechou'))
      },
    }
    await this.#event(m, n, 'impressao')
    for (const cb of this.#callbacks) {
      try {
        cb(display)
      } catch (err) {
        this.#d.report({ kind: 'inapp', message: `onShow: ${messageOf(err)}`, cause: err })
      }
    }
    const after = m.regras?.fechar_apos_ms ?? 0
    if (after > 0) {
      this.#later(after, () => {
        if (closed) return
        display.close()
        try {
          display.onClose?.()
        } catch (err) {
          this.#d.report({ kind: 'inapp', message: `onClose: ${messageOf(err)}`, cause: err })
        }
      })
    }
  }

  #event(m: InappMessage, n: number, evento: InappEventName): Promise<void> {
    const player = this.#d.playerId()
    if (!player) return Promise.resolve()
    const now = this.#d.now()
    // `em` on the service's clock: events dated over 5 minutes ahead of it are refused.
    const em = new Date(serviceNow(this.#d.transport)).toISOString()
    const job: InappEventJob = {
      k: 'e',
      id: `${m.campanha_id}:${evento}:${n}`,
      player,
      campanhaId: m.campanha_id,
      prova: m.prova,
      evento,
      n,
      em,
      at: now,
    }
    return this.#d.outbox.enqueue([job])
  }
}
