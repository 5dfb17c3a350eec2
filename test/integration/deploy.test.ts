// The deployment users copy (compose.yaml, deploy/, Dockerfile), checked against the tools and the real service:
// the compose file is validated by Compose itself (`docker compose config`, or Debian's docker-compose 1.29 where
// the v2 plugin is missing: both validate without a Docker daemon), Prometheus scrapes exactly the operations port
// of every Pombo service, nginx balances exactly the API services, the Grafana dashboard names only metrics a real
// /metrics scrape has (and every one it has), and the image's HEALTHCHECK command answers for a real process.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { CURRENT_BUILD, chooseUws } from '../../src/http/uws'
import { sampleNames } from '../helpers/metrics'
import { deliveredSend } from '../helpers/receipts'
import { freePort } from '../helpers/serve-child'
import { startService } from '../helpers/service'

const ROOT = join(__dirname, '..', '..')
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8')

interface Run {
  code: number
  stdout: string
  stderr: string
}

function run(cmd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/** `docker compose` when the v2 plugin is there, else Debian's docker-compose (v1.29). */
async function compose(): Promise<string[] | null> {
  if ((await run('docker', ['compose', 'version'])).code === 0) return ['docker', 'compose']
  if ((await run('docker-compose', ['version'])).code === 0) return ['docker-compose']
  return null
}

const KEYS = { PM_PLATFORM_KEY: 'k'.repeat(32), PM_VAULT_KEY: 'a'.repeat(64) }

interface Service {
  command?: string[]
  environment?: Record<string, string>
  profiles?: string[]
  volumes?: Array<string | { target: string; source: string }>
  depends_on?: Record<string, { condition: string }>
  image?: string
}

async function resolved(t: Test, file = 'compose.yaml', env: Record<string, string | undefined> = KEYS): Promise<Run> {
  const c = await compose()
  if (!c) {
    t.fail('no Compose: .ci/run installs docker-compose (apt-get install docker-compose)')
    return { code: -1, stdout: '', stderr: '' }
  }
  const [cmd, ...pre] = c as [string, ...string[]]
  return run(cmd, [...pre, '-f', file, '--profile', 'cluster', 'config'], { DOCKER_HOST: 'unix:///nonexistent', ...env })
}

const pombo = (s: Service) => s.command?.includes('serve') ?? false
const rolesOf = (s: Service) => s.command?.[s.command.indexOf('--roles') + 1] ?? ''

t.test('compose.yaml: valid for Compose, with every service of the deployment', async (t) => {
  const r = await resolved(t)
  t.equal(r.code, 0, r.stderr)
  const services: Record<string, Service> = parse(r.stdout).services
  const api = Object.keys(services).filter((n) => pombo(services[n] as Service) && rolesOf(services[n] as Service) === 'api')
  const workers = Object.keys(services).filter(
    (n) => pombo(services[n] as Service) && rolesOf(services[n] as Service) === 'worker',
  )
  t.equal(api.length, 2, 'two API processes')
  t.equal(workers.length, 2, 'two workers')
  t.ok(
    Object.values(services).some((s) => pombo(s) && rolesOf(s) === 'dashboard'),
    'a dashboard',
  )
  for (const n of ['postgres', 'redis', 'lb', 'prometheus', 'grafana', 'migrate']) t.ok(services[n], n)
  const cluster = Object.keys(services).filter((n) => services[n]?.profiles?.includes('cluster'))
  t.same(
    cluster.sort(),
    ['redis-cluster-init', 'redis-node-1', 'redis-node-2', 'redis-node-3'],
    'the cluster profile: three masters',
  )
  t.ok(read('deploy/redis/cluster.conf').includes('cluster-enabled yes'))

  for (const [n, s] of Object.entries(services).filter(([, s]) => pombo(s))) {
    t.equal(s.environment?.PM_MIGRATE_ON_START, '0', `${n}: never migrates at start`)
    t.equal(s.depends_on?.migrate?.condition, 'service_completed_successfully', `${n}: starts after the migrations`)
    t.ok(s.environment?.PM_OPS_PORT, `${n}: an operations port`)
  }
  t.same(services.migrate?.command?.slice(-1), ['migrate'])
  // Each API process reads the export files the other wrote: one volume on both, where PM_EXPORT_DIR points.
  for (const n of api) {
    const dir = services[n]?.environment?.PM_EXPORT_DIR as string
    const v = services[n]?.volumes?.map((x) => (typeof x === 'string' ? x.split(':')[1] : x.target))
    t.ok(v?.includes(dir), `${n}: the exports volume at ${dir}`)
  }
  // The connection arithmetic of the header comment: budgets + the migration's one within max_connections - 3.
  const budget = Object.values(services)
    .filter(pombo)
    .reduce((sum, s) => sum + Number(s.environment?.PM_PG_POOL ?? 32), 0)
  const max = Number(/max_connections=(\d+)/.exec(JSON.stringify(services.postgres))?.[1])
  t.ok(budget + 1 <= max - 3, `${budget} + 1 connections within ${max} - 3`)
  t.match(read('compose.yaml'), new RegExp(`= ${budget}, and 1 for \`pombo migrate\``), 'the comment states the same sum')
})

t.test('compose.yaml: Compose refuses it without the keys, and refuses an unknown option', async (t) => {
  const r = await resolved(t, 'compose.yaml', { PM_PLATFORM_KEY: '', PM_VAULT_KEY: KEYS.PM_VAULT_KEY })
  t.not(r.code, 0)
  t.match(r.stderr, /set PM_PLATFORM_KEY/)
  const dir = mkdtempSync(join(tmpdir(), 'pombo-compose-'))
  writeFileSync(join(dir, 'compose.yaml'), read('compose.yaml').replace('    command: ["postgres"', '    comand: ["postgres"'))
  const bad = await resolved(t, join(dir, 'compose.yaml'))
  t.not(bad.code, 0, 'a misspelt option is an error: the file is checked, not only parsed')
  t.match(bad.stderr, /comand/)
})

t.test('Prometheus scrapes the operations port of every Pombo service, and nothing else', async (t) => {
  const r = await resolved(t)
  const services: Record<string, Service> = parse(r.stdout).services
  const expected = Object.entries(services)
    .filter(([, s]) => pombo(s))
    .map(([n, s]) => `${n}:${s.environment?.PM_OPS_PORT}`)
    .sort()
  const prom = parse(read('deploy/prometheus.yml'))
  const targets = prom.scrape_configs.flatMap((j: { static_configs: Array<{ targets: string[] }> }) =>
    j.static_configs.flatMap((c) => c.targets),
  )
  t.same([...targets].sort(), expected)
  t.ok(
    services.prometheus?.volumes?.some((v) =>
      (typeof v === 'string' ? v.split(':')[0] : v.source)?.endsWith('deploy/prometheus.yml'),
    ),
    'mounted',
  )
})

t.test('nginx balances exactly the API services, on their HTTP and gRPC ports', async (t) => {
  const r = await resolved(t)
  const services: Record<string, Service> = parse(r.stdout).services
  const api = Object.keys(services).filter((n) => pombo(services[n] as Service) && rolesOf(services[n] as Service) === 'api')
  const conf = read('deploy/nginx.conf')
  const upstream = (name: string) =>
    [...(new RegExp(`upstream ${name} \\{([^}]*)\\}`).exec(conf)?.[1] ?? '').matchAll(/server ([\w-]+):(\d+)/g)]
      .map((m) => `${m[1]}:${m[2]}`)
      .sort()
  t.same(upstream('pombo_api'), api.map((n) => `${n}:${services[n]?.environment?.PORT ?? 8080}`).sort())
  t.same(upstream('pombo_grpc'), api.map((n) => `${n}:${services[n]?.environment?.PM_GRPC_PORT ?? 8082}`).sort())
  t.match(conf, /proxy_set_header X-Forwarded-For/, 'the client address is passed on (PM_TRUST_PROXY trusts it)')
})

t.test('Grafana: the provisioned dashboard names only metrics a real scrape has, and every one it has', async (t) => {
  const w = await deliveredSend(t, { devices: 1 })
  await w.post(w.body(w.players[0] as string))
  const text = await (await fetch(`${w.s.opsUrl}/metrics`)).text()
  const families = new Map<string, string>()
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1] as string, m[2] as string)
  const exposed = new Set(sampleNames(text))
  for (const [name, type] of families) {
    exposed.add(name)
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exposed.add(name + s)
  }
  const dash = JSON.parse(read('deploy/grafana/dashboards/pombo.json'))
  const exprs: string[] = dash.panels.flatMap((p: { targets?: Array<{ expr: string }> }) => (p.targets ?? []).map((x) => x.expr))
  const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(pombo_[a-z0-9_]+)/g)].map((m) => m[1] as string)))
  const unknown = [...used].filter((n) => !exposed.has(n))
  t.same(unknown, [], 'every metric of the dashboard exists')
  const base = (n: string) => n.replace(/_(bucket|sum|count)$/, '')
  const shown = new Set([...used].map((n) => (families.has(n) ? n : base(n))))
  t.same(
    [...families.keys()].filter((f) => f.startsWith('pombo_') && !shown.has(f)),
    [],
    'every metric family the process exposes is on the dashboard',
  )
  // The datasource uid the panels use is the provisioned one; the provider's path is where compose mounts them.
  const ds = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')).datasources[0]
  t.ok(
    dash.panels
      .filter((p: { type: string }) => p.type !== 'row')
      .every((p: { datasource: { uid: string } }) => p.datasource.uid === ds.uid),
    `every panel on datasource ${ds.uid}`,
  )
  const provider = parse(read('deploy/grafana/provisioning/dashboards/pombo.yml')).providers[0]
  t.match(read('compose.yaml'), new RegExp(`\\./deploy/grafana/dashboards:${provider.options.path}:ro`))
})

