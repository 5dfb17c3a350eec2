// HPACK (src/h2/hpack.ts): RFC 7541's Appendix C examples byte for byte, the Huffman code, the
// encoder's policy against our own decoder, interoperation with nghttp2 (node:http2 over a raw h2c socket, both
// directions), and malformed blocks, which must fail as HpackError and nothing else.
import http2 from 'node:http2'
import net, { type AddressInfo } from 'node:net'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import {
  decodeInteger,
  encodeInteger,
  HpackDecoder,
  HpackEncoder,
  HpackError,
  HUFFMAN_CODES,
  HUFFMAN_EOS,
  HUFFMAN_LENGTHS,
  huffmanDecode,
  huffmanEncode,
  STATIC_TABLE,
} from '../../src/h2/hpack'

type Fields = Array<[string, string]>

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex')
const huff = (b: Buffer) => huffmanDecode(b, 0, b.length)

/** A small seeded generator, so that a failure can be replayed. */
function prng(seed: number) {
  let s = seed >>> 0
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = s
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32
  }
  const int = (n: number) => Math.floor(next() * n)
  /** Printable ASCII, no space at either end (RFC 9113 §8.2.1 makes those malformed). */
  const printable = (n: number) => {
    let out = ''
    for (let i = 0; i < n; i++) {
      const edge = i === 0 || i === n - 1
      out += String.fromCharCode(edge ? 0x21 + int(94) : 0x20 + int(95))
    }
    return out
  }
  const alnum = (n: number) => {
    const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    let out = ''
    for (let i = 0; i < n; i++) out += abc[int(abc.length)]
    return out
  }
  return { next, int, printable, alnum }
}

