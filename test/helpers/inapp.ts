// In-app test helpers: an app with its key, campaigns created through the real routes, devices registered.
import { randomUUID } from 'node:crypto'
import { type Answer, basic, type StartOptions, startService, type TestService } from './service'

interface Tap {
  teardown(fn: () => unknown): void
}

export const CARD = { pt: { titulo: 'Olá', corpo: 'Bem-vindo', botao: { texto: 'Ok', acao: { tipo: 'dismiss' } } } }

export class InappWorld {
  constructor(
    readonly s: TestService,
    readonly app: { id: string; api_key: string },
  ) {}

  get auth(): Record<string, string> {
    return basic(this.app.api_key)
  }

  call(method: string, path: string, body?: unknown): Promise<Answer> {
    return this.s.call(method, path, { body, headers: this.auth })
  }

  config(body: Record<string, unknown>): Promise<Answer> {
    return this.call('PUT', '/api/v1/in_app_messages/config', { app_id: this.app.id, ...body })
  }

  create(body: Record<string, unknown> = {}): Promise<Answer> {
    return this.call('POST', '/api/v1/in_app_messages', { app_id: this.app.id, conteudo: CARD, ...body })
  }

  async campaign(body: Record<string, unknown> = {}, publish = true): Promise<string> {
    const r = await this.create(body)
    if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`)
    if (publish) {
      const p = await this.op(r.json.id, 'publicar')
      if (p.status !== 200) throw new Error(`publicar: ${p.status} ${p.text}`)
    }
    return r.json.id
  }

  op(id: string, op: string, extra = ''): Promise<Answer> {
    return this.call('POST', `/api/v1/in_app_messages/${id}/${op}?app_id=${this.app.id}${extra}`)
  }

  get(path: string): Promise<Answer> {
    const sep = path.includes('?') ? '&' : '?'
    return this.call('GET', `/api/v1/in_app_messages${path}${sep}app_id=${this.app.id}`)
  }

  async device(extra: Record<string, unknown> = {}): Promise<string> {
    const r = await this.s.call('POST', '/api/v1/players', {
      body: { app_id: this.app.id, device_type: 1, identifier: `tok-${randomUUID()}`, sdk_versao: '0.6.0', ...extra },
    })
    if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text}`)
    return r.json.id
  }

  pending(player: string, schema: string | null = '0.6', headers: Record<string, string> = {}): Promise<Answer> {
    const q = `app_id=${this.app.id}&player_id=${player}${schema === null ? '' : `&schema=${schema}`}`
    return this.s.call('GET', `/api/v1/inapp/pending?${q}`, { headers })
  }

  events(player: string, eventos: unknown[]): Promise<Answer> {
    return this.s.call('POST', '/api/v1/inapp/eventos', { body: { app_id: this.app.id, player_id: player, eventos } })
  }
}

export async function inappWorld(t: Tap, o: StartOptions = {}, channelOn = true): Promise<InappWorld> {
  const s = await startService(t, { ...o, limits: { ipPerMin: 0, ...o.limits } })
  const app = await s.createApp()
  const w = new InappWorld(s, app)
  if (channelOn) {
    const r = await w.config({ inapp_ativo: true })
    if (r.status !== 200) throw new Error(`config: ${r.status} ${r.text}`)
  }
  return w
}

export function nowIso(offsetMs = 0): string {
  return new Date(Date.now() + offsetMs).toISOString()
}