t.test('Dockerfile: HEALTHCHECK answers for a real process, commit argument, no optional packages, exports volume', async (t) => {
  const docker = read('Dockerfile')
  const check = /HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])/.exec(docker)
  t.ok(check, 'a HEALTHCHECK')
  const argv = JSON.parse(check?.[1] ?? '[]') as string[]
  t.equal(argv[0], 'node')
  const s = await startService(t, { roles: ['worker'], dispatcher: false })
  const up = await run(process.execPath, argv.slice(1), { PM_OPS_PORT: String(s.svc.ops?.port) })
  t.equal(up.code, 0, `healthy: ${up.stderr}`)
  const down = await run(process.execPath, argv.slice(1), { PM_OPS_PORT: String(await freePort()) })
  t.equal(down.code, 1, 'nothing listening: unhealthy')

  t.match(docker, /^ARG PM_GIT_COMMIT/m, 'the commit as a build argument')
  t.match(docker, /PM_GIT_COMMIT=\$\{PM_GIT_COMMIT\}/, 'reported by the service (GET / reads PM_GIT_COMMIT)')
  t.match(docker, /npm ci --omit=dev --omit=optional/)
  const exportDir = /PM_EXPORT_DIR=(\S+)/.exec(docker)?.[1]
  t.match(docker, new RegExp(`^VOLUME ${exportDir}$`, 'm'), 'the exports directory is a volume')
})

