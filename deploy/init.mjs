#!/usr/bin/env node
// First use of the deployment in compose.yaml: writes what it needs and must never ship with a default.
//   node deploy/init.mjs [--dir DIR] [--host NAME]...
// In DIR (the directory of compose.yaml by default):
//   .env                     every secret compose.yaml reads, random (mode 0600); values already there are kept
//   deploy/tls/cert.pem      a self-signed certificate for nginx (TLS for the API, the dashboard and gRPC), made
//   deploy/tls/key.pem       with the openssl CLI for each --host name (default localhost) and 127.0.0.1
//   deploy/secrets/ops_token the operations token (PM_OPS_TOKEN) that Prometheus presents when it scrapes
// Running it again changes nothing that exists: it only adds what is missing. No secret is printed.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const hex = (bytes) => () => randomBytes(bytes).toString('hex')

/**
 * The secrets of compose.yaml, each read there as `${NAME:?…}` (no default). URL-safe values: DATABASE_URL and
 * REDIS_URL carry the passwords as they are.
 */
export const SECRETS = {
  POSTGRES_PASSWORD: hex(24),
  REDIS_PASSWORD: hex(24),
  GRAFANA_ADMIN_PASSWORD: hex(18),
  PM_PLATFORM_KEY: hex(24),
  PM_VAULT_KEY: hex(32),
  PM_DASHBOARD_SECRET: hex(32),
  PM_OPS_TOKEN: hex(24),
}

/** `NAME=value` lines of an existing .env (comments and blank lines skipped). */
function readEnv(file) {
  const out = new Map()
  if (!existsSync(file)) return out
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/.exec(line)
    if (m) out.set(m[1], m[2].trim())
  }
  return out
}

function writeEnv(file, log) {
  const have = readEnv(file)
  const added = Object.keys(SECRETS).filter((k) => !have.get(k))
  if (added.length === 0) {
    log(`${file}: every secret already set`)
    chmodSync(file, 0o600)
    return have
  }
  const old = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Secrets of compose.yaml, made by deploy/init.mjs. Keep this file private.\n'
  const lines = added.map((k) => {
    const v = SECRETS[k]()
    have.set(k, v)
    return `${k}=${v}`
  })
  writeFileSync(file, `${old}${old.endsWith('\n') ? '' : '\n'}${lines.join('\n')}\n`, { mode: 0o600 })
  chmodSync(file, 0o600)
  log(`${file}: wrote ${added.join(', ')}`)
  return have
}

function writeCertificate(dir, hosts, log) {
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  if (existsSync(cert) && existsSync(key)) {
    log(`${cert}: kept`)
    return
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const san = [...hosts.map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`)), 'IP:127.0.0.1'].join(',')
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-sha256',
        '-days',
        '825',
        '-subj',
        `/CN=${hosts[0]}`,
        '-addext',
        `subjectAltName=${san}`,
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    )
  } catch (err) {
    throw new Error(
      `openssl could not make the certificate (${err.stderr?.toString().trim() || err.message}): install openssl, or put your own cert.pem and key.pem in ${dir}`,
    )
  }
  // nginx's master process (root in its container) reads the key before it drops privileges.
  chmodSync(key, 0o600)
  log(`${cert}: self-signed for ${san} (replace it with your own certificate for a public name)`)
}

function writeOpsToken(dir, token, log) {
  const file = join(dir, 'ops_token')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // Prometheus runs as another user in its container and must read it; the directory (0700) keeps it from other
  // users of this host.
  writeFileSync(file, token, { mode: 0o644 })
  chmodSync(dir, 0o700)
  log(`${file}: the token Prometheus presents`)
}

export function init({ dir, hosts = ['localhost'], log = console.log }) {
  const env = writeEnv(join(dir, '.env'), log)
  writeCertificate(join(dir, 'deploy', 'tls'), hosts, log)
  writeOpsToken(join(dir, 'deploy', 'secrets'), env.get('PM_OPS_TOKEN'), log)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const { values } = parseArgs({
      options: { dir: { type: 'string' }, host: { type: 'string', multiple: true } },
    })
    const hosts = values.host?.length ? values.host : ['localhost']
    for (const h of hosts) if (!/^[A-Za-z0-9.:-]{1,253}$/.test(h)) throw new Error(`--host: not a host name: ${h}`)
    init({ dir: resolve(values.dir ?? join(dirname(fileURLToPath(import.meta.url)), '..')), hosts })
  } catch (err) {
    console.error(`deploy/init.mjs: ${err.message}`)
    process.exit(1)
  }
}
