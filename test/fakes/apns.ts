// The tests' fake APNs is the shipped APNs simulator, serving the tests' certificate (PM_TEST_TLS_DIR when set).
import { type ApnsOptions, type ApnsSimulator, startApnsSimulator } from '../../src/simulators/apns'
import { testTls } from './tls'

export {
  APNS_STEPS,
  type ApnsDelivery,
  type ApnsEnvironment,
  type ApnsKey,
  type ApnsOptions,
  type ApnsRequest,
} from '../../src/simulators/apns'
export type FakeApns = ApnsSimulator

export function startFakeApns(opts: ApnsOptions = {}): Promise<FakeApns> {
  return startApnsSimulator({ tls: testTls(), ...opts })
}
