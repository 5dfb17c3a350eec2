// The proof of arrival (the spec, Receipt): base64url of the first 24 bytes of HMAC-SHA256 over `<send-id>:<device-id>`
// with the app's receipt key, 32 characters; checked in constant time by the receipt route.
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { proof, verifyProof } from '../../src/message/proof'

t.test('a known proof', async (t) => {
  const key = Buffer.alloc(32, 7)
  const p = proof(key, '0f8fad5b-d9cb-469f-a165-70867728950e', '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b')
  t.equal(p, 'YCiaDij1zhmqhf4m-2OE-rXp6ebC3Y9U')
  t.equal(p.length, 32)
})

t.test('the first 24 bytes of the HMAC, for any key and ids', async (t) => {
  const differ: string[] = []
  for (let i = 0; i < 500; i++) {
    const key = randomBytes(32)
    const [s, d] = [randomUUID(), randomUUID()]
    const expected = createHmac('sha256', key).update(`${s}:${d}`).digest().subarray(0, 24).toString('base64url')
    if (proof(key, s, d) !== expected) differ.push(`${s}:${d}`)
  }
  t.same(differ, [], '500 random keys and ids')
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

const reference = (key: Buffer, s: string, d: string) =>
  createHmac('sha256', key).update(`${s}:${d}`).digest().subarray(0, 24).toString('base64url')

t.test('keys of every length RFC 2104 distinguishes: shorter than, equal to and longer than the 64-byte block', async (t) => {
  for (const n of [1, 16, 32, 63, 64, 65, 100, 200]) {
    const key = randomBytes(n)
    const [s, d] = [randomUUID(), randomUUID()]
    t.equal(proof(key, s, d), reference(key, s, d), `${n}-byte key`)
  }
})

t.test('ids other than canonical UUIDs give the same HMAC (the general path)', async (t) => {
  const key = randomBytes(32)
  for (const [s, d] of [
    ['a', 'b'],
    [randomUUID(), 'não-é-uuid'],
    ['ção'.repeat(12), randomUUID()], // 36 characters, not ASCII: the length alone would pass
    [randomUUID().toUpperCase(), randomUUID()],
    ['', ''],
  ] as Array<[string, string]>) {
    t.equal(proof(key, s, d), reference(key, s, d), `${s}:${d}`)
  }
})

t.test('interleaved keys, and a key buffer whose bytes change, never mix their proofs', async (t) => {
  const a = randomBytes(32)
  const b = randomBytes(32)
  for (let i = 0; i < 50; i++) {
    const key = i % 2 === 0 ? a : b
    const [s, d] = [randomUUID(), randomUUID()]
    if (proof(key, s, d) !== reference(key, s, d)) t.fail(`differs at ${i}`)
  }
  const key = randomBytes(32)
  const [s, d] = [randomUUID(), randomUUID()]
  const before = proof(key, s, d)
  key[0] = (key[0] as number) ^ 0xff
  t.not(proof(key, s, d), before, 'the changed key gives another proof')
  t.equal(proof(key, s, d), reference(key, s, d), 'the one its new bytes give')
})
