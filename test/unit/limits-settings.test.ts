// The spec's limits are settings: each one, set in the environment, moves the rule the validators apply, and the
// defaults are the spec's values.
import t from 'tap'
import { DEFAULT_DELIVERY, DEFAULT_LIMITS, loadConfig } from '../../src/core/config'
import { ApiError } from '../../src/core/errors'
import { parseRegistration, parseUpdate } from '../../src/devices/validate'
import { parseEvents } from '../../src/inapp/events-validate'
import { parseCampaign } from '../../src/inapp/validate'
import { parseReceipt } from '../../src/receipts/validate'
import { parseSend } from '../../src/sends/validate'

const APP = '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0)
const pid = (i: number) => `11111111-2222-4333-8444-${String(i).padStart(12, '0')}`
const body = (extra: Record<string, unknown> = {}) => ({
  app_id: APP,
  include_player_ids: [pid(1)],
  contents: { en: 'oi' },
  ...extra,
})

function refused(f: () => unknown): { status: number; key: string; explain: Record<string, unknown> } | null {
  try {
    f()
    return null
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    return { status: e.status, key: e.key, explain: (e.params ?? {}) as Record<string, unknown> }
  }
}

t.test('defaults are the spec Limits table', async (t) => {
  const l = DEFAULT_LIMITS
  t.same(
    [l.sendTargetsMax, l.sendSegmentsMax, l.ttlDefaultS, l.ttlMaxS, l.collapseIdMaxBytes, l.sendAfterMaxDays, l.payloadMaxBytes],
    [2_000, 10, 259_200, 2_419_200, 64, 28, 3_891],
  )
  t.same([l.idempotencyTtlDays, l.idempotencyWaitMs, l.sendsListMax, l.readCacheMs], [30, 3_000, 50, 1_000])
})

t.test('each send limit follows its setting', async (t) => {
  const lim = loadConfig({
    PM_LIMIT_SEND_TARGETS: '3',
    PM_LIMIT_SEND_SEGMENTS: '1',
    PM_TTL_DEFAULT_S: '60',
    PM_TTL_MAX_S: '120',
    PM_LIMIT_COLLAPSE_ID_BYTES: '4',
    PM_SEND_AFTER_MAX_DAYS: '1',
    PM_LIMIT_PAYLOAD_BYTES: '300',
  }).limits
  const parse = (extra: Record<string, unknown>) => parseSend(body(extra), {}, NOW, lim)

  t.ok(parse({ include_player_ids: [pid(1), pid(2), pid(3)] }), '3 ids pass')
  t.equal(refused(() => parse({ include_player_ids: [pid(1), pid(2), pid(3), pid(4)] }))?.status, 400, '4 ids refused')
  t.ok(
    refused(() => parseSend(body({ include_player_ids: [pid(1), pid(2), pid(3), pid(4)] }), {}, NOW)) === null,
    'the default allows them',
  )
  t.equal(
    refused(() => parse({ include_player_ids: undefined, included_segments: ['Active Users', 'Engaged Users'] }))?.status,
    400,
  )
  t.equal(parse({}).ttlS, 60, 'default ttl')
  t.equal(refused(() => parse({ ttl: 121 }))?.status, 400, 'ttl over the maximum')
  t.ok(parse({ ttl: 120 }))
  t.equal(refused(() => parse({ collapse_id: 'abcde' }))?.status, 400, 'collapse_id over 4 bytes')
  t.ok(parse({ collapse_id: 'abcd' }))
  const tooFar = refused(() => parse({ send_after: new Date(NOW + 2 * 86_400_000).toISOString() }))
  t.same([tooFar?.key, tooFar?.explain.limite_dias], ['SEND_AFTER_TOO_FAR', 1])
  const big = refused(() => parse({ contents: { en: 'x'.repeat(200) } }))
  t.same([big?.key, big?.explain.limite], ['PAYLOAD_TOO_LARGE', 300])
  t.ok(parseSend(body({ contents: { en: 'x'.repeat(200) } }), {}, NOW), 'the default payload limit allows it')
})

