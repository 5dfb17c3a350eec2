// The deployment users copy (compose.yaml, deploy/, Dockerfile), checked against the tools and the real service:
// the compose file is validated by Compose itself (`docker compose config`, or Debian's docker-compose 1.29 where
// the v2 plugin is missing: both validate without a Docker daemon), Prometheus scrapes exactly the operations port
// of every Pombo service, nginx balances exactly the API services, the Grafana dashboard names only metrics a real
// /metrics scrape has (and every one it has), and the image's HEALTHCHECK command answers for a real process.
// It is safe by default: no secret has a default (deploy/init.mjs writes random ones and a certificate), only nginx
// is published, nginx terminates TLS with HSTS for the API, the dashboard and gRPC and logs no token, Grafana asks
// for a password and shares no network with the databases.
import { execFile } from 'node:child_process'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import t, { type Test } from 'tap'
import { load } from 'js-yaml'
import { CURRENT_BUILD, chooseUws } from '../../src/http/uws'
import { sampleNames } from '../helpers/metrics'
import { deliveredSend } from '../helpers/receipts'
import { freePort } from '../helpers/serve-child'
import { startService } from '../helpers/service'

/** A YAML file or output, read as the tests read it: fields by name. */
// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary YAML shapes
const yamlParse = (text: string): any => load(text)

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

/** `docker compose` when the v2 plugin is there, else Debian's docker-compose (v1.29); looked for once per file
 *  (each look starts the Compose program, most of a second). */
let composeCommand: Promise<string[] | null> | undefined
function compose(): Promise<string[] | null> {
  composeCommand ??= (async () => {
    if ((await run('docker', ['compose', 'version'])).code === 0) return ['docker', 'compose']
    if ((await run('docker-compose', ['version'])).code === 0) return ['docker-compose']
    return null
  })()
  return composeCommand
}

/** Every secret compose.yaml requires, with a value (tests pass them through an env file, as .env would). */
const KEYS: Record<string, string> = {
  PM_PLATFORM_KEY: 'k'.repeat(32),
  PM_VAULT_KEY: 'a'.repeat(64),
  PM_DASHBOARD_SECRET: 'b'.repeat(64),
  PM_OPS_TOKEN: 'ops-token-value',
  POSTGRES_PASSWORD: 'pg-password-value',
  REDIS_PASSWORD: 'redis-password-value',
  GRAFANA_ADMIN_PASSWORD: 'grafana-password-value',
}

interface Service {
  command?: string[]
  environment?: Record<string, string>
  profiles?: string[]
  volumes?: Array<string | { target: string; source: string }>
  depends_on?: Record<string, { condition: string }>
  image?: string
  ports?: Array<string | { published?: number | string; target: number | string; host_ip?: string }>
  networks?: Record<string, unknown> | string[]
}

/** An env file of these variables (Compose reads it as it reads .env; never the checkout's own .env). */
function envFile(vars: Record<string, string>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'pombo-env-')), 'env')
  writeFileSync(
    file,
    Object.entries(vars)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
  )
  return file
}

/** compose.yaml resolved with every key set: several tests read it, Compose runs once (about a second of CPU). */
let asDeployed: Promise<Run> | undefined

/** `docker compose config` of `file` with these variables in its env file, and `env` over them (the shell's). */
function resolved(
  t: Test,
  file = 'compose.yaml',
  env: Record<string, string | undefined> = {},
  vars: Record<string, string> = KEYS,
): Promise<Run> {
  if (file !== 'compose.yaml' || Object.keys(env).length > 0 || vars !== KEYS) return composeConfig(t, file, env, vars)
  asDeployed ??= composeConfig(t, file, env, vars)
  return asDeployed
}

async function composeConfig(
  t: Test,
  file: string,
  env: Record<string, string | undefined>,
  vars: Record<string, string>,
): Promise<Run> {
  const c = await compose()
  if (!c) {
    t.fail('no Compose: npm test installs docker-compose (scripts/test-tools.mjs)')
    return { code: -1, stdout: '', stderr: '' }
  }
  const [cmd, ...pre] = c as [string, ...string[]]
  return run(cmd, [...pre, '--env-file', envFile(vars), '-f', file, '--profile', 'cluster', 'config'], {
    DOCKER_HOST: 'unix:///nonexistent',
    ...env,
  })
}

