// Campaign dates (the spec, In-app campaign `inicia_em`/`termina_em` and the In-app error table): a value outside RFC 3339
// is a 400 naming the field, on create and on PATCH, with nothing written; a readable date that breaks a rule
// (end not after start) stays a 422 listing it.
import t, { type Test } from 'tap'
import { type InappWorld, inappWorld } from '../helpers/inapp'
import type { Answer } from '../helpers/service'

const MALFORMED: ReadonlyArray<[string, unknown]> = [
  ['no zone', '2030-06-01T10:00:00'],
  ['date only', '2030-06-01'],
  ['no seconds', '2030-06-01T10:00Z'],
  ['month 13', '2026-13-01T00:00:00Z'],
  ['February 30', '2030-02-30T00:00:00Z'],
  ['February 29 of a common year', '2027-02-29T00:00:00Z'],
  ['April 31', '2030-04-31T10:00:00Z'],
  ['hour 24', '2030-01-01T24:00:00Z'],
  ['leap second on a leap-second day', '2016-12-31T23:59:60Z'],
  ['leap second elsewhere', '2030-06-30T23:59:60+00:00'],
  ['offset minutes 60', '2030-01-01T10:00:00+23:60'],
  ['offset without colon', '2030-01-01T10:00:00-0300'],
  ['the send_after form', '2030-01-01 10:00:00 GMT-0300'],
  ['expanded year', '+02030-01-01T10:00:00Z'],
  ['epoch seconds', 1_900_000_000],
  ['epoch milliseconds', 1_900_000_000_000],
  ['a number as text', '1900000000'],
  ['empty string', ''],
  ['very long string', `2030-01-01T10:00:00Z${'9'.repeat(20_000)}`],
  ['boolean', true],
  ['object', { em: '2030-01-01T10:00:00Z' }],
]

const ACCEPTED = [
  '2030-01-01T09:00:00-03:00',
  '2030-01-01T09:00:00.5+05:30',
  '2030-01-01T12:00:00.123456Z',
  '2030-01-01t12:00:00.123456789z',
  '2030-01-01T00:00:00-00:00',
  '2030-12-31T23:59:59+14:00',
  '2028-02-29T00:00:00Z',
]

/** The exact 400 the spec's "dates outside RFC 3339" answers with, naming the field. */
function isDate400(t: Test, r: Answer, campo: string, label: string): void {
  const motivo = 'deve ser uma data RFC 3339 com fuso (ex.: 2026-12-01T09:00:00-03:00)'
  t.equal(r.status, 400, label)
  t.same(
    r.json,
    {
      errors: [`Campo inválido: ${campo}: ${motivo}`],
      explain: {
        causa: `O campo ${campo} ${motivo}.`,
        como_corrigir: `Corrija o campo ${campo} conforme a especificação.`,
        request_id: r.headers.get('x-pm-request-id'),
        campo,
      },
    },
    label,
  )
}

async function campaigns(w: InappWorld): Promise<unknown[]> {
  return w.s.sql('SELECT id, definition, atualizado_em FROM inapp_campaigns ORDER BY id')
}

t.test('create: a date outside RFC 3339 is a 400 naming the field; nothing is written', async (t) => {
  const w = await inappWorld(t)
  for (const campo of ['inicia_em', 'termina_em']) {
    for (const [label, v] of MALFORMED) isDate400(t, await w.create({ [campo]: v }), campo, `${campo}: ${label}`)
  }
  isDate400(t, await w.create({ inicia_em: '2030-01-01T10:00:00Z', termina_em: '2030-01-02' }), 'termina_em', 'one good, one bad')
  isDate400(
    t,
    await w.create({ inicia_em: 'amanhã', formato: 'popup', conteudo: { pt: {} } }),
    'inicia_em',
    'an unreadable date is answered before the other problems of the campaign',
  )
  t.same(await campaigns(w), [], 'nothing written')
})