t.test('device, receipt and app limits follow their settings', async (t) => {
  const l = DEFAULT_LIMITS
  t.same(
    [l.identifierMaxBytes, l.externalUserIdMaxBytes, l.tagsMaxBytes, l.languageMaxBytes, l.timezoneMaxS, l.profileTruncateBytes],
    [194, 128, 2_048, 32, 86_400, 64],
  )
  t.same([l.rcptMaxChars, l.receiptWindowDays, l.defaultRatePerMin], [64, 90, 60_000])
  const lim = loadConfig({
    PM_LIMIT_IDENTIFIER_BYTES: '5',
    PM_LIMIT_EXTERNAL_USER_ID_BYTES: '3',
    PM_LIMIT_TAGS_BYTES: '10',
    PM_LIMIT_LANGUAGE_BYTES: '2',
    PM_LIMIT_TIMEZONE_S: '60',
    PM_PROFILE_TRUNCATE_BYTES: '4',
    PM_LIMIT_RCPT_CHARS: '8',
  }).limits
  const dev = { app_id: APP, device_type: 1, identifier: 'tok12' }
  const field = (f: () => unknown) => refused(f)?.explain.campo
  t.ok(parseRegistration(dev, lim))
  t.equal(
    field(() => parseRegistration({ ...dev, identifier: 'tok123' }, lim)),
    'identifier',
  )
  t.equal(
    field(() => parseRegistration({ ...dev, external_user_id: 'abcd' }, lim)),
    'external_user_id',
  )
  t.equal(
    field(() => parseUpdate({ app_id: APP, external_user_id: 'abcd' }, lim)),
    'external_user_id',
  )
  t.equal(
    field(() => parseRegistration({ ...dev, tags: { a: '1234567' } }, lim)),
    'tags',
  )
  t.equal(
    field(() => parseRegistration({ ...dev, language: 'pt-BR' }, lim)),
    'language',
  )
  t.equal(
    field(() => parseRegistration({ ...dev, timezone: 61 }, lim)),
    'timezone',
  )
  t.equal(parseRegistration({ ...dev, pais: 'Brasil' }, lim).pais, 'Bras')
  t.equal(parseRegistration({ ...dev, identifier: 'x'.repeat(194), pais: 'Brasil' }).pais, 'Brasil', 'defaults')
  const receipt = { app_id: APP, notification_id: APP, player_id: APP, rcpt: 'x'.repeat(9) }
  t.equal(
    field(() => parseReceipt(receipt, lim.rcptMaxChars)),
    'rcpt',
  )
  t.ok(parseReceipt(receipt), 'the default allows 64')
})

t.test('in-app limits follow their settings', async (t) => {
  const lim = loadConfig({
    PM_INAPP_CAP_TOTAL_DEFAULT: '3',
    PM_INAPP_COOLDOWN_H_DEFAULT: '2',
    PM_INAPP_PRIORIDADE_DEFAULT: '7',
    PM_INAPP_ATRASO_MS_DEFAULT: '10',
    PM_INAPP_ATRASO_MS_MAX: '20',
    PM_INAPP_FECHAR_APOS_MS_MAX: '30',
    PM_INAPP_TITULO_CHARS: '3',
    PM_INAPP_CORPO_CHARS: '4',
    PM_INAPP_BOTAO_CHARS: '2',
    PM_INAPP_BLOCKS_MAX: '1',
    PM_INAPP_OCORRENCIA_MAX: '5',
  }).limits
  const card = { pt: { titulo: 'Olá', corpo: 'Oi!' } }
  const ok = parseCampaign({ conteudo: card }, undefined, lim).def
  t.same(ok.regras, { cap_total: 3, cooldown_h: 2, fechar_apos_ms: 0, prioridade: 7 })
  t.equal(ok.gatilho.atraso_ms, 10)
  const campos = (body: Record<string, unknown>) =>
    ((refused(() => parseCampaign(body, undefined, lim))?.explain.problemas ?? []) as Array<{ campo: string }>).map(
      (x) => x.campo,
    )
  t.same(campos({ conteudo: { pt: { titulo: 'Olá!' } } }), ['conteudo.pt.titulo'])
  t.same(campos({ conteudo: { pt: { corpo: 'Olá!!' } } }), ['conteudo.pt.corpo'])
  t.same(campos({ conteudo: { pt: { botao: { texto: 'Sim', acao: { tipo: 'dismiss' } } } } }), ['conteudo.pt.botao.texto'])
  t.same(campos({ conteudo: card, gatilho: { atraso_ms: 21 } }), ['gatilho.atraso_ms'])
  t.same(campos({ conteudo: card, regras: { fechar_apos_ms: 31 } }), ['regras.fechar_apos_ms'])
  t.same(campos({ conteudo: card, regras: { cap_total: 6 } }), ['regras.cap_total'])
  const blocos = [
    { tipo: 'texto', texto: 'a' },
    { tipo: 'texto', texto: 'b' },
  ]
  t.same(campos({ conteudo: { pt: { blocos } } }), ['conteudo.pt.blocos'])
  t.same(
    parseCampaign({ conteudo: card }).def.regras,
    { cap_total: 1, cooldown_h: 24, fechar_apos_ms: 0, prioridade: 100 },
    'defaults',
  )
  const ev = { campanha_id: APP, prova: 'p', evento: 'clique', ocorrencia_n: 6, em: new Date(NOW).toISOString() }
  const o = { batchMax: 50, pastMs: 86_400_000, futureMs: 60_000 }
  t.equal(
    refused(() =>
      parseEvents({ app_id: APP, player_id: APP, eventos: [ev] }, NOW, { ...o, occurrenceMax: lim.inappOccurrenceMax }),
    )?.explain.campo,
    'eventos[0].ocorrencia_n',
  )
  t.ok(parseEvents({ app_id: APP, player_id: APP, eventos: [ev] }, NOW, o), 'the default allows 6')
})