/** The glibc of the Debian releases an image may be based on (what src/http/uws.ts decides by). */
const DEBIAN_GLIBC: Record<string, string> = { bookworm: '2.36', trixie: '2.41', forky: '2.41' }

t.test('Dockerfile: a current Node LTS on a base whose glibc loads the current uWebSockets.js build', async (t) => {
  const docker = read('Dockerfile')
  const froms = [...docker.matchAll(/^FROM node:(\d+)-(\w+)-slim\b/gm)]
  t.equal(froms.length, 2, 'both stages on a Debian slim Node image')
  for (const [, major, release] of froms) {
    t.ok(Number(major) >= 24 && Number(major) % 2 === 0, `Node ${major}: an LTS line not past its end of life`)
    const choice = chooseUws({ node: `v${major}.0.0`, platform: 'linux', glibc: DEBIAN_GLIBC[release as string] ?? '0' })
    t.same('build' in choice && choice.build, CURRENT_BUILD, `${release}: the current build loads there`)
  }
  t.match(docker, /rm -rf node_modules\/uWebSockets\.js/, 'the Node 20 build is not shipped')
  t.match(
    docker,
    /uws_linux_\$\(node -p process\.arch\)_\$\(node -p process\.versions\.modules\)\.node/,
    "the runtime's binding is kept",
  )
  const engines = JSON.parse(read('package.json')).engines.node as string
  for (const major of ['20', '22', '24']) t.match(engines, `^${major}`, `engines names Node ${major}`)
})

/** Whether .dockerignore lets `path` into the build context (its `*` then `!allowed` form; the last match wins). */
function inContext(rules: string[], path: string): boolean {
  let allowed = true
  for (const rule of rules) {
    const negate = rule.startsWith('!')
    const pat = negate ? rule.slice(1) : rule
    const re = new RegExp(
      `^${pat
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '(.*/)?')
        .replace(/\*/g, '[^/]*')}(/.*)?$`,
    )
    if (re.test(path)) allowed = negate
  }
  return allowed
}

t.test('Dockerfile: the build context holds every file the image build reads', async (t) => {
  const rules = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  t.notOk(inContext(rules, 'node_modules/x'), 'the rules are read as Docker reads them')
  const needed = new Set(['package.json', 'package-lock.json', 'tsconfig.json', 'src/main.ts', 'bin/pombo', 'proto'])
  // npm ci fails without every workspace's package.json; the build compiles the SDK's sources.
  for (const ws of JSON.parse(read('package.json')).workspaces as string[]) {
    const dir = ws.replace(/\/\*$/, '/sdk')
    for (const f of ['package.json', 'tsconfig.json', 'src/index.ts']) needed.add(`${dir}/${f}`)
  }
  // The build script and every local module it imports.
  const scripts = ['scripts/build.mjs']
  for (let i = 0; i < scripts.length; i++) {
    const file = scripts[i] as string
    needed.add(file)
    for (const m of read(file).matchAll(/from '\.\/([^']+)'/g)) scripts.push(`scripts/${m[1]}`)
  }
  for (const m of read('Dockerfile').matchAll(/^COPY (?!--from)(.+) \S+$/gm))
    for (const src of (m[1] as string).split(/\s+/)) if (src !== '.') needed.add(src)
  for (const f of needed) t.ok(inContext(rules, f), `${f} reaches the build`)
})
