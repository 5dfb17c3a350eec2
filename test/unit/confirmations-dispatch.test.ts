// Pure parts of the webhook dispatcher: the address guard (docs/spec/contract.md PM_WEBHOOK_ALLOW_PRIVATE), the redelivery
// ladder (the spec, Events), the signature, the PUT body's validation order.
import t from 'tap'
import { DEFAULT_WEBHOOK, loadConfig } from '../../src/core/config'
import { checkLiteral, guardedLookup, isPrivateAddress } from '../../src/confirmations/address'
import { delayAfter, onFailure } from '../../src/confirmations/ladder'
import { signature } from '../../src/confirmations/sender'
import { parseChange } from '../../src/confirmations/validate'
import type { ApiError } from '../../src/core/errors'

t.test('private, loopback, link-local, unique-local and reserved addresses are refused; public ones pass', async (t) => {
  const refused = [
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:a00:1',
    '64:ff9b::a00:1',
    'not-an-ip',
  ]
  for (const ip of refused) t.ok(isPrivateAddress(ip), `refused ${ip}`)
  for (const ip of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
    t.notOk(isPrivateAddress(ip), `allowed ${ip}`)
  }
})

t.test('IPv6 forms that carry an IPv4 address are judged by it; tunnels and local NAT64 are refused', async (t) => {
  const refused = [
    '::a00:1', // IPv4-compatible ::10.0.0.1
    '::10.0.0.1',
    '::ffff:0:a00:1', // IPv4-translated (SIIT) 10.0.0.1
    '::ffff:0:10.0.0.1',
    '0:0:0:0:0:ffff:7f00:1', // mapped, spelled out
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '64:ff9b::127.0.0.1',
    '64:ff9b:1::808:808', // local-use NAT64: the operator's own IPv4 space, whatever it embeds
    '2002:a00:1::1', // 6to4 of 10.0.0.1
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2001::1', // Teredo
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    'fe80::1%eth0',
    '1::2::3', // not an address
  ]
  for (const ip of refused) t.ok(isPrivateAddress(ip), `refused ${ip}`)
  for (const ip of ['64:ff9b::808:808', '2002:808:808::1', '::ffff:0:8.8.8.8', '2a00:1450:4001::200e', '2001:4860:4860::8888']) {
    t.notOk(isPrivateAddress(ip), `allowed ${ip}`)
  }
})

t.test('a literal is checked before connecting; the lookup checks every resolved address', async (t) => {
  t.throws(() => checkLiteral('127.0.0.1', false), { code: 'EPM_PRIVATE_ADDRESS' })
  t.throws(() => checkLiteral('::1', false), { code: 'EPM_PRIVATE_ADDRESS' })
  t.doesNotThrow(() => checkLiteral('127.0.0.1', true))
  t.doesNotThrow(() => checkLiteral('example.com', false), 'names go through the lookup')
  const lookup = (allow: boolean, all: boolean) =>
    new Promise<{ err: (Error & { code?: string }) | null; addr: unknown }>((resolve) =>
      guardedLookup(allow)('localhost', { all } as never, (err, addr) => resolve({ err: err as Error | null, addr })),
    )
  const refused = await lookup(false, false)
  t.equal(refused.err?.code, 'EPM_PRIVATE_ADDRESS')
  t.match(refused.err?.message, /localhost resolve para endereço privado/)
  t.notMatch(refused.err?.message, /127\.0\.0\.1|::1/, 'the host as given, not the addresses it resolved to')
  const allowed = await lookup(true, false)
  t.equal(allowed.err, null)
  t.ok(isPrivateAddress(allowed.addr as string))
  const many = await lookup(true, true)
  t.ok(Array.isArray(many.addr), 'all: true answers the list')
})

t.test('ladder: 1 s, 10 s, 60 s, 5 min, then every 15 min; abandon at 30; disable at 20 consecutive', async (t) => {
  const want = [1_000, 10_000, 60_000, 300_000, 900_000, 900_000, 900_000]
  t.same(
    want.map((_, i) => delayAfter(DEFAULT_WEBHOOK, i + 1)),
    want,
  )
  t.same(onFailure(DEFAULT_WEBHOOK, { attempts: 1, consecutive: 1 }), { abandon: false, disable: false, delayMs: 1_000 })
  t.same(onFailure(DEFAULT_WEBHOOK, { attempts: 20, consecutive: 20 }), { abandon: false, disable: true, delayMs: 900_000 })
  t.same(onFailure(DEFAULT_WEBHOOK, { attempts: 29, consecutive: 9 }), { abandon: false, disable: false, delayMs: 900_000 })
  t.same(onFailure(DEFAULT_WEBHOOK, { attempts: 30, consecutive: 10 }), { abandon: true, disable: false, delayMs: 0 })
})

t.test('signature: sha256= and the hex HMAC of the exact bytes', async (t) => {
  // RFC 4231 test case 2.
  t.equal(
    signature('Jefe', Buffer.from('what do ya want for nothing?')),
    'sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  )
})

t.test('PUT body: url before modo', async (t) => {
  const keyOf = (b: Record<string, unknown>) => {
    try {
      parseChange(b)
      return 'ok'
    } catch (err) {
      return (err as ApiError).key
    }
  }
  t.equal(keyOf({ url: 'http://x.example', modo: 'x' }), 'WEBHOOK_URL_NOT_HTTPS')
  t.equal(keyOf({ url: 'https://x.example', modo: 'x' }), 'CONFIRM_MODE_UNKNOWN')
  t.equal(keyOf({ url: 'https://x.example', modo: 'grpc' }), 'ok')
  t.equal(keyOf({}), 'ok')
})

t.test('settings: the spec values by default; PM_WEBHOOK_* shorten them (tests, benchmarks)', async (t) => {
  t.same(loadConfig({}).webhook, DEFAULT_WEBHOOK)
  const w = loadConfig({
    PM_WEBHOOK_TIMEOUT_MS: '500',
    PM_WEBHOOK_RETRY_MS: '10, 20,40',
    PM_WEBHOOK_POLL_MS: '5',
    PM_WEBHOOK_CONCURRENCY: '50',
  }).webhook
  t.same(w, { ...DEFAULT_WEBHOOK, timeoutMs: 500, retryDelaysMs: [10, 20, 40], pollMs: 5, concurrency: 50 })
  t.throws(() => loadConfig({ PM_WEBHOOK_RETRY_MS: '1s,2s' }), /PM_WEBHOOK_RETRY_MS: expected comma-separated milliseconds/)
  t.throws(() => loadConfig({ PM_WEBHOOK_TIMEOUT_MS: '0' }), /PM_WEBHOOK_TIMEOUT_MS/)
})
