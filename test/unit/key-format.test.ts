import t from 'tap'
import { kidOf, newApiKey, newReceiptKey, parseKey, readAuthorization, sha256 } from '../../src/apps/key-format'

t.test('new keys have the spec format and only their sha256 is needed to check them', async (t) => {
  const live = newApiKey(false)
  t.match(live.apiKey, /^pm_live_[a-z0-9]{8}_[A-Za-z0-9]{43}$/)
  t.equal(live.apiKey.split('_')[2], live.kid)
  t.same(live.hash, sha256(live.apiKey))
  t.match(newApiKey(true).apiKey, /^pm_test_[a-z0-9]{8}_[A-Za-z0-9]{43}$/)
  t.not(newApiKey(false).apiKey, newApiKey(false).apiKey)
  t.match(newReceiptKey(), /^[0-9a-f]{64}$/)
})

t.test('parseKey accepts only the two prefixes with an 8-char kid and 43-char secret', async (t) => {
  const k = newApiKey(true).apiKey
  t.same(parseKey(k), { raw: k, sandbox: true, kid: k.slice(8, 16) })
  t.equal(parseKey(k.replace('pm_test_', 'pm_prod_')), null)
  t.equal(parseKey(k.slice(0, -1)), null)
  t.equal(parseKey(`${k}x`), null)
  t.equal(parseKey(k.replace(/_[a-z0-9]{8}_/, '_ABCDEFGH_')), null)
})

t.test('the three Authorization forms', async (t) => {
  const k = newApiKey(false).apiKey
  for (const h of [`Basic ${k}`, `Bearer ${k}`, `bearer ${k}`, `Basic ${Buffer.from(`qualquer:${k}`).toString('base64')}`]) {
    const r = readAuthorization(h)
    t.equal(r.kind, 'key', h)
    if (r.kind === 'key') t.equal(r.key.raw, k)
  }
  t.equal(readAuthorization(`Basic ${Buffer.from(`:${k}`).toString('base64')}`).kind, 'key', 'empty text before the colon')
  t.same(readAuthorization(undefined), { kind: 'missing' })
  t.same(readAuthorization('  '), { kind: 'missing' })
  t.equal(readAuthorization(`Token ${k}`).kind, 'malformed')
  t.equal(readAuthorization(k).kind, 'malformed', 'no scheme')
  t.equal(readAuthorization(`Bearer ${Buffer.from(`x:${k}`).toString('base64')}`).kind, 'malformed', 'base64 form is Basic only')
  t.equal(readAuthorization('Basic bm90LWEta2V5').kind, 'malformed')
})

t.test('kidOf reveals a kid only from something shaped like a key', async (t) => {
  t.equal(kidOf('pm_live_abcd1234_whatever'), 'abcd1234')
  t.equal(kidOf('some-random-secret'), undefined)
  const r = readAuthorization('Bearer pm_live_abcd1234_short')
  t.same(r, { kind: 'malformed', kid: 'abcd1234' })
})