const pombo = (s: Service) => s.command?.includes('serve') ?? false
const rolesOf = (s: Service) => s.command?.[s.command.indexOf('--roles') + 1] ?? ''

t.test('compose.yaml: valid for Compose, with every service of the deployment', async (t) => {
  const r = await resolved(t)
  t.equal(r.code, 0, r.stderr)
  const services: Record<string, Service> = yamlParse(r.stdout).services
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
  const r = await resolved(t, 'compose.yaml', { PM_PLATFORM_KEY: '' })
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
  const services: Record<string, Service> = yamlParse(r.stdout).services
  const expected = Object.entries(services)
    .filter(([, s]) => pombo(s))
    .map(([n, s]) => `${n}:${s.environment?.PM_OPS_PORT}`)
    .sort()
  const prom = yamlParse(read('deploy/prometheus.yml'))
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
  const services: Record<string, Service> = yamlParse(r.stdout).services
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
  const ds = yamlParse(read('deploy/grafana/provisioning/datasources/prometheus.yml')).datasources[0]
  t.ok(
    dash.panels
      .filter((p: { type: string }) => p.type !== 'row')
      .every((p: { datasource: { uid: string } }) => p.datasource.uid === ds.uid),
    `every panel on datasource ${ds.uid}`,
  )
  const provider = yamlParse(read('deploy/grafana/provisioning/dashboards/pombo.yml')).providers[0]
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
  const needed = new Set([
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'src/main.ts',
    'bin/pombo',
    'bin/dist.cjs',
    'proto',
  ])
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
    for (const m of read(file).matchAll(/from '(\.\.?\/[^']+)'/g)) {
      const dep = posix.normalize(posix.join(posix.dirname(file), m[1] as string))
      if (!scripts.includes(dep)) scripts.push(dep)
    }
    // The TypeScript project it compiles, and the one that extends.
    for (const m of read(file).matchAll(/'(tsconfig[\w.]*\.json)'/g)) {
      for (let config: string | undefined = m[1]; config; ) {
        needed.add(config)
        config = (JSON.parse(read(config)) as { extends?: string }).extends?.replace(/^\.\//, '')
      }
    }
  }
  for (const m of read('Dockerfile').matchAll(/^COPY (?!--from)(.+) \S+$/gm))
    for (const src of (m[1] as string).split(/\s+/)) if (src !== '.') needed.add(src)
  for (const f of needed) t.ok(inContext(rules, f), `${f} reaches the build`)
})

// ---- Safe by default ---------------------------------------------------------------------------------------------

/** Every `${NAME…}` compose.yaml interpolates: its name and what follows the name (`:?message`, `:-default`, ``). */
function interpolations(text: string): Array<{ name: string; rest: string }> {
  return [...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}/g)].map((m) => ({
    name: m[1] as string,
    rest: m[2] as string,
  }))
}

const SECRET_NAME = /PASSWORD|SECRET|TOKEN|_KEY$/

