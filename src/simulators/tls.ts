// TLS material for the provider simulators: a throwaway CA and a localhost server certificate, made with the openssl
// CLI (Node has no API to issue X.509 certificates). Clients trust the CA in one of two ways:
//  - a process started after the files exist: NODE_EXTRA_CA_CERTS=<caFile> (Node reads it only at start-up);
//  - a client in this process: pass `ca: caPem` to http2.connect / https.request / tls.connect.
// A directory may be shared by several processes (a worker started before `pombo simulate`, parallel test
// workers): the first to take its lock writes the files, the others wait for them.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface SimulatorTls {
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
const cached = new Map<string, SimulatorTls>()

/**
 * The TLS material in `dir` (created there when missing; reused when present, so a worker started earlier with
 * NODE_EXTRA_CA_CERTS=<dir>/ca.pem keeps trusting it), or, without a directory, a fresh set in a temporary directory
 * removed when the process exits. Cached per directory for the life of the process.
 */
export function simulatorTls(dir: string | null = null): SimulatorTls {
  const k = dir ?? ''
  let tls = cached.get(k)
  if (!tls) {
    tls = loadOrCreate(dir)
    cached.set(k, tls)
  }
  return tls
}

function loadOrCreate(shared: string | null): SimulatorTls {
  if (!shared) {
    const dir = mkdtempSync(join(tmpdir(), 'pombo-simulators-tls-'))
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
    if (waited > 10_000) throw new Error(`no simulator TLS material appeared in ${shared} (stale ${join(shared, '.lock')}?)`)
    Atomics.wait(nap, 0, 0, 50)
  }
  return read(shared)
}

function read(dir: string): SimulatorTls {
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
  const ssl = (...args: string[]) => {
    try {
      execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: Buffer }
      if (e.code === 'ENOENT') throw new Error('the provider simulators need the openssl command to make their TLS certificate')
      throw new Error(`openssl ${args[0]} failed: ${e.stderr?.toString('utf8').trim() || e.message}`)
    }
  }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  ssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '30',
    '-subj',
    '/CN=Pombo simulator CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  )
  ssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(
    join(dir, 'ext.cnf'),
    [
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
    ].join('\n'),
  )
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '30',
    '-extfile',
    'ext.cnf',
    '-out',
    'server.pem',
  )
  for (const f of ['ca.key', 'ca.srl', 'server.csr', 'ext.cnf']) rmSync(join(dir, f), { force: true })
}
