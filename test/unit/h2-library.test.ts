// src/h2 is a library: no import from the rest of the service, every limit documented in its README with its default,
// the service's defaults equal to the library's, and the settings that choose and tune it read as documented. Also
// the answer-head checks (fields.ts) and the decoder's list limits, table by table.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, DEFAULT_PROVIDER_HTTP2, loadConfig } from '../../src/core/config'
import { responseHead, trailersProblem } from '../../src/h2/fields'
import { HeaderListLimitError, HpackDecoder, HpackEncoder } from '../../src/h2/hpack'
import { DEFAULT_H2_LIMITS, type H2Limits, resolveLimits } from '../../src/h2/limits'
import { H2Pool } from '../../src/h2/pool'
import { providerPoolOptions } from '../../src/providers/http2'

const H2 = join(__dirname, '..', '..', 'src', 'h2')

t.test('src/h2 imports only node: built-ins and its own files', async (t) => {
  const files = readdirSync(H2).filter((f) => f.endsWith('.ts'))
  t.ok(files.length >= 8, `${files.length} files`)
  for (const f of files) {
    const src = readFileSync(join(H2, f), 'utf8')
    const specs = [...src.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]/gm)].map(
      (m) => (m[1] ?? m[2]) as string,
    )
    const outside = specs.filter((s) => !s.startsWith('node:') && !/^\.\/[a-z0-9-]+$/.test(s))
    t.strictSame(outside, [], `${f}: only node: and ./ imports`)
    t.notMatch(src, /require\(/, `${f}: no require`)
  }
})

t.test('README.md lists every limit with its default, and maps both RFCs', async (t) => {
  const readme = readFileSync(join(H2, 'README.md'), 'utf8')
  for (const [key, value] of Object.entries(DEFAULT_H2_LIMITS)) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${key}\` |`))
    t.ok(row, `${key} has a row`)
    t.ok(
      row?.includes(value.toLocaleString('en')) || (key === 'connectionWindowBytes' && row?.includes('1 MiB')),
      `${key}: ${value}`,
    )
  }
  for (const section of ['§3.4', '§4.3', '§5.4.1', '§6.5.3', '§6.9.1', '§8.2.2', '§8.3.2']) t.match(readme, section)
  t.match(readme, /## RFC 7541/)
})

t.test("the service's defaults are the library's, and PM_PROVIDER_HTTP2 / PM_H2_* reach the pool", async (t) => {
  const { client, ...limits } = DEFAULT_PROVIDER_HTTP2
  t.equal(client, 'pombo', 'our client by default')
  for (const [key, value] of Object.entries(limits)) t.equal(value, DEFAULT_H2_LIMITS[key as keyof H2Limits], key)
  t.strictSame(providerPoolOptions(loadConfig({})), { client: 'pombo', limits })
  const tuned = loadConfig({
    PM_PROVIDER_HTTP2: 'node',
    PM_H2_MAX_BODY_BYTES: '4096',
    PM_H2_CONNECTION_WINDOW_BYTES: '131072',
    PM_H2_MAX_HEADER_PAIRS: '64',
    PM_H2_MAX_HEADER_BYTES: '8192',
    PM_H2_MAX_CONTINUATIONS: '2',
    PM_H2_HEADER_BLOCK_TIMEOUT_MS: '100',
    PM_H2_SETTINGS_TIMEOUT_MS: '200',
    PM_H2_MAX_CONTROL_FRAMES: '50',
  })
  t.strictSame(providerPoolOptions(tuned), {
    client: 'node',
    limits: {
      maxResponseBodyBytes: 4096,
      connectionWindowBytes: 131_072,
      maxHeaderListPairs: 64,
      maxHeaderListBytes: 8192,
      maxContinuations: 2,
      headerBlockTimeoutMs: 100,
      settingsTimeoutMs: 200,
      maxQueuedControlFrames: 50,
    },
  })
  t.throws(() => loadConfig({ PM_PROVIDER_HTTP2: 'nghttp2' }), ConfigError)
  t.throws(() => loadConfig({ PM_H2_CONNECTION_WINDOW_BYTES: '1000' }), ConfigError, 'below 65,535')
  t.throws(() => loadConfig({ PM_H2_MAX_BODY_BYTES: '2000000' }), /must exceed PM_H2_MAX_BODY_BYTES/)
  const pool = new H2Pool(providerPoolOptions(tuned))
  t.match(await pool.request('https://127.0.0.1:1', { ':method': 'GET', ':path': '/' }), { status: 0, failure: 'connection' })
  await pool.close()
})

t.test('resolveLimits takes positive integers that hold together, and says which one is wrong', async (t) => {
  t.strictSame(resolveLimits(), DEFAULT_H2_LIMITS)
  t.equal(resolveLimits({ maxContinuations: 3 }).maxContinuations, 3)
  t.throws(() => resolveLimits({ maxContinuations: 0 }), /maxContinuations/)
  t.throws(() => resolveLimits({ settingsTimeoutMs: 1.5 }), /settingsTimeoutMs/)
  t.throws(() => resolveLimits({ connectionWindowBytes: 1000 }), /connectionWindowBytes/)
  t.throws(() => resolveLimits({ maxResponseBodyBytes: 2_000_000 }), /connectionWindowBytes/)
  t.throws(() => new H2Pool({ limits: { maxHeaderListPairs: -1 } }), /maxHeaderListPairs/, 'at construction')
})

