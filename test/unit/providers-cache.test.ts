// Providers by platform and their cache per (app, platform, credential version); nothing is sent here.
import t from 'tap'
import type { ApnsCredential, FcmCredential } from '../../src/providers/credentials'
import { ApnsProvider } from '../../src/providers/apns'
import { FcmProvider } from '../../src/providers/fcm'
import { H2Pool } from '../../src/h2/pool'
import { ProviderCache, providerFor } from '../../src/providers/index'

const fcmCred: FcmCredential = {
  project_id: 'p',
  client_email: 'a@p.iam.gserviceaccount.com',
  private_key: 'k',
  token_uri: 'https://oauth2.googleapis.com/token',
}
const apnsCred: ApnsCredential = {
  p8: 'k',
  keyId: 'ABCDEFGHIJ',
  teamId: 'KLMNOPQRST',
  bundleId: 'com.example.app',
  env: 'sandbox',
}

t.test('providerFor builds the provider of the platform', async (t) => {
  const pool = new H2Pool()
  t.teardown(() => pool.close())
  const deps = { pool, fcmBaseUrl: 'https://fcm.googleapis.com', apnsBaseUrl: null }
  t.type(providerFor('fcm', fcmCred, deps), FcmProvider)
  t.type(providerFor('apns', apnsCred, deps), ApnsProvider)
})

t.test('one provider per credential version; a new version replaces it; evict forgets', async (t) => {
  const pool = new H2Pool()
  t.teardown(() => pool.close())
  const cache = new ProviderCache({ pool, fcmBaseUrl: 'https://fcm.googleapis.com', apnsBaseUrl: null })
  const a1 = cache.get('app', 'apns', 1, apnsCred)
  t.equal(cache.get('app', 'apns', 1, apnsCred), a1, 'same version, same provider (and token)')
  const a2 = cache.get('app', 'apns', 2, { ...apnsCred, env: 'production' })
  t.not(a2, a1, 'environment changed: a new provider at once')
  const other = cache.get('other', 'apns', 1, apnsCred) as ApnsProvider
  t.equal(other.tokens, (a2 as ApnsProvider).tokens, 'one provider-token cache shared by every app')
  const f = cache.get('app', 'fcm', 1, fcmCred)
  cache.evict('app')
  t.not(cache.get('app', 'fcm', 1, fcmCred), f)
  await cache.close()
})

t.test('past its bound the least recently used provider leaves, and is made again when its app sends', async (t) => {
  const pool = new H2Pool()
  t.teardown(() => pool.close())
  const cache = new ProviderCache({ pool, fcmBaseUrl: 'https://fcm.googleapis.com', apnsBaseUrl: null, max: 2 })
  const a = cache.get('a', 'fcm', 1, fcmCred)
  const b = cache.get('b', 'fcm', 1, fcmCred)
  t.equal(cache.get('a', 'fcm', 1, fcmCred), a, 'a is now the most recent')
  cache.get('c', 'fcm', 1, fcmCred) // evicts b
  t.equal(cache.get('a', 'fcm', 1, fcmCred), a, 'a kept')
  t.not(cache.get('b', 'fcm', 1, fcmCred), b, 'b was evicted and made again')
  await cache.close()
})
