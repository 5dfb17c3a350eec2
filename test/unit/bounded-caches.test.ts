// The per-process caches that past their bound drop the least recently used entry (lru-cache), where they used to
// start over: an entry in use survives a stream of new ones. The database is a stand-in that counts reads.
import t from 'tap'
import { receiptKeyAad } from '../../src/apps/service'
import { Vault } from '../../src/core/vault'
import type { Db } from '../../src/db/pool'
import { createLogger } from '../../src/core/log'
import type { RedisClient } from '../../src/redis/client'
import { Keys } from '../../src/redis/keys'
import { DeviceProfiles } from '../../src/inapp/device-profiles'
import { PackageCache } from '../../src/inapp/packages'
import { ReceiptKeys } from '../../src/receipts/keys'
import { WebhookSecrets } from '../../src/confirmations/secrets'
import { secretAad } from '../../src/confirmations/store'

const vault = new Vault(Buffer.alloc(32, 7))

/** Answers the receipt-key, in-app app and device-profile reads; `reads` counts them per id. */
function fakeDb() {
  const reads = new Map<string, number>()
  // A receipt key is sealed as hex text; the app's is the bytes of `<app>-key`.
  const count = (id: string) => reads.set(id, (reads.get(id) ?? 0) + 1)
  const db = {
    async query(text: string, params: unknown[]) {
      if (text.includes('receipt_key_enc')) {
        const appId = params[0] as string
        count(appId)
        return {
          rows: appId.startsWith('none')
            ? []
            : [{ receipt_key_enc: vault.seal(Buffer.from(`${appId}-key`).toString('hex'), receiptKeyAad(appId)) }],
        }
      }
      if (text.includes('inapp_campaigns')) return { rows: [] }
      if (text.includes('inapp_ativo')) {
        count(params[0] as string)
        return { rows: [{ paused: false, inapp_ativo: true, inapp_cap_horas: 24 }] }
      }
      const ids = params[1] as string[]
      for (const id of ids) count(id)
      return { rows: ids.map((id) => ({ id, external_user_id: null, memberships: 1 })) }
    },
  }
  return { db: db as unknown as Db, reads }
}

t.test('receipt keys: the least recently used app leaves first; peek answers once read', async (t) => {
  const { db, reads } = fakeDb()
  const keys = new ReceiptKeys(db, vault, 2)
  t.equal(keys.peek('a'), undefined, 'nothing read yet')
  t.equal((await keys.get('a'))?.toString('utf8'), 'a-key')
  t.equal(keys.peek('a')?.toString('utf8'), 'a-key', 'read: at hand without waiting')
  await keys.get('b')
  await keys.get('a') // a is now the most recent
  await keys.get('c') // evicts b
  await keys.get('a')
  await keys.get('b')
  t.equal(reads.get('a'), 1, 'a read once')
  t.equal(reads.get('b'), 2, 'b was evicted and read again')
  t.equal(await keys.get('none-1'), null, 'an app without a key')
  await keys.get('none-1')
  t.equal(reads.get('none-1'), 2, 'an unknown app is not remembered')
})

t.test('device profiles: the least recently polled device leaves first; expiry still applies', async (t) => {
  const { db, reads } = fakeDb()
  let now = 1_000_000
  const profiles = new DeviceProfiles(db, () => now, 2, 60_000, 10_000)
  await profiles.load('app', 'd1')
  await profiles.load('app', 'd2')
  t.ok(profiles.peek('app', 'd1'), 'd1 cached') // d1 is now the most recent
  await profiles.load('app', 'd3') // evicts d2
  t.ok(profiles.peek('app', 'd1'), 'd1 still cached')
  t.equal(profiles.peek('app', 'd2'), undefined, 'd2 evicted')
  t.ok(profiles.peek('app', 'd3'))
  t.equal(reads.get('d1'), 1)
  now += 60_000
  t.equal(profiles.peek('app', 'd1'), undefined, 'expired after a minute')
})

t.test('in-app packages: the least recently polled app leaves first; expiry still applies', async (t) => {
  const { db, reads } = fakeDb()
  let now = 1_000_000
  const packs = new PackageCache(db, {} as RedisClient, new Keys('unused'), () => now, createLogger('silent'), 60_000, 2)
  await packs.load('a')
  await packs.load('b')
  t.ok(packs.peek('a'), 'a cached') // a is now the most recent
  await packs.load('c') // evicts b
  t.ok(packs.peek('a'), 'a still cached')
  t.equal(packs.peek('b'), undefined, 'b evicted')
  t.equal(reads.get('a'), 1)
  now += 60_000
  t.equal(packs.peek('a'), undefined, 'expired after a minute')
})

t.test(
  'webhook secrets: opened once per destination, the least recently used leaves first; never more than the bound',
  async (t) => {
    const opened: string[] = []
    const counting = {
      open: (sealed: Buffer, aad: string) => {
        opened.push(aad)
        return vault.open(sealed, aad)
      },
    } as unknown as Vault
    const dest = (id: string) => ({
      id,
      app_id: `app-${id}`,
      sealed_secret: vault.seal(`pm_whsec_${id}`, secretAad(`app-${id}`, id)),
    })
    const [a, b, c] = [dest('a'), dest('b'), dest('c')]
    const secrets = new WebhookSecrets(counting, 2)
    t.equal(secrets.get(a), 'pm_whsec_a')
    secrets.get(b)
    secrets.get(a) // a is now the most recent
    secrets.get(c) // evicts b
    t.equal(secrets.get(a), 'pm_whsec_a')
    t.equal(secrets.get(b), 'pm_whsec_b')
    t.same(
      opened.map((x) => x.split(':')[2]),
      ['a', 'b', 'c', 'b'],
      'a opened once; b again after its eviction',
    )
    for (let i = 0; i < 50; i++) secrets.get(dest(`x${i}`))
    t.equal(secrets.size, 2, 'bounded')
  },
)
