// What `pombo simulate` asks of the service with the app's key: sends to the simulated devices (the spec's send
// route, 2,000 player ids per call) and the sends' counters read back (`successful`, `recebidos`, `converted`).
export const IDS_PER_SEND = 2_000

export interface Accepted {
  id: string
  recipients: number
  at: number
}

export interface SendCounts {
  id: string
  successful: number
  failed: number
  errored: number
  remaining: number
  converted: number
  recebidos: number | null
}

export class ServiceApi {
  constructor(
    readonly baseUrl: string,
    readonly appId: string,
    readonly key: string,
  ) {}

  async #call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; text: string }> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: { authorization: `Basic ${this.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    })
    const text = await res.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, json, text }
  }

  /** One send to these players; throws with the service's own reason when it is refused. */
  async send(players: readonly string[], n: number, runId: string): Promise<Accepted> {
    const r = await this.#call('POST', '/api/v1/notifications', {
      app_id: this.appId,
      headings: { en: 'Pombo simulate' },
      contents: { en: `Simulated push ${n} of run ${runId}` },
      include_player_ids: players,
      data: { simulacao: runId },
    })
    const at = Date.now()
    const j = r.json as { id?: unknown; recipients?: unknown } | undefined
    if (r.status !== 200 || typeof j?.id !== 'string') throw new Error(`send refused: ${r.status} ${reason(r.json, r.text)}`)
    return { id: j.id, recipients: typeof j.recipients === 'number' ? j.recipients : 0, at }
  }

  async counts(id: string): Promise<SendCounts> {
    const r = await this.#call('GET', `/api/v1/notifications/${id}?app_id=${this.appId}`)
    const j = r.json as Record<string, unknown> | undefined
    if (r.status !== 200 || !j) throw new Error(`reading send ${id}: ${r.status} ${reason(r.json, r.text)}`)
    const n = (k: string) => (typeof j[k] === 'number' ? (j[k] as number) : 0)
    return {
      id,
      successful: n('successful'),
      failed: n('failed'),
      errored: n('errored'),
      remaining: n('remaining'),
      converted: n('converted'),
      recebidos: typeof j.recebidos === 'number' ? j.recebidos : null,
    }
  }
}

function reason(json: unknown, text: string): string {
  const e = (json as { errors?: unknown } | undefined)?.errors
  if (Array.isArray(e) && e.length > 0) return e.map(String).join('; ')
  return text.slice(0, 200)
}
