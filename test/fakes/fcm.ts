// The tests' fake FCM is the shipped FCM simulator, serving the tests' certificate (PM_TEST_TLS_DIR when set).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type FcmOptions, type FcmSimulator, startFcmSimulator, useAccountKeys } from '../../src/simulators/fcm'
import { testTls } from './tls'

export {
  FCM_SCOPE,
  FCM_STEPS,
  type FcmDelivery,
  type FcmOptions,
  type FcmRequest,
  JWT_BEARER,
  type ServiceAccount,
  type TokenRequest,
} from '../../src/simulators/fcm'
export type FakeFcm = FcmSimulator

// The accounts' RSA key pairs, generated once and kept in the fixture: generating one costs ~100 ms of CPU, and the
// suite's processes made hundreds (about 14 s of a full run's CPU). Accounts past the fixture's 40 get new ones.
useAccountKeys(JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'fcm-account-keys.json'), 'utf8')))

export function startFakeFcm(opts: FcmOptions = {}): Promise<FakeFcm> {
  return startFcmSimulator({ tls: testTls(), ...opts })
}
