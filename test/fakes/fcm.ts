// The tests' fake FCM is the shipped FCM simulator, serving the tests' certificate (PM_TEST_TLS_DIR when set).
import { type FcmOptions, type FcmSimulator, startFcmSimulator, useAccountKeys } from '../../src/simulators/fcm'
import { accountKeyPairs } from './account-keys'
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

// The accounts' RSA key pairs come from the fixture (test/fakes/account-keys.ts); accounts past its 40 get new ones.
useAccountKeys(accountKeyPairs())

export function startFakeFcm(opts: FcmOptions = {}): Promise<FakeFcm> {
  return startFcmSimulator({ tls: testTls(), ...opts })
}