t.test('PATCH: a date outside RFC 3339 is a 400 whatever the state; the campaign is left as it was', async (t) => {
  const w = await inappWorld(t)
  const draft = await w.campaign({ inicia_em: '2030-01-01T10:00:00Z' }, false)
  const active = await w.campaign({ termina_em: '2031-01-01T10:00:00Z' })
  const ended = await w.campaign({}, false)
  t.equal((await w.op(ended, 'encerrar')).status, 200)
  const before = await campaigns(w)
  const patch = (id: string, body: Record<string, unknown>) =>
    w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, ...body })
  for (const id of [draft, active]) {
    for (const campo of ['inicia_em', 'termina_em']) {
      for (const [label, v] of MALFORMED) isDate400(t, await patch(id, { [campo]: v }), campo, `PATCH ${campo}: ${label}`)
    }
  }
  isDate400(t, await patch(ended, { termina_em: '2031-01-01' }), 'termina_em', 'an ended campaign: 400 before the 409')
  t.equal((await patch(ended, { nome: 'x' })).status, 409, 'the ended campaign still refuses a readable edit')
  t.same(await campaigns(w), before, 'nothing changed')
})

t.test('RFC 3339 with offsets and fractions is accepted and read back as sent', async (t) => {
  const w = await inappWorld(t)
  for (const v of ACCEPTED) {
    const r = await w.create({ inicia_em: v })
    t.equal(r.status, 201, v)
    t.equal(r.json.inicia_em, v, `${v}: stored as sent`)
    const e = await w.create({ termina_em: v })
    t.equal(e.status, 201, v)
    const p = await w.call('PATCH', `/api/v1/in_app_messages/${r.json.id}`, {
      app_id: w.app.id,
      termina_em: '2031-01-01T00:00:00.25-02:30',
    })
    t.equal(p.status, 200, `PATCH after ${v}`)
    t.equal(p.json.termina_em, '2031-01-01T00:00:00.25-02:30')
  }
  const id = (await w.create({ inicia_em: '2030-01-01T10:00:00Z' })).json.id
  const cleared = await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, inicia_em: null })
  t.equal(cleared.status, 200, 'null clears, it is not a malformed date')
  t.equal(cleared.json.inicia_em, null)
  t.equal((await w.create({ inicia_em: null, termina_em: null })).status, 201, 'null on create: no date')
})

t.test('a readable date that breaks a rule stays a 422 listing it', async (t) => {
  const w = await inappWorld(t)
  const order = (r: Answer, label: string) => {
    t.equal(r.status, 422, label)
    t.same(r.json.explain.problemas, [{ campo: 'termina_em', motivo: 'deve ser posterior a inicia_em' }], label)
  }
  order(await w.create({ inicia_em: '2030-01-02T00:00:00Z', termina_em: '2030-01-01T00:00:00Z' }), 'end before start')
  order(await w.create({ inicia_em: '2030-01-01T00:00:00Z', termina_em: '2030-01-01T00:00:00Z' }), 'end equal to start')
  order(
    await w.create({ inicia_em: '2030-01-01T10:00:00+02:00', termina_em: '2030-01-01T09:30:00+02:30' }),
    'end before start once the offsets are applied',
  )
  t.equal(
    (await w.create({ inicia_em: '2030-01-01T10:00:00+02:00', termina_em: '2030-01-01T08:00:01Z' })).status,
    201,
    'one second after the start, across offsets',
  )
  const id = (await w.create({ inicia_em: '2030-06-01T00:00:00Z' })).json.id
  const before = await campaigns(w)
  order(
    await w.call('PATCH', `/api/v1/in_app_messages/${id}`, { app_id: w.app.id, termina_em: '2030-05-31T23:59:59Z' }),
    'PATCH: end before the stored start',
  )
  t.same(await campaigns(w), before, 'nothing changed')
  const inRules = await w.create({ regras: { inicia_em: '2030-01-01T00:00:00Z' } })
  t.equal(inRules.status, 422, 'a date inside regras is a misplaced field, not an unreadable date')
  t.same(
    inRules.json.explain.problemas.map((p: { campo: string }) => p.campo),
    ['regras.inicia_em'],
  )
})