t.test('the app-wide in-app cap and the delivery attempts: defaults are the spec, settings move them', async (t) => {
  t.equal(DEFAULT_LIMITS.inappCapHoursDefault, 6)
  t.equal(DEFAULT_DELIVERY.maxAttempts, 3, 'three attempts in all')
  t.equal(loadConfig({ PM_INAPP_CAP_HORAS_DEFAULT: '0' }).limits.inappCapHoursDefault, 0)
  t.equal(loadConfig({ PM_DELIVERY_MAX_ATTEMPTS: '5' }).delivery.maxAttempts, 5)
  t.throws(() => loadConfig({ PM_DELIVERY_MAX_ATTEMPTS: '0' }), /PM_DELIVERY_MAX_ATTEMPTS/)
  t.throws(() => loadConfig({ PM_INAPP_CAP_HORAS_DEFAULT: '12', PM_INAPP_CAP_HORAS_MAX: '10' }), /PM_INAPP_CAP_HORAS_DEFAULT/)
  t.throws(
    () => loadConfig({ PM_INAPP_CAP_HORAS_MAX: '169' }),
    /PM_INAPP_CAP_HORAS_MAX: 169 is above 168/,
    'the database stores at most 168',
  )
  t.equal(loadConfig({ PM_INAPP_CAP_HORAS_MAX: '168' }).limits.inappCapHoursMax, 168)
})

t.test('tuning numbers: defaults are the values the modules used, and each group follows its settings', async (t) => {
  const c = loadConfig({})
  t.same(c.stream, {
    heartbeatMs: 2_000,
    ttlMs: 6_000,
    positionEveryMs: 10_000,
    maxPerApp: 100,
    recheckMs: 30_000,
    pollMs: 1_000,
    page: 200,
  })
  t.same(c.exports, {
    initialRowsPerSec: 350_000,
    maxBuilds: 2,
    maxQueued: 100,
    sweepEveryMs: 600_000,
    claimEveryMs: 30_000,
    claimStaleMs: 120_000,
    recoverBatch: 10,
  })
  const d = c.delivery
  t.same(
    [
      d.outcomeQueueMax,
      d.sendLoadQueueMax,
      d.sliceIdlePollMs,
      d.sliceWatchMs,
      d.credentialCacheMs,
      d.maxSlices,
      d.apnsSuspectPercent,
    ],
    [200_000, 200_000, 1_000, 500, 30_000, 256, 50],
  )
  const l = c.limits
  t.same(
    [l.appCacheMax, l.readCacheMax, l.inappProfileCacheMax, l.inappMemoMax, l.inappServedSeenMax, l.inappServedQueueMax],
    [100_000, 10_000, 500_000, 200_000, 1_000_000, 100_000],
  )
  t.same([l.idempotencyLockTtlMs, l.idempotencyPollMs, c.statementTimeoutMs, c.opsCheckTimeoutMs], [15_000, 25, 30_000, 1_000])
  t.same([c.webhook.batchMaxMs, c.dashboard.inviteTtlMs], [1_000, 72 * 3_600_000])
  // A stream's expiry must outlast its heartbeat, and a build's claim its refresh: otherwise live streams stop
  // counting and live builds are taken over.
  t.throws(() => loadConfig({ PM_GRPC_HEARTBEAT_MS: '6000' }), /PM_GRPC_STREAM_TTL_MS/)
  t.throws(() => loadConfig({ PM_EXPORT_CLAIM_EVERY_MS: '120000' }), /PM_EXPORT_CLAIM_STALE_MS/)
  t.equal(loadConfig({ PM_GRPC_HEARTBEAT_MS: '500', PM_GRPC_STREAM_TTL_MS: '1500' }).stream.ttlMs, 1_500)
})