t.test('compose.yaml: every secret comes from a variable without a default, and Compose refuses to run without it', async (t) => {
  const text = read('compose.yaml')
  const secrets = new Set<string>()
  for (const { name, rest } of interpolations(text)) {
    if (!SECRET_NAME.test(name)) continue
    t.match(rest, /^:\?./, `\${${name}} has no default: Compose stops with a message when it is unset`)
    secrets.add(name)
  }
  t.same([...secrets].sort(), Object.keys(KEYS).sort(), 'the secrets are exactly the ones deploy/init.mjs writes')
  // One Compose run per secret, side by side (each is a separate process reading its own environment).
  const refusals = await Promise.all(
    [...secrets].map(async (name) => [name, await resolved(t, 'compose.yaml', { [name]: '' })] as const),
  )
  for (const [name, r] of refusals) {
    t.not(r.code, 0, `without ${name}, Compose refuses`)
    t.match(r.stderr, /deploy\/init\.mjs|PM_/, `${name}: the message says what to do`)
  }

  // With the variables set, every secret a service sees is the variable's value: no literal password anywhere.
  const r = await resolved(t)
  t.equal(r.code, 0, r.stderr)
  const services: Record<string, Service> = yamlParse(r.stdout).services
  const values = new Set(Object.values(KEYS))
  for (const [n, s] of Object.entries(services)) {
    for (const [k, v] of Object.entries(s.environment ?? {})) {
      if (SECRET_NAME.test(k)) t.ok(values.has(String(v)), `${n}: ${k} comes from its variable`)
      const pass = /^\w+:\/\/[^:/@]*:([^@/]*)@/.exec(String(v))?.[1]
      if (pass !== undefined) t.ok(values.has(decodeURIComponent(pass)), `${n}: the password in ${k} comes from a variable`)
    }
  }
  t.equal(services.postgres?.environment?.POSTGRES_PASSWORD, KEYS.POSTGRES_PASSWORD)
  t.equal(services.redis?.environment?.REDIS_PASSWORD, KEYS.REDIS_PASSWORD)
  t.match(JSON.stringify(services.redis?.command), /requirepass/, 'Redis asks for its password')
  for (const [n, s] of Object.entries(services).filter(([, s]) => pombo(s))) {
    t.equal(s.environment?.REDIS_URL, `redis://:${KEYS.REDIS_PASSWORD}@redis:6379`, `${n}: Redis with its password`)
    t.equal(s.environment?.PM_OPS_TOKEN, KEYS.PM_OPS_TOKEN, `${n}: /metrics needs the token`)
  }
})

t.test(
  'Grafana: no anonymous access, no sign-up, its admin password from .env, no network shared with the databases',
  async (t) => {
    const r = await resolved(t)
    const services: Record<string, Service> = yamlParse(r.stdout).services
    const g = services.grafana?.environment ?? {}
    t.equal(g.GF_AUTH_ANONYMOUS_ENABLED, 'false', 'anonymous access is off (explicitly: the image may change its default)')
    t.notOk('GF_AUTH_ANONYMOUS_ORG_ROLE' in g)
    t.equal(g.GF_USERS_ALLOW_SIGN_UP, 'false')
    t.equal(g.GF_SECURITY_ADMIN_PASSWORD, KEYS.GRAFANA_ADMIN_PASSWORD, 'not admin/admin')
    const nets = (s: Service | undefined) => new Set(Array.isArray(s?.networks) ? s.networks : Object.keys(s?.networks ?? {}))
    const grafana = nets(services.grafana)
    t.ok(grafana.size > 0, 'Grafana names its networks (the default network would join it to everything)')
    for (const db of ['postgres', 'redis', 'redis-node-1', 'redis-node-2', 'redis-node-3']) {
      const shared = [...nets(services[db])].filter((n) => grafana.has(n))
      t.same(shared, [], `Grafana cannot reach ${db}`)
    }
    // Prometheus presents the token the Pombo services require.
    const prom = yamlParse(read('deploy/prometheus.yml'))
    for (const job of prom.scrape_configs) {
      t.equal(job.authorization?.type, 'Bearer', `${job.job_name}: a bearer token`)
      const file = job.authorization?.credentials_file as string
      t.ok(
        services.prometheus?.volumes?.some((v) => (typeof v === 'string' ? v.split(':')[1] : v.target) === file),
        `${file} is mounted`,
      )
    }
  },
)

interface Published {
  service: string
  hostIp: string
  published: string
  target: string
}

function published(services: Record<string, Service>): Published[] {
  const out: Published[] = []
  for (const [service, s] of Object.entries(services)) {
    for (const p of s.ports ?? []) {
      if (typeof p === 'string') {
        const parts = p.replace(/\/\w+$/, '').split(':')
        const target = parts.pop() as string
        const pub = parts.pop() ?? ''
        out.push({ service, hostIp: parts.join(':'), published: pub, target })
      } else {
        out.push({ service, hostIp: p.host_ip ?? '', published: String(p.published ?? ''), target: String(p.target) })
      }
    }
  }
  return out
}

