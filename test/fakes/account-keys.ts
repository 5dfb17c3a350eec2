// The RSA key pairs of test/fixtures/fcm-account-keys.json, read once per process: generating a pair costs ~100 ms of
// CPU, and the suite's processes generated hundreds (about 14 s of a full run). The fake FCM's accounts take them
// (test/fakes/fcm.ts), and the credential helper's service account the first (test/helpers/credentials.ts).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface KeyPair {
  privateKey: string
  publicKey: string
}

let pairs: KeyPair[] | undefined

export function accountKeyPairs(): readonly KeyPair[] {
  pairs ??= JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'fcm-account-keys.json'), 'utf8')) as KeyPair[]
  return pairs
}
