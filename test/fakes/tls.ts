// The tests' TLS material for the provider simulators and the webhook receiver: one set per process, or one per
// run when PM_TEST_TLS_DIR names a shared directory (made in advance with `tsx test/fakes/tls.ts <dir>`, so the
// test runner can export NODE_EXTRA_CA_CERTS before its workers start). The certificate itself is made by the
// simulators' own code (src/simulators/tls.ts).
import { type SimulatorTls, simulatorTls } from '../../src/simulators/tls'

export type TestTls = SimulatorTls

/** The process's test TLS material; generated on first use. */
export function testTls(): TestTls {
  return simulatorTls(process.env.PM_TEST_TLS_DIR || null)
}

/** The CA to pass as `ca` to an in-process client (NODE_EXTRA_CA_CERTS is too late once the process runs). */
export function testCa(): string {
  return testTls().caPem
}

/** Environment for a child process (the service, a bench worker) that must reach the fakes over TLS. */
export function trustEnv(): { NODE_EXTRA_CA_CERTS: string } {
  return { NODE_EXTRA_CA_CERTS: testTls().caFile }
}

if (require.main === module) {
  const dir = process.argv[2]
  if (!dir) {
    console.error('usage: tsx test/fakes/tls.ts <dir>   (then NODE_EXTRA_CA_CERTS=<dir>/ca.pem PM_TEST_TLS_DIR=<dir>)')
    process.exit(2)
  }
  console.log(simulatorTls(dir).caFile)
}