t.test('only nginx is published; Postgres, Redis, Prometheus and the operations ports stay inside', async (t) => {
  const r = await resolved(t)
  const services: Record<string, Service> = yamlParse(r.stdout).services
  const ports = published(services)
  for (const p of ports) {
    const loopback = p.hostIp === '127.0.0.1' || p.hostIp === '::1'
    t.ok(p.service === 'lb' || loopback, `${p.service}:${p.target} is published on ${p.hostIp || 'every address'}`)
  }
  const inside = ['postgres', 'redis', 'prometheus', 'redis-node-1', 'redis-node-2', 'redis-node-3', 'migrate']
  for (const n of inside) t.same(services[n]?.ports ?? [], [], `${n}: not published`)
  for (const [n, s] of Object.entries(services).filter(([, s]) => pombo(s))) {
    t.same(s.ports ?? [], [], `${n}: reached through nginx (API, dashboard, gRPC) or Prometheus (operations) only`)
  }
  const opsPorts = new Set(
    Object.values(services)
      .map((s) => s.environment?.PM_OPS_PORT)
      .filter(Boolean),
  )
  for (const p of ports) {
    t.notOk(
      ['5432', '6379', '9090', ...opsPorts].includes(p.target),
      `${p.service} publishes no database, Prometheus or operations port`,
    )
  }
  t.ok(
    ports.filter((p) => p.service === 'grafana').every((p) => p.hostIp === '127.0.0.1'),
    'Grafana on loopback only',
  )
})

interface NginxServer {
  body: string
  listens: string[]
}

