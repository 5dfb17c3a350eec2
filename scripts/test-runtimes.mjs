// `npm run test:runtimes`: runs a set of suites on Node 22 and 24 on a current glibc, where Pombo loads the current
// uWebSockets.js build, even on a machine whose own system is older (Debian 12, glibc 2.36). It builds a Debian 13
// root once with debootstrap (about 7 minutes, ~250 MB in ~/.cache/pombo-runtimes; needs root and Debian's
// debootstrap, installed here when missing), puts each Node binary (fetched as an npm package) in it, binds this
// checkout at the same path, and runs tap there against the same Postgres and Redis (the root shares the network).
//   npm run test:runtimes                       the default suites on Node 22 and 24
//   npm run test:runtimes -- test/x.test.ts     those files instead
//   npm run test:runtimes -- --fuzz --runs 2000 --seed 7
//                                               `npm run fuzz` with those options (test/fuzz/run.ts), on each
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { ensureTestServices, REPO_ROOT, stopAllServices } from './local-services.mjs'
import { CACHE, nodeBinary, RUNTIMES } from './node-runtimes.mjs'

const SUITES = [
  'test/unit/uws-choice.test.ts',
  'test/integration/runtime-versions.test.ts',
  'test/integration/http.test.ts',
  'test/integration/hostile-headers.test.ts',
  'test/integration/sends-create.test.ts',
  'test/integration/sends-scheduled.test.ts',
  'test/integration/delivery.test.ts',
  'test/integration/receipts.test.ts',
  'test/integration/devices-export.test.ts',
  'test/integration/grpc-stream.test.ts',
  'test/integration/webhooks.test.ts',
  // The hostile-input fuzzer's seeded run, and the pages the current uWebSockets.js build writes itself.
  'test/fuzz/hostile.test.ts',
  'test/integration/uws-own-pages.test.ts',
]
const ROOTFS = path.join(CACHE, 'debian-trixie')
const log = (m) => console.error(`[pombo runtimes] ${m}`)

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}`)
}

function ensureRoot() {
  if (process.getuid?.() !== 0) throw new Error('building and entering the Debian 13 root needs root (chroot and mounts)')
  if (existsSync(path.join(ROOTFS, 'usr', 'bin', 'env'))) return
  if (spawnSync('sh', ['-c', 'command -v debootstrap'], { stdio: 'ignore' }).status !== 0) {
    log('installing debootstrap (Debian package)')
    sh('apt-get', ['update', '-qq'])
    sh('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'debootstrap'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    })
  }
  log(`building a Debian 13 (trixie) root in ${ROOTFS} (once; several minutes)`)
  mkdirSync(CACHE, { recursive: true })
  // openssl: the provider simulators make their TLS certificate with it.
  sh('debootstrap', [
    '--variant=minbase',
    '--include=openssl,ca-certificates',
    'trixie',
    `${ROOTFS}.part`,
    'http://deb.debian.org/debian',
  ])
  sh('mv', [`${ROOTFS}.part`, ROOTFS])
}

function mounted(p) {
  return spawnSync('mountpoint', ['-q', p]).status === 0
}

function mountAll() {
  const repo = path.join(ROOTFS, REPO_ROOT)
  mkdirSync(repo, { recursive: true })
  if (!mounted(repo)) sh('mount', ['--bind', REPO_ROOT, repo])
  if (!mounted(path.join(ROOTFS, 'proc'))) sh('mount', ['-t', 'proc', 'proc', path.join(ROOTFS, 'proc')])
  if (!mounted(path.join(ROOTFS, 'dev'))) sh('mount', ['--bind', '/dev', path.join(ROOTFS, 'dev')])
  // debootstrap writes no /etc/hosts: without this machine's, `localhost` resolves to nothing inside the root (the
  // webhook tests deliver to it).
  if (existsSync('/etc/hosts')) copyFileSync('/etc/hosts', path.join(ROOTFS, 'etc', 'hosts'))
  return () => {
    for (const p of [repo, path.join(ROOTFS, 'proc'), path.join(ROOTFS, 'dev')]) spawnSync('umount', ['-l', p])
  }
}

async function main() {
  const args = process.argv.slice(2)
  const fuzz = args[0] === '--fuzz'
  const files = fuzz ? [] : args
  // Run by this Node inside the root, from the checkout (the root has no npm: the scripts' own entry files).
  const command = fuzz
    ? ['node_modules/.bin/tsx', 'test/fuzz/run.ts', ...args.slice(1)]
    : ['node_modules/.bin/tap', ...(files.length ? files : SUITES)]
  const what = fuzz ? `npm run fuzz -- ${args.slice(1).join(' ')}`.trim() : `${(files.length ? files : SUITES).length} files`
  ensureRoot()
  const glibc = execFileSync('chroot', [ROOTFS, 'ldd', '--version'], { encoding: 'utf8' }).split('\n')[0]
  log(`root: ${glibc}`)
  const { DATABASE_URL, REDIS_URL } = await ensureTestServices({ log })
  const unmount = mountAll()
  let failed = 0
  try {
    // Every runtime inside the root too, where runtime-versions.test.ts looks for them (the root has no npm).
    for (const version of Object.values(RUNTIMES)) {
      mkdirSync(path.join(ROOTFS, 'opt', 'pombo-runtimes', version, 'bin'), { recursive: true })
      copyFileSync(nodeBinary(version, log), path.join(ROOTFS, 'opt', 'pombo-runtimes', version, 'bin', 'node'))
    }
    for (const version of Object.values(RUNTIMES)) {
      copyFileSync(nodeBinary(version, log), path.join(ROOTFS, 'usr', 'local', 'bin', 'node'))
      log(`Node ${version}: ${what}`)
      const r = spawnSync(
        'chroot',
        // chroot starts in /: the shell moves to the checkout's path, which the bind mount gives the same contents.
        [ROOTFS, '/bin/sh', '-c', 'cd "$0" && exec /usr/local/bin/node "$@"', REPO_ROOT, ...command],
        {
          stdio: 'inherit',
          env: {
            PATH: '/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin',
            HOME: '/root',
            PM_RUNTIMES_CACHE: '/opt/pombo-runtimes',
            DATABASE_URL,
            REDIS_URL,
            CI: process.env.CI ?? '',
          },
        },
      )
      if (r.status !== 0) failed++
      log(`Node ${version}: ${r.status === 0 ? 'green' : `failed (${r.error?.message ?? `exit ${r.status}`})`}`)
    }
  } finally {
    unmount()
    await stopAllServices()
  }
  process.exit(failed ? 1 : 0)
}

main().catch((err) => {
  log(err.message)
  process.exit(1)
})
