import t from 'tap'
import { ApiError } from '../../src/core/errors'
import { Vault } from '../../src/core/vault'

const key = Buffer.alloc(32, 7)

t.test('seal/open round-trips and every seal is different', async (t) => {
  const v = new Vault(key)
  const a = v.seal('segredo', 'app:1')
  const b = v.seal('segredo', 'app:1')
  t.not(a.toString('hex'), b.toString('hex'))
  t.equal(v.open(a, 'app:1').toString(), 'segredo')
  t.notOk(a.includes(Buffer.from('segredo')), 'the plain text does not appear in the sealed form')
})

t.test('a sealed value is bound to its owner and its key', async (t) => {
  const v = new Vault(key)
  const sealed = v.seal('segredo', 'app:1')
  t.throws(() => v.open(sealed, 'app:2'))
  t.throws(() => new Vault(Buffer.alloc(32, 8)).open(sealed, 'app:1'))
  const tampered = Buffer.from(sealed)
  tampered[tampered.length - 1] = (tampered[tampered.length - 1] as number) ^ 1
  t.throws(() => v.open(tampered, 'app:1'))
})

t.test('without a vault key, using it is the named 503', async (t) => {
  const v = new Vault(null)
  t.equal(v.configured, false)
  const err = t.throws(() => v.seal('x', 'y')) as unknown as ApiError
  t.ok(err instanceof ApiError)
  t.equal(err.key, 'VAULT_UNSET')
  t.equal(err.status, 503)
})
