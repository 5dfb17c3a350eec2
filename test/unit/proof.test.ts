// The proof of arrival (the spec, Receipt): base64url of the first 24 bytes of HMAC-SHA256 over `<send-id>:<device-id>`
// with the app's receipt key, 32 characters; checked in constant time by the receipt route.
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { proof, verifyProof } from '../../src/delivery/proof'

t.test('a known proof', async (t) => {
  const key = Buffer.alloc(32, 7)
  const p = proof(key, '0f8fad5b-d9cb-469f-a165-70867728950e', '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b')
  t.equal(p, 'YCiaDij1zhmqhf4m-2OE-rXp6ebC3Y9U')
  t.equal(p.length, 32)
})

t.test('the first 24 bytes of the HMAC, for any key and ids', async (t) => {
  for (let i = 0; i < 500; i++) {
    const key = randomBytes(32)
    const [s, d] = [randomUUID(), randomUUID()]
    const expected = createHmac('sha256', key).update(`${s}:${d}`).digest().subarray(0, 24).toString('base64url')
    if (proof(key, s, d) !== expected) t.fail(`differs for ${s}:${d}`)
  }
  t.pass('500 random keys and ids')
})

t.test('verifyProof accepts the proof and nothing else', async (t) => {
  const key = randomBytes(32)
  const [s, d] = [randomUUID(), randomUUID()]
  const p = proof(key, s, d)
  t.ok(verifyProof(key, s, d, p))
  t.notOk(verifyProof(key, s, d, `${p.slice(0, 31)}${p[31] === 'A' ? 'B' : 'A'}`), 'one character changed')
  t.notOk(verifyProof(key, s, d, p.slice(0, 31)), 'one character short')
  t.notOk(verifyProof(randomBytes(32), s, d, p), 'another key')
  t.notOk(verifyProof(key, d, s, p), 'ids swapped')
})
