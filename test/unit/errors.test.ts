import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ApiError, E, type ErrorKey } from '../../src/core/errors'
import { errorReply } from '../../src/http/reply'

// Parameters that make every entry renderable; a new entry without a sample fails here on purpose.
const SAMPLES: Record<string, unknown> = {
  INVALID_FIELD: { campo: 'x', motivo: 'deve ser um texto' },
  BODY_TOO_LARGE: { limite: 16384 },
  ROUTE_NOT_FOUND: { method: 'GET', path: '/x' },
  IP_RATE_LIMITED: { limite: 120 },
  DEPENDENCY_UNAVAILABLE: { dependencia: 'postgres' },
  APP_ID_REQUIRED: { where: 'query' },
  REFUSED_FIELD: { campo: 'custom_data', use: 'data' },
  UNKNOWN_SEGMENT: { segment: 'Todos', valid: ['Subscribed Users', 'Total Subscriptions', 'Active Users', 'Engaged Users'] },
  RESERVED_DATA_KEY: { chave: 'pm_x' },
  INVALID_MEDIA_URL: { campo: 'big_picture' },
  ATTACHMENT_NOT_HTTPS: { campo: 'ios_attachments.foto' },
  SEND_AFTER_TOO_FAR: { limite_dias: 28 },
  PAYLOAD_TOO_LARGE: { bytes: 4000, limite: 3891, bytes_injetados_pelo_servidor: 96 },
  IDEMPOTENCY_BODY_MISMATCH: { hash_original: 'a'.repeat(64), hash_recebido: 'b'.repeat(64) },
  SEND_RATE_LIMITED: { limite: 6000 },
  MAU_EXCEEDED: { mau_gratis: 1000, mau: 1500, medido_ha_s: 120, mes_medido: '2026-11', preco_plano_pro: 'R$ 99,00/mês' },
  SENDS_READ_FORBIDDEN_MODE: { modo: 'webhook' },
  READS_RATE_LIMITED: { limite: 1000 },
  EXTERNAL_USER_DEVICE_LIMIT: { limite: 10 },
  REGISTRATIONS_RATE_LIMITED: { limite: 50000 },
  EXPORT_RATE_LIMITED: { limite: 1 },
  CONFIRM_MODE_UNKNOWN: { valid: ['consulta', 'webhook', 'grpc'] },
  INAPP_CAMPAIGN_INVALID: { problemas: [{ campo: 'conteudo.pt', motivo: 'é obrigatório' }] },
  INAPP_TRANSITION_INVALID: { operation: 'pausar', state: 'rascunho', origins: ['ativa'] },
  INAPP_EVENT_TIME_OUTSIDE: { campo: 'eventos[0].em' },
}

t.test('every error renders the envelope with Portuguese texts', async (t) => {
  for (const key of Object.keys(E) as ErrorKey[]) {
    const err = new (ApiError as unknown as new (k: string, p: unknown) => ApiError)(
      key,
      SAMPLES[key] ?? (E[key].texts.length ? {} : undefined),
    )
    const r = errorReply(err, 'req-1')
    t.ok(r.status >= 400 && r.status < 600, key)
    const body = r.body as { errors: string[]; explain: Record<string, unknown> }
    t.equal(body.errors.length, 1, key)
    t.ok(body.errors[0] && !body.errors[0].includes('undefined'), `${key}: ${body.errors[0]}`)
    t.type(body.explain.causa, 'string')
    t.type(body.explain.como_corrigir, 'string')
    t.equal(body.explain.request_id, 'req-1')
    t.notOk(JSON.stringify(body).includes('undefined'), `${key} has no undefined placeholder`)
  }
})

t.test('429 per IP carries Retry-After: 60', async (t) => {
  t.same(new ApiError('IP_RATE_LIMITED', { limite: 120 }).headers(), { 'Retry-After': '60' })
})

t.test('docs/errors.md lists exactly the catalogue, with the right statuses', async (t) => {
  const page = readFileSync(join(__dirname, '..', '..', 'docs', 'errors.md'), 'utf8')
  const section = page.split('<!-- errors:start -->')[1]?.split('<!-- errors:end -->')[0] ?? ''
  const listed = new Map([...section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]))
  t.same([...listed.keys()].sort(), Object.keys(E).sort())
  for (const [k, status] of listed) t.equal(status, E[k as ErrorKey]?.status, k)
})