/** The `server { … }` blocks of nginx.conf (braces balanced; comments dropped). */
function nginxServers(conf: string): NginxServer[] {
  const text = conf.replace(/#[^\n]*/g, '')
  const out: NginxServer[] = []
  for (const m of text.matchAll(/\bserver\s*\{/g)) {
    let depth = 0
    let end = m.index as number
    for (let i = m.index as number; i < text.length; i++) {
      if (text[i] === '{') depth++
      if (text[i] === '}' && --depth === 0) {
        end = i
        break
      }
    }
    const body = text.slice(m.index as number, end + 1)
    out.push({ body, listens: [...body.matchAll(/^\s*listen\s+([^;]+);/gm)].map((l) => l[1] as string) })
  }
  return out
}

t.test('nginx: TLS with HSTS for the API, the dashboard and gRPC over HTTP/2; plain HTTP only redirects', async (t) => {
  const conf = read('deploy/nginx.conf')
  const servers = nginxServers(conf)
  const proxied = (s: NginxServer, up: string) => new RegExp(`(proxy|grpc)_pass (http|grpc)s?://${up};`).test(s.body)
  const api = servers.find((s) => proxied(s, 'pombo_api'))
  const dash = servers.find((s) => proxied(s, 'pombo_dashboard'))
  const grpc = servers.find((s) => proxied(s, 'pombo_grpc'))
  t.ok(api && dash && grpc, 'a server for each of the API, the dashboard and gRPC')
  for (const [name, s] of [
    ['API', api],
    ['dashboard', dash],
    ['gRPC', grpc],
  ] as const) {
    t.ok(s && s.listens.length > 0 && s.listens.every((l) => /\bssl\b/.test(l)), `${name}: every listen is TLS`)
    const hsts = /add_header\s+Strict-Transport-Security\s+"max-age=(\d+)[^"]*"\s+always;/.exec(s?.body ?? '')
    t.ok(hsts && Number(hsts[1]) >= 180 * 86_400, `${name}: HSTS of at least 180 days, on every answer`)
  }
  t.match(grpc?.body ?? '', /^\s*http2 on;/m, 'gRPC: HTTP/2')
  t.match(grpc?.body ?? '', /grpc_pass grpc:\/\/pombo_grpc;/, 'gRPC: grpc_pass')
  // A server without TLS only sends the client to https.
  for (const s of servers.filter((s) => s.listens.some((l) => !/\bssl\b/.test(l)))) {
    t.notMatch(s.body, /(proxy|grpc)_pass/, `listen ${s.listens.join(', ')}: nothing proxied in clear`)
    t.match(s.body, /return 30[18] https:\/\//, `listen ${s.listens.join(', ')}: redirects to https`)
  }
  // The certificate nginx reads is the one deploy/init.mjs writes, mounted where nginx looks for it.
  const r = await resolved(t)
  const services: Record<string, Service> = yamlParse(r.stdout).services
  const cert = /^\s*ssl_certificate\s+(\S+);/m.exec(conf)?.[1] as string
  const key = /^\s*ssl_certificate_key\s+(\S+);/m.exec(conf)?.[1] as string
  const tlsMount = services.lb?.volumes
    ?.map((v) => (typeof v === 'string' ? { source: v.split(':')[0] as string, target: v.split(':')[1] as string } : v))
    .find((v) => cert.startsWith(`${v.target}/`))
  t.ok(tlsMount?.source.endsWith('/deploy/tls'), `the certificate directory is deploy/tls (${tlsMount?.source})`)
  t.equal(cert, `${tlsMount?.target}/cert.pem`)
  t.equal(key, `${tlsMount?.target}/key.pem`)
  // What nginx listens on is what compose publishes, and the addresses people use are https.
  const listened = new Set(servers.flatMap((s) => s.listens.map((l) => /(\d+)/.exec(l)?.[1] as string)))
  t.same(
    published(services)
      .filter((p) => p.service === 'lb')
      .map((p) => p.target)
      .sort(),
    [...listened].sort(),
  )
  for (const [n, s] of Object.entries(services).filter(([, s]) => pombo(s))) {
    t.match(s.environment?.PM_PUBLIC_BASE_URL, /^https:\/\//, `${n}: the public address is https`)
    t.match(s.environment?.PM_DASHBOARD_URL, /^https:\/\//, `${n}: the dashboard is https (Secure, __Host- cookies)`)
  }
  const upstream = (name: string) => new RegExp(`upstream ${name} \\{([^}]*)\\}`).exec(conf)?.[1] ?? ''
  t.match(upstream('pombo_dashboard'), /server dashboard:8081\b/, 'the dashboard behind nginx')
})

t.test('nginx: the access log carries no query string, no export download token and no invitation token', async (t) => {
  const conf = read('deploy/nginx.conf').replace(/#[^\n]*/g, '')
  const formats = [...conf.matchAll(/log_format\s+(\S+)\s+((?:'[^']*'\s*)+);/g)]
  t.ok(formats.length > 0, 'a log format of its own (the default one logs $request, query string included)')
  const names = new Set(formats.map((f) => f[1]))
  for (const [, name, format] of formats) {
    t.notMatch(format, /\$(request|request_uri|args|query_string|arg_\w+|http_authorization|http_cookie)\b/, `${name}: no query`)
  }
  const logs = [...conf.matchAll(/access_log\s+([^;]+);/g)].map((m) => (m[1] as string).trim().split(/\s+/))
  t.ok(logs.length > 0)
  for (const l of logs) t.ok(l[0] === 'off' || names.has(l[1] as string), `access_log ${l.join(' ')} uses a safe format`)
  // Paths pass through the map nginx applies: the tokens some carry must not survive it.
  const vars = new Map<string, (uri: string) => string>()
  for (const m of conf.matchAll(/map\s+\$uri\s+\$(\w+)\s*\{([^}]*)\}/g)) {
    const rules = [...(m[2] as string).matchAll(/^\s*(\S+)\s+(\S+);/gm)].map((r): [string, string] => [
      r[1] as string,
      r[2] as string,
    ])
    vars.set(m[1] as string, (uri) => {
      for (const [pat, to] of rules) {
        if (pat === 'default') continue
        const re = pat.startsWith('~*') ? new RegExp(pat.slice(2), 'i') : pat.startsWith('~') ? new RegExp(pat.slice(1)) : null
        if (re ? re.test(uri) : pat === uri) return to
      }
      const d = rules.find(([p]) => p === 'default')?.[1]
      return d === '$uri' ? uri : (d ?? '')
    })
  }
  const token = 'ab'.repeat(32)
  for (const [, name, format] of formats) {
    for (const path of [`/api/v1/exports/${token}.csv.gz`, `/API/v1/Exports/${token}.csv.gz`, `/convite/${token}`]) {
      const line = (format as string).replace(/\$(\w+)/g, (_, v: string) => (v === 'uri' ? path : (vars.get(v)?.(path) ?? '-')))
      t.notOk(line.includes(token), `${name}: ${path.slice(0, 24)}… is logged without its token: ${line}`)
    }
    const line = (format as string).replace(/\$(\w+)/g, (_, v: string) => vars.get(v)?.('/api/v1/players/x') ?? '-')
    t.match(line, '/api/v1/players/x', `${name}: other paths are logged`)
  }
})

t.test('deploy/init.mjs: random secrets in a private .env, a certificate, and Compose accepts them', async (t) => {
  const dirs = [mkdtempSync(join(tmpdir(), 'pombo-init-')), mkdtempSync(join(tmpdir(), 'pombo-init-'))]
  const envs: Array<Map<string, string>> = []
  for (const dir of dirs) {
    const r = await run(process.execPath, ['deploy/init.mjs', '--dir', dir, '--host', 'pombo.example'])
    t.equal(r.code, 0, r.stderr)
    const env = new Map(
      readFileSync(join(dir, '.env'), 'utf8')
        .split('\n')
        .filter((l) => /^\w+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]),
    )
    envs.push(env)
    t.equal(statSync(join(dir, '.env')).mode & 0o777, 0o600, '.env is private')
    for (const k of Object.keys(KEYS)) t.ok((env.get(k)?.length ?? 0) >= 24, `${k} written`)
    for (const v of env.values()) t.notOk(r.stdout.includes(v), 'no secret printed')
    t.match(env.get('PM_VAULT_KEY'), /^[0-9a-f]{64}$/, 'PM_VAULT_KEY: 64 hex characters')
    t.match(env.get('PM_DASHBOARD_SECRET'), /^[0-9a-f]{64}$/)
    t.equal(
      readFileSync(join(dir, 'deploy', 'secrets', 'ops_token'), 'utf8'),
      env.get('PM_OPS_TOKEN'),
      'Prometheus has the token',
    )
    const cert = new X509Certificate(readFileSync(join(dir, 'deploy', 'tls', 'cert.pem')))
    t.match(cert.subjectAltName, /DNS:pombo\.example/, 'the certificate names the host')
    t.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(join(dir, 'deploy', 'tls', 'key.pem')))), 'and its key')
    t.equal(statSync(join(dir, 'deploy', 'tls', 'key.pem')).mode & 0o777, 0o600, 'the key is private')
    // Compose accepts exactly this .env.
    const c = await compose()
    if (c) {
      const [cmd, ...pre] = c as [string, ...string[]]
      const ok = await run(cmd, [...pre, '--env-file', join(dir, '.env'), '-f', 'compose.yaml', 'config', '-q'], {
        DOCKER_HOST: 'unix:///nonexistent',
      })
      t.equal(ok.code, 0, `Compose accepts the .env: ${ok.stderr}`)
    }
  }
  for (const k of Object.keys(KEYS)) t.not(envs[0]?.get(k), envs[1]?.get(k), `${k}: random, not a default`)
  // A second run keeps what is there (a running deployment's passwords must not change under it).
  const before = readFileSync(join(dirs[0] as string, '.env'), 'utf8')
  const certBefore = readFileSync(join(dirs[0] as string, 'deploy', 'tls', 'cert.pem'), 'utf8')
  t.equal((await run(process.execPath, ['deploy/init.mjs', '--dir', dirs[0] as string])).code, 0)
  t.equal(readFileSync(join(dirs[0] as string, '.env'), 'utf8'), before, '.env kept')
  t.equal(readFileSync(join(dirs[0] as string, 'deploy', 'tls', 'cert.pem'), 'utf8'), certBefore, 'certificate kept')
})
