// A throwaway CA and a localhost server certificate for the fake providers, made with the openssl CLI once per
// process (or once per run when PM_TEST_TLS_DIR names a shared directory). Two ways for a client to trust it:
//  - a process started after the files exist: NODE_EXTRA_CA_CERTS=<caFile> (Node reads it only at start-up);
//  - a client in this process: pass `ca: testCa()` to http2.connect / https.request / tls.connect.
// Run as a script (`tsx test/fakes/tls.ts <dir>`) it writes the files into <dir> and prints the CA path, so a test
// runner can export NODE_EXTRA_CA_CERTS before its workers start.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestTls {
  /** The CA certificate, PEM: what a client trusts. */
  caPem: string
  /** Path of that PEM: the value for NODE_EXTRA_CA_CERTS. */
  caFile: string
  /** Server private key and certificate (SAN localhost, 127.0.0.1, ::1), PEM. */
  key: string
  cert: string
  dir: string
}

const FILES = ['ca.pem', 'server.key', 'server.pem'] as const
let cached: TestTls | undefined

/** The process's test TLS material; generated on first use. */
export function testTls(): TestTls {
  cached ??= loadOrCreate(process.env.PM_TEST_TLS_DIR || null)
  return cached
}

/** The CA to pass as `ca` to an in-process client (NODE_EXTRA_CA_CERTS is too late once the process runs). */
export function testCa(): string {
  return testTls().caPem
}

/** Environment for a child process (the service, a bench worker) that must reach the fakes over TLS. */
export function trustEnv(): { NODE_EXTRA_CA_CERTS: string } {
  return { NODE_EXTRA_CA_CERTS: testTls().caFile }
}

function loadOrCreate(shared: string | null): TestTls {
  if (!shared) {
    const dir = mkdtempSync(join(tmpdir(), 'pombo-fakes-tls-'))
    generate(dir)
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    return read(dir)
  }
  // Shared between processes: the first to take the lock generates and publishes ca.pem last; the others wait for it.
  mkdirSync(shared, { recursive: true })
  const ready = () => FILES.every((f) => existsSync(join(shared, f)))
  if (ready()) return read(shared)
  let owner = false
  try {
    mkdirSync(join(shared, '.lock'))
    owner = true
  } catch {}
  if (owner) {
    const tmp = mkdtempSync(join(shared, '.tmp-'))
    generate(tmp)
    for (const f of ['server.key', 'server.pem', 'ca.pem']) renameSync(join(tmp, f), join(shared, f))
    rmSync(tmp, { recursive: true, force: true })
    rmSync(join(shared, '.lock'), { recursive: true, force: true })
  }
  const nap = new Int32Array(new SharedArrayBuffer(4))
  for (let waited = 0; !ready(); waited += 50) {
    if (waited > 10_000) throw new Error(`no test TLS material appeared in ${shared} (stale ${join(shared, '.lock')}?)`)
    Atomics.wait(nap, 0, 0, 50)
  }
  return read(shared)
}

function read(dir: string): TestTls {
  const caFile = join(dir, 'ca.pem')
  return {
    caPem: readFileSync(caFile, 'utf8'),
    caFile,
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    dir,
  }
}

/** P-256 keys: fast to generate and accepted by every TLS 1.2/1.3 client. */
function generate(dir: string): void {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '3', '-subj', '/CN=Pombo test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign')
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'ext.cnf'), [
    'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
  ].join('\n'))
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '3',
    '-extfile', 'ext.cnf', '-out', 'server.pem')
  for (const f of ['ca.key', 'ca.srl', 'server.csr', 'ext.cnf']) rmSync(join(dir, f), { force: true })
}

if (require.main === module) {
  const dir = process.argv[2]
  if (!dir) {
    console.error('usage: tsx test/fakes/tls.ts <dir>   (then NODE_EXTRA_CA_CERTS=<dir>/ca.pem PM_TEST_TLS_DIR=<dir>)')
    process.exit(2)
  }
  console.log(loadOrCreate(dir).caFile)
}