t.test('answer heads: what RFC 9113 §8.2 and §8.3.2 allow, and what they do not', async (t) => {
  const ok = responseHead([
    [':status', '200'],
    ['content-type', 'application/json'],
    ['set-cookie', 'a=1'],
    ['set-cookie', 'b=2'],
    ['vary', 'a'],
    ['vary', 'b'],
    ['content-length', '2'],
    ['te', 'trailers'],
  ])
  t.match(ok, { status: 200, contentLength: 2 })
  if (typeof ok !== 'string') {
    t.strictSame(ok.headers['set-cookie'], ['a=1', 'b=2'])
    t.equal(ok.headers.vary, 'a, b')
    t.equal(Object.getPrototypeOf(ok.headers), null, 'no prototype: a field named __proto__ is a field')
  }
  const bad: Array<[string, Array<[string, string]>]> = [
    ['no :status', [['x', '1']]],
    [
      'two :status',
      [
        [':status', '200'],
        [':status', '200'],
      ],
    ],
    [':status of two digits', [[':status', '20']]],
    [':status 101', [[':status', '101']]],
    [':status with a sign', [[':status', '+20']]],
    [
      ':path',
      [
        [':status', '200'],
        [':path', '/'],
      ],
    ],
    [
      'pseudo after a field',
      [
        ['x', '1'],
        [':status', '200'],
      ],
    ],
    [
      'upper case',
      [
        [':status', '200'],
        ['X', '1'],
      ],
    ],
    [
      'a space in a name',
      [
        [':status', '200'],
        ['x y', '1'],
      ],
    ],
    [
      'an empty name',
      [
        [':status', '200'],
        ['', '1'],
      ],
    ],
    [
      'CR in a value',
      [
        [':status', '200'],
        ['x', 'a\rb'],
      ],
    ],
    [
      'LF in a value',
      [
        [':status', '200'],
        ['x', 'a\nb'],
      ],
    ],
    [
      'a trailing tab',
      [
        [':status', '200'],
        ['x', 'a\t'],
      ],
    ],
    [
      'connection',
      [
        [':status', '200'],
        ['connection', 'keep-alive'],
      ],
    ],
    [
      'keep-alive',
      [
        [':status', '200'],
        ['keep-alive', '5'],
      ],
    ],
    [
      'proxy-connection',
      [
        [':status', '200'],
        ['proxy-connection', 'x'],
      ],
    ],
    [
      'transfer-encoding',
      [
        [':status', '200'],
        ['transfer-encoding', 'chunked'],
      ],
    ],
    [
      'upgrade',
      [
        [':status', '200'],
        ['upgrade', 'h2c'],
      ],
    ],
    [
      'te: gzip',
      [
        [':status', '200'],
        ['te', 'gzip'],
      ],
    ],
    [
      'content-length not a number',
      [
        [':status', '200'],
        ['content-length', '1e3'],
      ],
    ],
    [
      'two content-lengths',
      [
        [':status', '200'],
        ['content-length', '1'],
        ['content-length', '2'],
      ],
    ],
  ]
  for (const [name, fields] of bad) t.type(responseHead(fields), 'string', name)
  t.equal(trailersProblem([['grpc-status', '0']]), null)
  t.type(trailersProblem([[':status', '200']]), 'string', 'a pseudo-header in trailers')
  t.type(trailersProblem([['Upper', '1']]), 'string', 'upper case in trailers')
})

t.test('the decoder stops at the first field past the pair or byte limit, whatever the block size', async (t) => {
  const enc = new HpackEncoder()
  const block = enc.encode([[':status', '200'], ...Array.from({ length: 200 }, (_, i) => [`x-${i}`, 'v'] as [string, string])])
  t.equal(new HpackDecoder().decode(block).length, 201, 'no limit: every field')
  t.throws(() => new HpackDecoder().decode(block, 128), HeaderListLimitError)
  t.throws(() => new HpackDecoder().decode(block, 1000, 2000), HeaderListLimitError)
  // A 4 KB entry referenced by one byte each: the limit stops it at 65,535 bytes, not 16,000 fields later.
  const big = Buffer.concat([
    Buffer.from([0x40, 0x03]),
    Buffer.from('x-a'),
    Buffer.from([0x7f, 0xa1, 0x1e]),
    Buffer.alloc(4000, 0x61),
  ])
  const refs = Buffer.concat([big, Buffer.alloc(16_000, 0xbe)])
  const d = new HpackDecoder()
  t.throws(() => d.decode(refs, 128, 65_535), /over 65535 bytes/)
  t.throws(() => d.decode(Buffer.from([0x88])), /unusable/, 'and the decoder refuses what follows')
})
