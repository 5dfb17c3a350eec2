// The SDK's pure in-app rules: the evento comparators (text never equals a number; maior/menor compare numbers
// only), eligibility (dates, cap_total, cooldown_h, inapp_cap_horas) and priority, checked by example and by
// property over generated values.
import { choose, eligible, type History, type InappMessage, matches, pickContent, record } from '@pombo/sdk'
import fc from 'fast-check'
import t from 'tap'

const H = 3_600_000
const msg = (id: string, regras: Partial<InappMessage['regras']> = {}, extra: Partial<InappMessage> = {}): InappMessage => ({
  campanha_id: id,
  formato: 'modal',
  conteudo: { pt: { titulo: 'x' } },
  gatilho: { tipo: 'ao_abrir', atraso_ms: 0 },
  regras: { cap_total: 1, cooldown_h: 24, fechar_apos_ms: 0, prioridade: 100, ...regras },
  prova: 'p',
  ...extra,
})
const fresh = (): History => ({ shown: {}, lastAny: 0 })

t.test('comparators by example', async (t) => {
  t.ok(matches('igual', 10, true, 10))
  t.notOk(matches('igual', 10, true, '10'), 'the number 10 is not the text "10"')
  t.notOk(matches('igual', '10', true, 10))
  t.ok(matches('igual', '10', true, '10'))
  t.notOk(matches('igual', 10, false, undefined))
  t.ok(matches('diferente', 'ouro', true, 'prata'))
  t.ok(matches('diferente', 10, true, '10'), 'a text differs from a number')
  t.notOk(matches('diferente', 'ouro', true, 'ouro'))
  t.notOk(matches('diferente', 'ouro', false, undefined), 'a key never signalled has no value to differ')
  t.ok(matches('maior', 5, true, 6))
  t.notOk(matches('maior', 5, true, 5))
  t.notOk(matches('maior', 5, true, '6'), 'maior never compares text')
  t.ok(matches('menor', 5, true, 4.5))
  t.notOk(matches('menor', 5, true, '4'))
  t.ok(matches('existe', undefined, true, 'x'))
  t.notOk(matches('existe', undefined, false, undefined))
  t.ok(matches('nao_existe', undefined, false, undefined))
  t.notOk(matches('nao_existe', undefined, true, 0))
  t.notOk(matches(undefined, 1, true, 1), 'no comparator: never')
})

const value = fc.oneof(fc.string({ minLength: 1, maxLength: 120 }), fc.double({ min: -1e12, max: 1e12, noNaN: true }))

t.test('comparators by property', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.double({ noNaN: true, noDefaultInfinity: true }), (s, n) => {
        // Text and numbers never meet: whatever the spelling.
        return !matches('igual', n, true, s) && !matches('igual', s, true, n) && !matches('igual', String(n), true, n)
      }),
    ),
  )
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(value, value, (valor, v) => {
        const igual = matches('igual', valor, true, v)
        const dif = matches('diferente', valor, true, v)
        return igual !== dif // present: exactly one of igual/diferente
      }),
    ),
  )
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(value, value, (valor, v) => {
        const maior = matches('maior', valor, true, v)
        const menor = matches('menor', valor, true, v)
        if (typeof valor !== 'number' || typeof v !== 'number') return !maior && !menor
        return maior === v > valor && menor === v < valor && !(maior && menor)
      }),
    ),
  )
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(
        fc.boolean(),
        value,
        (present, v) => matches('existe', undefined, present, v) !== matches('nao_existe', undefined, present, v),
      ),
    ),
  )
})

t.test('eligibility: cap_total, cooldown_h, the global gap, and the campaign dates', async (t) => {
  const now = 1_800_000_000_000
  const m = msg('a', { cap_total: 2, cooldown_h: 1 })
  t.same(eligible(m, fresh(), 6, now), { ok: true, n: 1 })
  let h = record(fresh(), 'a', 1, now)
  t.same(eligible(m, h, 0, now + H - 1), { ok: false, why: 'cooldown' })
  t.same(eligible(m, h, 0, now + H), { ok: true, n: 2 })
  t.same(eligible(m, h, 6, now + H), { ok: false, why: 'cap_global' }, 'the app gap applies across campaigns too')
  h = record(h, 'a', 2, now + H)
  t.same(eligible(m, h, 0, now + 100 * H), { ok: false, why: 'cap_total' })
  const unlimited = msg('u', { cap_total: 0, cooldown_h: 0 })
  t.same(eligible(unlimited, { shown: { u: { n: 499, last: now } }, lastAny: now }, 0, now), { ok: true, n: 500 })
  t.same(
    eligible(unlimited, { shown: { u: { n: 500, last: now } }, lastAny: now }, 0, now),
    { ok: false, why: 'cap_total' },
    'ocorrencia_n stops at 500',
  )
  t.same(eligible(msg('b'), record(fresh(), 'a', 1, now), 6, now + 6 * H - 1), { ok: false, why: 'cap_global' })
  t.same(eligible(msg('b'), record(fresh(), 'a', 1, now), 6, now + 6 * H), { ok: true, n: 1 })
  const later = msg('c', {}, { inicia_em: new Date(now + 1000).toISOString(), termina_em: new Date(now + 2000).toISOString() })
  t.same(eligible(later, fresh(), 0, now), { ok: false, why: 'antes_do_inicio' })
  t.same(eligible(later, fresh(), 0, now + 1000), { ok: true, n: 1 })
  t.same(eligible(later, fresh(), 0, now + 2000), { ok: false, why: 'encerrada' })
})

t.test('choose: the eligible campaign of highest priority, package order on ties (property)', async (t) => {
  const now = 1_800_000_000_000
  const arb = fc.uniqueArray(fc.record({ id: fc.uuid(), p: fc.integer({ min: 0, max: 1000 }), shown: fc.boolean() }), {
    minLength: 1,
    maxLength: 8,
    selector: (x) => x.id,
  })
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(arb, (list) => {
        const msgs = list.map((x) => msg(x.id, { prioridade: x.p, cap_total: 1 }))
        const h: History = {
          shown: Object.fromEntries(list.filter((x) => x.shown).map((x) => [x.id, { n: 1, last: 0 }])),
          lastAny: 0,
        }
        const order = list.map((x) => x.id)
        const pick = choose(msgs, order, h, 0, now)
        const open = list.filter((x) => !x.shown)
        if (open.length === 0) return pick === null
        const best = Math.max(...open.map((x) => x.p))
        const first = open.find((x) => x.p === best)
        return pick?.m.campanha_id === first?.id && pick?.n === 1
      }),
    ),
  )
})

t.test('content: the device language, else pt, else the first block', async (t) => {
  const c = { pt: { titulo: 'Olá' }, en: { titulo: 'Hi' } }
  t.same(pickContent(c, 'en'), { idioma: 'en', bloco: { titulo: 'Hi' } })
  t.same(pickContent(c, 'de'), { idioma: 'pt', bloco: { titulo: 'Olá' } })
  t.same(pickContent(c, undefined), { idioma: 'pt', bloco: { titulo: 'Olá' } })
  t.same(pickContent({ es: { titulo: 'Hola' } }, 'de'), { idioma: 'es', bloco: { titulo: 'Hola' } })
})