function throwsHpack(t: Test, fn: () => unknown, what: string) {
  try {
    fn()
    t.fail(`${what}: no error`)
  } catch (err) {
    t.ok(err instanceof HpackError, `${what}: HpackError (${err instanceof Error ? err.message : String(err)})`)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// RFC 7541 Appendix C

t.test('C.1 integer representation', async (t) => {
  t.same(encodeInteger(10, 5), hex('0a'), 'C.1.1: 10 with a 5-bit prefix')
  t.same(encodeInteger(1337, 5), hex('1f9a0a'), 'C.1.2: 1337 with a 5-bit prefix')
  t.same(encodeInteger(42, 8), hex('2a'), 'C.1.3: 42 at an octet boundary')
  t.same(decodeInteger(hex('0a'), 0, 5), { value: 10, next: 1 })
  t.same(decodeInteger(hex('ea'), 0, 5), { value: 10, next: 1 }, 'the bits above the prefix are not part of it')
  t.same(decodeInteger(hex('1f9a0a'), 0, 5), { value: 1337, next: 3 })
  t.same(decodeInteger(hex('2a'), 0, 8), { value: 42, next: 1 })
  t.same(decodeInteger(hex('001f00'), 1, 5), { value: 31, next: 3 }, 'exactly 2^N - 1 takes a zero continuation byte')
  for (const n of [0, 1, 30, 31, 32, 126, 127, 128, 255, 256, 4096, 16_383, 2 ** 20, 2 ** 31 - 1]) {
    for (const prefix of [4, 5, 6, 7, 8]) {
      const b = encodeInteger(n, prefix)
      t.same(decodeInteger(b, 0, prefix), { value: n, next: b.length }, `${n} with a ${prefix}-bit prefix`)
    }
  }
})

t.test('C.2 header field representations', async (t) => {
  const cases: Array<[string, string, Fields, Fields, number]> = [
    [
      'C.2.1 literal with indexing',
      '400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572',
      [['custom-key', 'custom-header']],
      [['custom-key', 'custom-header']],
      55,
    ],
    ['C.2.2 literal without indexing', '040c 2f73 616d 706c 652f 7061 7468', [[':path', '/sample/path']], [], 0],
    ['C.2.3 literal never indexed', '1008 7061 7373 776f 7264 0673 6563 7265 74', [['password', 'secret']], [], 0],
    ['C.2.4 indexed', '82', [[':method', 'GET']], [], 0],
  ]
  for (const [name, wire, fields, table, size] of cases) {
    const d = new HpackDecoder()
    t.same(d.decode(hex(wire)), fields, name)
    t.same(d.entries(), table, `${name}: the dynamic table`)
    t.equal(d.tableSize, size, `${name}: the table size`)
  }
})

/** Decodes blocks in order with one decoder, checking the fields, table (newest first) and size after each. */
function series(t: Test, tableSize: number, steps: Array<[string, Fields, Fields, number]>) {
  const d = new HpackDecoder(tableSize)
  steps.forEach(([wire, fields, table, size], i) => {
    t.same(d.decode(hex(wire)), fields, `block ${i + 1}: the fields`)
    t.same(d.entries(), table, `block ${i + 1}: the dynamic table`)
    t.equal(d.tableSize, size, `block ${i + 1}: the table size`)
  })
}

const C3_FIELDS: Fields[] = [
  [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/'],
    [':authority', 'www.example.com'],
  ],
  [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/'],
    [':authority', 'www.example.com'],
    ['cache-control', 'no-cache'],
  ],
  [
    [':method', 'GET'],
    [':scheme', 'https'],
    [':path', '/index.html'],
    [':authority', 'www.example.com'],
    ['custom-key', 'custom-value'],
  ],
]
const C3_TABLES: Fields[] = [
  [[':authority', 'www.example.com']],
  [
    ['cache-control', 'no-cache'],
    [':authority', 'www.example.com'],
  ],
  [
    ['custom-key', 'custom-value'],
    ['cache-control', 'no-cache'],
    [':authority', 'www.example.com'],
  ],
]
const C3_SIZES = [57, 110, 164]
const C4_WIRE = [
  '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
  '8286 84be 5886 a8eb 1064 9cbf',
  '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
]

t.test('C.3 requests without Huffman, one decoder', async (t) => {
  const wire = [
    '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
    '8286 84be 5808 6e6f 2d63 6163 6865',
    '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
  ]
  series(
    t,
    4096,
    wire.map((w, i) => [w, C3_FIELDS[i]!, C3_TABLES[i]!, C3_SIZES[i]!]),
  )
})

t.test('C.4 requests with Huffman, one decoder', async (t) => {
  series(
    t,
    4096,
    C4_WIRE.map((w, i) => [w, C3_FIELDS[i]!, C3_TABLES[i]!, C3_SIZES[i]!]),
  )
})

t.test('the encoder writes C.4 byte for byte (Huffman when shorter, static names, incremental indexing)', async (t) => {
  const e = new HpackEncoder()
  C3_FIELDS.forEach((fields, i) => {
    t.same(e.encode(fields).toString('hex'), hex(C4_WIRE[i]!).toString('hex'), `request ${i + 1}`)
  })
  t.same(e.entries(), C3_TABLES[2])
  t.equal(e.tableSize, 164)
})

const DATE1 = 'Mon, 21 Oct 2013 20:13:21 GMT'
const DATE2 = 'Mon, 21 Oct 2013 20:13:22 GMT'
const LOCATION = 'https://www.example.com'
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'
const C5_FIELDS: Fields[] = [
  [
    [':status', '302'],
    ['cache-control', 'private'],
    ['date', DATE1],
    ['location', LOCATION],
  ],
  [
    [':status', '307'],
    ['cache-control', 'private'],
    ['date', DATE1],
    ['location', LOCATION],
  ],
  [
    [':status', '200'],
    ['cache-control', 'private'],
    ['date', DATE2],
    ['location', LOCATION],
    ['content-encoding', 'gzip'],
    ['set-cookie', COOKIE],
  ],
]
const C5_TABLES: Fields[] = [
  [
    ['location', LOCATION],
    ['date', DATE1],
    ['cache-control', 'private'],
    [':status', '302'],
  ],
  [
    [':status', '307'],
    ['location', LOCATION],
    ['date', DATE1],
    ['cache-control', 'private'],
  ],
  [
    ['set-cookie', COOKIE],
    ['content-encoding', 'gzip'],
    ['date', DATE2],
  ],
]
const C5_SIZES = [222, 222, 215]

t.test('C.5 responses without Huffman, a 256-octet table: evictions', async (t) => {
  const wire = [
    `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d
     546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d`,
    '4803 3330 37c1 c0bf',
    `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f
     6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b
     2076 6572 7369 6f6e 3d31`,
  ]
  series(
    t,
    256,
    wire.map((w, i) => [w, C5_FIELDS[i]!, C5_TABLES[i]!, C5_SIZES[i]!]),
  )
})

t.test('C.6 responses with Huffman, a 256-octet table: evictions', async (t) => {
  const wire = [
    `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7
     8f0b 97c8 e9ae 82ae 43d3`,
    '4883 640e ffc1 c0bf',
    `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335
     dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
  ]
  series(
    t,
    256,
    wire.map((w, i) => [w, C5_FIELDS[i]!, C5_TABLES[i]!, C5_SIZES[i]!]),
  )
})

t.test('Appendix A: the static table', async (t) => {
  t.equal(STATIC_TABLE.length, 61)
  t.same(STATIC_TABLE[0], [':authority', ''])
  t.same(STATIC_TABLE[7], [':status', '200'])
  t.same(STATIC_TABLE[15], ['accept-encoding', 'gzip, deflate'])
  t.same(STATIC_TABLE[22], ['authorization', ''])
  t.same(STATIC_TABLE[30], ['content-type', ''])
  t.same(STATIC_TABLE[54], ['set-cookie', ''])
  t.same(STATIC_TABLE[60], ['www-authenticate', ''])
  const d = new HpackDecoder()
  const all = Buffer.from(STATIC_TABLE.map((_, i) => 0x80 | (i + 1)))
  t.same(
    d.decode(all),
    STATIC_TABLE.map(([n, v]) => [n, v]),
    'every static index decodes to its entry',
  )
})

// ---------------------------------------------------------------------------------------------------------------
// Huffman

t.test('the Huffman code is the complete canonical code of Appendix B', async (t) => {
  t.equal(HUFFMAN_LENGTHS.length, 257)
  let kraft = 0 // in units of 2^-30, the longest code
  for (const len of HUFFMAN_LENGTHS) kraft += 2 ** (30 - len)
  t.equal(kraft, 2 ** 30, 'Kraft sum exactly 1: the code is complete')
  const known: Array<[number, number, number]> = [
    [32, 0x14, 6],
    [48, 0x0, 5],
    [97, 0x3, 5],
    [101, 0x5, 5],
    [58, 0x5c, 7],
    [37, 0x15, 6],
    [HUFFMAN_EOS, 0x3fffffff, 30],
    [0, 0x1ff8, 13],
    [255, 0x3ffffee, 26],
    [123, 0x7ffe, 15],
    [10, 0x3ffffffc, 30],
    [13, 0x3ffffffd, 30],
    [22, 0x3ffffffe, 30],
    [128, 0xfffe6, 20],
    [200, 0x3ffffe2, 26],
  ]
  for (const [sym, code, len] of known) {
    t.equal(HUFFMAN_CODES[sym], code, `code of ${sym}`)
    t.equal(HUFFMAN_LENGTHS[sym], len, `length of ${sym}`)
  }
  // Canonical: ordered by (length, symbol), each code is the previous one plus one, shifted to the new length.
  const order = [...Array(257).keys()].sort((a, b) => HUFFMAN_LENGTHS[a]! - HUFFMAN_LENGTHS[b]! || a - b)
  let ok = true
  for (let i = 1; i < order.length; i++) {
    const a = order[i - 1]!
    const b = order[i]!
    if (HUFFMAN_CODES[b] !== (HUFFMAN_CODES[a]! + 1) * 2 ** (HUFFMAN_LENGTHS[b]! - HUFFMAN_LENGTHS[a]!)) ok = false
  }
  t.ok(ok, 'codes are consecutive in (length, symbol) order')
})

t.test('Huffman strings of Appendix C, both ways', async (t) => {
  const cases: Array<[string, string]> = [
    ['f1e3 c2e5 f23a 6ba0 ab90 f4ff', 'www.example.com'],
    ['a8eb 1064 9cbf', 'no-cache'],
    ['25a8 49e9 5ba9 7d7f', 'custom-key'],
    ['25a8 49e9 5bb8 e8b4 bf', 'custom-value'],
    ['6402', '302'],
    ['aec3 771a 4b', 'private'],
    ['d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff', DATE1],
    ['9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3', LOCATION],
    ['9bd9 ab', 'gzip'],
    ['94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07', COOKIE],
  ]
  for (const [wire, text] of cases) {
    t.equal(huff(hex(wire)), text, `decodes ${text}`)
    t.equal(huffmanEncode(text).toString('hex'), hex(wire).toString('hex'), `encodes ${text}`)
  }
  t.equal(huff(Buffer.alloc(0)), '', 'the empty string')
})

t.test('every octet, and long random strings, round-trip through Huffman', async (t) => {
  const bad: number[] = []
  for (let c = 0; c < 256; c++) {
    const s = String.fromCharCode(c)
    const enc = huffmanEncode(s)
    if (enc.length !== Math.ceil(HUFFMAN_LENGTHS[c]! / 8) || huff(enc) !== s) bad.push(c)
    // Twice and thrice: codes that straddle octets differently.
    if (huff(huffmanEncode(s + s + s)) !== s + s + s) bad.push(c)
  }
  t.same(bad, [], 'all 256 octets')
  const all = Array.from({ length: 256 }, (_, c) => String.fromCharCode(c)).join('')
  t.equal(huff(huffmanEncode(all)), all, 'all octets in one string')
  const r = prng(7541)
  for (let k = 0; k < 20; k++) {
    let s = ''
    const n = 1 + r.int(5000)
    for (let i = 0; i < n; i++) s += String.fromCharCode(r.int(256))
    if (huff(huffmanEncode(s)) !== s) t.fail(`random string ${k} (${n} octets)`)
  }
  t.throws(() => huffmanEncode('é€'), RangeError, 'a char above 0xff is not an octet')
})

t.test('Huffman padding and EOS errors (§5.2)', async (t) => {
  throwsHpack(t, () => huff(hex('b9ff')), "':' then 9 bits of padding")
  throwsHpack(t, () => huff(hex('ff')), '8 bits of padding alone')
  throwsHpack(t, () => huff(hex('1fff')), "'a' then 11 bits of padding")
  throwsHpack(t, () => huff(hex('1e')), "'a' then padding with a 0 bit")
  throwsHpack(t, () => huff(hex('00')), "'0' then 000 as padding")
  throwsHpack(t, () => huff(hex('ffffffff')), 'EOS then 2 bits of padding')
  throwsHpack(t, () => huff(hex('ffffffff fc')), 'EOS then a symbol')
  throwsHpack(t, () => huff(hex('1f ffffff ff')), "'a' then EOS")
  t.equal(huff(hex('1f')), 'a', "'a' with 3 bits of padding is fine")
  t.equal(huff(hex('fe3f')), '!', "'!' (10 bits) then 6 bits of padding")
  t.equal(huff(hex('fe3fcf')), '!?', 'two 10-bit codes across octet boundaries, 4 bits of padding')
  throwsHpack(t, () => new HpackDecoder().decode(hex('0001 61 81 ff')), 'in a block: a value with 8 bits of padding')
})

// ---------------------------------------------------------------------------------------------------------------
// Encoder → decoder

const FCM_TOKEN = `Bearer ya29.${prng(1).alnum(893)}` // 'Bearer ' + 900 chars
const APNS_JWT = `bearer ${prng(2).alnum(36)}.${prng(3).alnum(120)}.${prng(4).alnum(86)}`

function fcmRequest(): Fields {
  return [
    [':method', 'POST'],
    [':scheme', 'https'],
    [':path', '/v1/projects/p/messages:send'],
    [':authority', 'fcm.googleapis.com'],
    ['authorization', FCM_TOKEN],
    ['content-type', 'application/json'],
  ]
}

function apnsRequest(r: ReturnType<typeof prng>, i: number): Fields {
  const h: Fields = [
    [':method', 'POST'],
    [':scheme', 'https'],
    [':path', `/3/device/${r.alnum(64)}`],
    [':authority', 'api.push.apple.com'],
    ['apns-topic', `com.example.app${i % 3}`],
    ['apns-push-type', i % 5 === 0 ? 'background' : 'alert'],
    ['apns-priority', i % 5 === 0 ? '5' : '10'],
    ['apns-expiration', String(1_700_000_000 + i)],
    ['apns-id', `${r.alnum(8)}-${r.alnum(4)}-${r.alnum(4)}-${r.alnum(4)}-${r.alnum(12)}`],
    ['authorization', APNS_JWT],
    ['content-length', String(100 + r.int(3000))],
  ]
  if (i % 2) h.push(['apns-collapse-id', `c-${i}`])
  return h
}

t.test('1,000 provider requests round-trip; a repeated FCM request is a few bytes', async (t) => {
  const e = new HpackEncoder()
  const d = new HpackDecoder()
  const r = prng(42)
  let mismatches = 0
  let fcmSizes: number[] = []
  for (let i = 0; i < 1000; i++) {
    const fcm = r.int(2) === 0
    const fields = fcm ? fcmRequest() : apnsRequest(r, i)
    const block = e.encode(fields)
    if (fcm) fcmSizes.push(block.length)
    const back = d.decode(block)
    if (JSON.stringify(back) !== JSON.stringify(fields)) mismatches++
    if (d.tableSize !== e.tableSize) t.fail(`request ${i}: table sizes differ (${d.tableSize} vs ${e.tableSize})`)
  }
  t.equal(mismatches, 0, 'every header list decodes as it was given')
  t.same(d.entries(), e.entries(), 'both tables hold the same entries in the same order')
  t.ok(
    d.entries().every(([n]) => !['apns-id', 'apns-expiration', 'apns-collapse-id', 'content-length'].includes(n)),
    'per-request values never enter the table',
  )
  t.ok(fcmSizes[0]! > 600, `the first FCM block carries the token (${fcmSizes[0]} bytes)`)

  // Back to back, an FCM request is all indexed.
  const e2 = new HpackEncoder()
  const d2 = new HpackDecoder()
  fcmSizes = []
  let wrong = 0
  for (let i = 0; i < 50; i++) {
    const block = e2.encode(fcmRequest())
    fcmSizes.push(block.length)
    if (JSON.stringify(d2.decode(block)) !== JSON.stringify(fcmRequest())) wrong++
  }
  t.equal(wrong, 0, '50 FCM requests in a row decode as given')
  t.ok(
    fcmSizes.slice(1).every((n) => n < 20),
    `after the first, FCM blocks are under 20 bytes (${fcmSizes[1]})`,
  )
})

t.test('the never-indexed set is settable', async (t) => {
  const e = new HpackEncoder(4096, { noIndex: ['x-once'] })
  const d = new HpackDecoder()
  const block = e.encode([
    ['x-once', 'v1'],
    ['apns-id', 'abc'],
  ])
  t.same(d.decode(block), [
    ['x-once', 'v1'],
    ['apns-id', 'abc'],
  ])
  t.same(e.entries(), [['apns-id', 'abc']], 'apns-id is indexed once it is not in the set')
  t.equal(block[0]! & 0xf0, 0x00, 'x-once: literal without indexing')
  e.noIndex.add('apns-id')
  e.encode([['apns-id', 'def']])
  t.same(e.entries(), [['apns-id', 'abc']], 'the property is live')
  t.equal(new HpackEncoder().noIndex.has('apns-collapse-id'), true, 'the default set')
})

t.test('a pair larger than half the table is not indexed', async (t) => {
  const e = new HpackEncoder()
  const d = new HpackDecoder()
  const big = 'x'.repeat(2048 - 32 - 5 + 1)
  const fits = 'y'.repeat(2048 - 32 - 5)
  t.same(
    d.decode(
      e.encode([
        ['x-big', big],
        ['x-big', fits],
      ]),
    ),
    [
      ['x-big', big],
      ['x-big', fits],
    ],
  )
  t.same(
    e.entries().map(([n, v]) => [n, v.length]),
    [['x-big', fits.length]],
  )
  t.equal(d.tableSize, 2048)
})

t.test('secondSight: a pair is indexed the second time it is sent, so per-request values never evict the token', async (t) => {
  const e = new HpackEncoder(undefined, { secondSight: true })
  const d = new HpackDecoder()
  const jwt = `bearer ${'j'.repeat(300)}`
  const sizes: number[] = []
  for (let i = 0; i < 200; i++) {
    const h: Array<[string, string]> = [
      [':method', 'POST'],
      [':path', `/3/device/${i.toString(16).padStart(64, '0')}`],
      ['authorization', jwt],
      ['apns-topic', 'com.example.app'],
    ]
    const block = e.encode(h)
    sizes.push(block.length)
    t.same(d.decode(block), h)
  }
  t.ok((sizes[0] ?? 0) > 300 && (sizes[1] ?? 0) > 300, `the token is sent whole twice (${sizes[0]}, ${sizes[1]})`)
  t.ok(
    sizes.slice(2).every((n) => n < 60),
    `then indexed, and the device paths never evict it (largest ${Math.max(...sizes.slice(2))})`,
  )
  t.notOk(
    e.entries().some(([n]) => n === ':path'),
    'no device path was indexed',
  )
  t.same(d.entries(), e.entries(), 'both tables agree')
})

t.test('setPeerMaxTableSize: size updates first, evictions, and back', async (t) => {
  const e = new HpackEncoder()
  const d = new HpackDecoder()
  const fields = fcmRequest()
  t.same(d.decode(e.encode(fields)), fields)
  t.ok(e.tableSize > 0)

  e.setPeerMaxTableSize(0)
  t.equal(e.tableSize, 0, 'the encoder evicts at once')
  const zero = e.encode(fields)
  t.equal(zero[0], 0x20, 'the block starts with a size update to 0')
  t.same(d.decode(zero), fields)
  t.equal(d.tableSize, 0, 'the decoder emptied its table')
  t.same(d.decode(e.encode(fields)), fields, 'with no table, still round-trips')
  t.equal(e.encode(fields)[0], 0x83, 'and no size update on later blocks')

  e.setPeerMaxTableSize(4096)
  const back = e.encode(fields)
  t.same(back.subarray(0, 3), hex('3fe11f'), 'a size update to 4096 (C.1-style integer: 31 + 4065)')
  t.same(d.decode(back), fields)
  const again = e.encode(fields)
  t.ok(again.length < 20, `indexed again (${again.length} bytes)`)
  t.same(d.decode(again), fields)

  // Down and up between two blocks: both the smallest and the final size are signalled (§4.2).
  e.setPeerMaxTableSize(100)
  e.setPeerMaxTableSize(65_536)
  const both = e.encode(fields)
  t.same(both.subarray(0, 5), hex('3f45 3fe11f'), 'a size update to 100, then to 4096 (the most we use)')
  t.same(d.decode(both), fields)
  t.same(d.entries(), e.entries())

  t.throws(() => e.setPeerMaxTableSize(-1), RangeError)
  t.throws(() => e.setPeerMaxTableSize(1.5), RangeError)

  const small = new HpackEncoder(256)
  const block = small.encode([[':method', 'GET']])
  t.same(block, hex('3fe101 82'), 'a peer setting below 4096 at construction is signalled on the first block')
  t.same(new HpackDecoder(256).decode(block), [[':method', 'GET']])
})

t.test('the encoder refuses invalid names and values, changing nothing', async (t) => {
  const e = new HpackEncoder()
  const bad: Array<[string, string]> = [
    ['Content-Type', 'x'],
    ['', 'x'],
    ['x y', 'x'],
    ['x:y', 'x'],
    ['::x', 'x'],
    ['x-a', 'a\nb'],
    ['x-a', 'a\rb'],
    ['x-a', 'a\0b'],
    ['x-a', 'snowman ☃'],
  ]
  for (const pair of bad) {
    t.throws(() => e.encode([['x-fine', 'ok'], pair]), TypeError, JSON.stringify(pair))
  }
  t.equal(e.tableSize, 0, 'nothing was indexed')
  t.same(e.encode([[':method', 'GET']]), hex('82'))
  t.same(
    e.encode([
      ['x-tab', 'a\tb'],
      ['x-empty', ''],
      [':x-custom', 'v'],
    ]).length > 0,
    true,
    'tab, empty and pseudo are fine',
  )
})

t.test('random header lists and table sizes: encoder and decoder stay in step', async (t) => {
  const names = ['x-a', 'x-b', 'authorization', ':path', 'content-type', 'apns-id', 'cookie', 'x-long-name-for-testing']
  const field = fc.tuple(
    fc.constantFrom(...names),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  )
  const step = fc.oneof(
    { weight: 8, arbitrary: fc.array(field, { maxLength: 12 }).map((f) => ({ fields: f as Fields })) },
    { weight: 1, arbitrary: fc.constantFrom(0, 64, 256, 1000, 4096, 100_000).map((size) => ({ size })) },
  )
  const run = fc.check(
    fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
      const e = new HpackEncoder()
      const d = new HpackDecoder()
      for (const s of steps) {
        if ('size' in s) {
          e.setPeerMaxTableSize(s.size)
          continue
        }
        if (JSON.stringify(d.decode(e.encode(s.fields))) !== JSON.stringify(s.fields)) return false
        if (JSON.stringify(d.entries()) !== JSON.stringify(e.entries()) || d.tableSize !== e.tableSize) return false
      }
      return true
    }),
    { numRuns: 300, seed: 7541 },
  )
  t.equal(run.failed, false, `round trips${run.failed ? `; counterexample ${JSON.stringify(run.counterexample)}` : ''}`)
})

// ---------------------------------------------------------------------------------------------------------------
// Malformed blocks

t.test('malformed blocks throw HpackError', async (t) => {
  const cases: Array<[string, string]> = [
    ['ff', 'truncated integer (prefix full, no continuation)'],
    ['ff80', 'truncated integer (continuation bit set on the last byte)'],
    ['3f', 'truncated size update'],
    ['ff808080808001', 'overlong integer (6 continuation bytes)'],
    ['ffffffffff0f', 'integer above 2^31'],
    ['400a 6375', 'truncated name string'],
    ['41', 'literal without its value'],
    ['4105 61', 'truncated value string'],
    ['00', 'literal with a new name and nothing else'],
    ['0085 ff', 'truncated Huffman name'],
    ['80', 'index 0'],
    ['be', 'index 62 with an empty dynamic table'],
    ['7e 01 61', 'a literal naming index 62 with an empty dynamic table'],
    ['ff 80 01', 'index 255'],
    ['3fe21f', 'size update to 4097, above the 4096 we advertise'],
    ['82 20', 'size update after a field'],
    ['4001 61 01 62 3f00', 'size update after a literal'],
    ['41 84 ffffffff', 'a Huffman value holding EOS'],
    ['41 81 00', 'a Huffman value with bad padding'],
  ]
  for (const [wire, what] of cases) throwsHpack(t, () => new HpackDecoder().decode(hex(wire)), what)
  t.same(new HpackDecoder().decode(hex('bd')), [['www-authenticate', '']], 'index 61 is the last static entry')
  t.same(new HpackDecoder().decode(hex('20 3fe11f 82')), [[':method', 'GET']], 'size updates at the start are fine')
  t.same(new HpackDecoder().decode(Buffer.alloc(0)), [], 'an empty block')
  throwsHpack(t, () => new HpackDecoder(100).decode(hex('3f46')), 'size update to 101 with 100 advertised')

  const d = new HpackDecoder()
  throwsHpack(t, () => d.decode(hex('80')), 'a first error')
  throwsHpack(t, () => d.decode(hex('82')), 'after an error the decoder refuses even a valid block')
})

t.test('random bytes: an array or HpackError, never anything else', async (t) => {
  const outcome = (decode: () => unknown) => {
    try {
      return Array.isArray(decode())
    } catch (err) {
      return err instanceof HpackError
    }
  }
  const raw = fc.check(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => outcome(() => new HpackDecoder().decode(Buffer.from(bytes)))),
    { numRuns: 5000, seed: 1 },
  )
  t.equal(raw.failed, false, `random blocks${raw.failed ? `; counterexample ${JSON.stringify(raw.counterexample)}` : ''}`)

  // Mutations of a valid block, decoded after its predecessor so that the dynamic table holds entries.
  const first = hex(
    `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7
     8f0b 97c8 e9ae 82ae 43d3`,
  )
  const third = hex(
    `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335
     dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
  )
  const mutated = fc.check(
    fc.property(
      fc.array(fc.tuple(fc.nat(third.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
      fc.nat(third.length),
      (edits, cut) => {
        const b = Buffer.from(third.subarray(0, cut))
        for (const [at, v] of edits) if (at < b.length) b[at] = v
        const d = new HpackDecoder(256)
        d.decode(first)
        return outcome(() => d.decode(b))
      },
    ),
    { numRuns: 3000, seed: 2 },
  )
  t.equal(
    mutated.failed,
    false,
    `mutated blocks${mutated.failed ? `; counterexample ${JSON.stringify(mutated.counterexample)}` : ''}`,
  )

  const huffRandom = fc.check(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => outcome(() => [huffmanDecode(bytes, 0, bytes.length)])),
    { numRuns: 3000, seed: 3 },
  )
  t.equal(huffRandom.failed, false, 'random Huffman strings')
})

// ---------------------------------------------------------------------------------------------------------------
// nghttp2 (node:http2), over a raw h2c socket: our encoder's requests, its decoder; its encoder's answers, our decoder

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1')

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(9 + payload.length)
  b.writeUIntBE(payload.length, 0, 3)
  b[3] = type
  b[4] = flags
  b.writeUInt32BE(stream, 5)
  payload.copy(b, 9)
  return b
}

/** Response header lists the server sends: many fields, random values, repeats that its table will index. */
function responseHeaders(r: ReturnType<typeof prng>, i: number): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = {
    ':status': '200',
    'content-type': 'application/json; charset=utf-8',
    date: DATE1,
    'x-same': 'this value repeats on every response',
    'x-a': r.printable(1 + r.int(300)),
    'set-cookie': [`session=${r.alnum(180)}; Path=/; HttpOnly; Secure`, `pref=${r.alnum(12)}`],
    'apns-id': r.alnum(36),
    'x-empty': '',
  }
  for (let k = 0; k < 20; k++) h[`x-h${k}`] = k % 4 === 0 ? `fixed-${k}` : r.printable(1 + r.int(120))
  if (i % 7 === 3) h['x-big'] = r.printable(20_000) // beyond one frame: HEADERS + CONTINUATION
  return h
}

/** The header list as node:http2 sends it: pseudo-headers first, then each name's values in order. */
function flatten(h: Record<string, string | string[]>): Fields {
  const entries = Object.entries(h)
  const out: Fields = []
  for (const [n, v] of [...entries.filter(([n]) => n.startsWith(':')), ...entries.filter(([n]) => !n.startsWith(':'))]) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([n, one])
  }
  return out
}

async function exchange(t: Test, serverTableSize: number | undefined, rounds: number) {
  const r = prng(9113 + (serverTableSize ?? 0))
  const sent = new Map<number, Fields>()
  const received = new Map<number, string[]>()
  const errors: string[] = []
  const server = http2.createServer(serverTableSize === undefined ? {} : { settings: { headerTableSize: serverTableSize } })
  server.on('request', (req, res) => {
    const id = req.stream.id ?? 0
    received.set(id, req.rawHeaders)
    const headers = responseHeaders(r, id)
    sent.set(id, flatten(headers))
    const { ':status': _status, ...rest } = headers
    res.writeHead(200, rest)
    res.end()
  })
  server.on('sessionError', (err) => errors.push(`session: ${err.message}`))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const socket = net.connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))

  const encoder = new HpackEncoder()
  const decoder = new HpackDecoder()
  const responses = new Map<number, Fields>()
  const waiters = new Map<number, (f: Fields) => void>()
  let peerSettings: () => void = () => {}
  const settingsSeen = new Promise<void>((resolve) => {
    peerSettings = resolve
  })
  let pending = Buffer.alloc(0)
  let block: { stream: number; parts: Buffer[] } | null = null
  let continuations = 0

  const finishBlock = (stream: number, parts: Buffer[]) => {
    try {
      const fields = decoder.decode(Buffer.concat(parts))
      responses.set(stream, fields)
      waiters.get(stream)?.(fields)
    } catch (err) {
      errors.push(`decode: ${String(err)}`)
      waiters.get(stream)?.([])
    }
  }
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk])
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3)
      if (pending.length < 9 + length) break
      const type = pending[3]!
      const flags = pending[4]!
      const stream = pending.readUInt32BE(5) & 0x7fffffff
      let payload = pending.subarray(9, 9 + length)
      pending = pending.subarray(9 + length)
      if (type === 0x4 && !(flags & 0x1)) {
        for (let at = 0; at + 6 <= payload.length; at += 6) {
          if (payload.readUInt16BE(at) === 0x1) encoder.setPeerMaxTableSize(payload.readUInt32BE(at + 2))
        }
        socket.write(frame(0x4, 0x1, 0))
        peerSettings()
      } else if (type === 0x1) {
        if (flags & 0x8) payload = payload.subarray(1, payload.length - payload[0]!) // PADDED
        if (flags & 0x20) payload = payload.subarray(5) // PRIORITY
        if (flags & 0x4) finishBlock(stream, [Buffer.from(payload)])
        else block = { stream, parts: [Buffer.from(payload)] }
      } else if (type === 0x9 && block) {
        continuations++
        block.parts.push(Buffer.from(payload))
        if (flags & 0x4) {
          finishBlock(block.stream, block.parts)
          block = null
        }
      } else if (type === 0x3 || type === 0x7) {
        const code = payload.readUInt32BE(type === 0x3 ? 0 : 4)
        errors.push(`${type === 0x3 ? 'RST_STREAM' : 'GOAWAY'} ${code} on stream ${stream}`)
        if (type === 0x3) waiters.get(stream)?.([])
        else for (const w of waiters.values()) w([])
      }
    }
  })
  socket.write(Buffer.concat([PREFACE, frame(0x4, 0, 0)]))
  await settingsSeen

  const requests = new Map<number, Fields>()
  try {
    for (let i = 0; i < rounds; i++) {
      const id = 2 * i + 1
      const fields: Fields = [
        [':method', i % 3 ? 'POST' : 'GET'],
        [':scheme', 'http'],
        [':path', i % 2 ? '/v1/projects/p/messages:send' : `/3/device/${r.alnum(64)}`],
        [':authority', `127.0.0.1:${port}`],
        ['authorization', i % 2 ? FCM_TOKEN : APNS_JWT],
        ['content-type', 'application/json'],
        ['apns-expiration', String(i)],
        ['apns-id', r.alnum(36)],
        ['x-r', r.printable(1 + r.int(200))],
        ['x-latin1', 'caf\xe9 \xff'],
      ]
      requests.set(id, fields)
      const answered = new Promise<Fields>((resolve) => waiters.set(id, resolve))
      socket.write(frame(0x1, 0x5, id, encoder.encode(fields))) // END_STREAM | END_HEADERS
      const timeout = new Promise<Fields>((resolve) => setTimeout(() => resolve([]), 5000).unref())
      await Promise.race([answered, timeout])
      if (errors.length) break
    }
  } finally {
    socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  t.same(errors, [], 'no connection or stream errors, no decoding errors')
  let requestsOk = 0
  let responsesOk = 0
  for (const [id, fields] of requests) {
    const raw = received.get(id)
    const pairs: Fields = []
    for (let k = 0; raw && k < raw.length; k += 2) pairs.push([raw[k]!, raw[k + 1]!])
    if (JSON.stringify(pairs) === JSON.stringify(fields)) requestsOk++
    else t.same(pairs, fields, `request on stream ${id} as nghttp2 decoded it`)
    if (JSON.stringify(responses.get(id)) === JSON.stringify(sent.get(id))) responsesOk++
    else t.same(responses.get(id), sent.get(id), `response on stream ${id} as we decoded it`)
  }
  t.equal(requestsOk, rounds, 'nghttp2 decoded every request exactly as we encoded it')
  t.equal(responsesOk, rounds, 'we decoded every response exactly as nghttp2 encoded it')
  t.ok(continuations > 0, `some responses spanned CONTINUATION frames (${continuations})`)
  t.ok(decoder.tableSize > 0, `nghttp2 used its dynamic table (${decoder.entries().length} entries now)`)
  if (serverTableSize !== undefined)
    t.ok(encoder.tableSize <= serverTableSize, `our table kept within its ${serverTableSize} octets`)
}

t.test('interoperates with nghttp2 (node:http2) both ways, default table', async (t) => {
  await exchange(t, undefined, 40)
})

t.test('interoperates with nghttp2 when it asks for a 256-octet table (size update, evictions)', async (t) => {
  await exchange(t, 256, 30)
})
