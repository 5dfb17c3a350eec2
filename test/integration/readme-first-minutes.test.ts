// The README's "First five minutes", run as a newcomer runs them (issue 33.5). The section's fenced shell commands are
// read from README.md, never copied here, and each runs through bash exactly as written, in a fresh clone's layout:
// the checkout's files as a clone would have them (tracked and not ignored: no .data, no dist, no build of the SDK),
// on a fresh machine's defaults (no DATABASE_URL, no REDIS_URL: npm start brings up its embedded Postgres and its
// private Redis, with their data in the clone). Each output is checked against what the README says of it, so a
// README that drifts from the product fails here.
//
// What is not literal, and why:
// - `npm ci` is not run: it would download every package. The layout gives what it leaves behind instead: the
//   checkout's node_modules linked entry by entry (the workspace's @pombo/sdk pointing at the clone's own
//   packages/sdk, as npm links it) and the SDK's `prepare` run, which npm ci runs for the workspace.
// - Every process runs on ports of its own (API, dashboard, gRPC, operations, and npm start's Postgres and Redis
//   through PM_LOCAL_PG_PORT / PM_LOCAL_REDIS_PORT): a developer's own npm start on the README's ports would
//   otherwise be reused, data and all. So each command sees those settings as if the reader had exported them in the
//   shell (PORT is also what `pombo simulate` finds the API by), and the README's API address 127.0.0.1:8080 is
//   read as the test's port: that address and the values the README asks the reader to fill in (`<…>`, each taken
//   from an earlier output the way a reader takes it) are the only substitutions.
// - curl's HTTP status, which `curl -s` does not print, goes to stderr through a curlrc (CURL_HOME) of the test's.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import t, { type Test as Tap } from 'tap'
import { freePort } from '../helpers/serve-child'

const ROOT = join(__dirname, '..', '..')
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
/** The README's API address; the test's own port replaces its port. */
const README_API = '127.0.0.1:8080'

t.setTimeout(420_000)

// ---------------------------------------------------------------------------------------------------------------
// The README, parsed

interface Command {
  /** As written in the README, continuation lines and comments included: what bash runs. */
  text: string
  /** The command on one line, without its comment: what is classified and searched for placeholders. */
  code: string
  /** The `# → …` note the README gives of its output, if any. */
  expect?: string
}

function section(md: string, title: string): string {
  const start = md.indexOf(`\n## ${title}\n`)
  if (start === -1) throw new Error(`README.md has no "## ${title}" section`)
  const end = md.indexOf('\n## ', start + 1)
  return md.slice(start, end === -1 ? undefined : end)
}

/** Where a line's comment starts (a `#` after whitespace, outside quotes), or -1. */
function commentAt(line: string): number {
  let quote = ''
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] as string))) return i
  }
  return -1
}

function commands(part: string): Command[] {
  const out: Command[] = []
  for (const [, body] of part.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = (body as string).replace(/\n$/, '').split('\n')
    for (let i = 0; i < lines.length; i++) {
      const first = lines[i] as string
      if (!first.trim()) continue
      if (first.trimStart().startsWith('#')) {
        const note = first.trim().match(/^# → (.*)$/)
        const last = out[out.length - 1]
        if (note && last) last.expect = note[1]
        continue
      }
      const raw = [first]
      while ((raw[raw.length - 1] as string).endsWith('\\') && i + 1 < lines.length) raw.push(lines[++i] as string)
      const parts = raw.map((l) => {
        const at = commentAt(l)
        return { code: at === -1 ? l : l.slice(0, at), comment: at === -1 ? '' : l.slice(at) }
      })
      const code = parts
        .map((p) => p.code.replace(/\\\s*$/, ''))
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim()
      const note = parts
        .map((p) => p.comment)
        .join(' ')
        .match(/# → (.*)$/)
      out.push({ text: raw.join('\n'), code, expect: note?.[1]?.trim() })
    }
  }
  return out
}

type Kind = 'install' | 'start' | 'create app' | 'register' | 'send' | 'read' | 'simulate' | 'create person'

function kindOf(code: string): Kind | undefined {
  if (/^npm ci$/.test(code)) return 'install'
  if (/^npm start$/.test(code)) return 'start'
  if (/^curl .*-X POST \S*\/api\/v1\/apps\b/.test(code)) return 'create app'
  if (/^curl .*-X POST \S*\/api\/v1\/players\b/.test(code)) return 'register'
  if (/^curl .*-X POST \S*\/api\/v1\/notifications\b/.test(code)) return 'send'
  if (/^curl -s "?http\S*\/api\/v1\/notifications\/</.test(code)) return 'read'
  if (/^npx pombo simulate /.test(code)) return 'simulate'
  if (/\| npx pombo user create /.test(code)) return 'create person'
  return undefined
}

/** The fields a `# → [status] {a, b: value, …}` note names: status, names, and the literal values given. */
function noteOf(expect: string | undefined) {
  const m = expect?.match(/^(?:(\d{3}) )?\{([^}]*)\}/)
  if (!m) return undefined
  const fields = (m[2] as string).split(',').map((f) => f.trim().split(/:\s*/))
  return {
    status: m[1] ? Number(m[1]) : undefined,
    names: fields.map(([name]) => name as string),
    values: Object.fromEntries(fields.filter(([, v]) => v && !v.startsWith('<')).map(([n, v]) => [n, JSON.parse(v as string)])),
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A fresh clone's layout

/** The checkout's files as a clone of it would hold them: tracked, or new and not ignored (so a change not yet
 *  committed is what is tested, as with every other test). */
function layOut(dir: string): Promise<void> {
  return new Promise((done, fail) =>
    execFile(
      'git',
      ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      { cwd: ROOT, maxBuffer: 64 << 20 },
      (err, out) => {
        if (err) return fail(new Error(`git ls-files in ${ROOT} failed (a clone's files are read from git): ${err.message}`))
        for (const file of out.split('\0').filter(Boolean)) {
          const from = join(ROOT, file)
          const st = lstatSync(from, { throwIfNoEntry: false })
          if (!st) continue // deleted in the working tree
          mkdirSync(dirname(join(dir, file)), { recursive: true })
          if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), join(dir, file))
          else copyFileSync(from, join(dir, file))
        }
        done()
      },
    ),
  )
}

/** node_modules as `npm ci` leaves it, without downloading: each package linked to the checkout's copy, except the
 *  workspace's own packages, which npm links into the tree they belong to (here the clone's). */
function linkModules(dir: string): void {
  const link = (rel: string) => {
    const from = join(ROOT, rel)
    const target = lstatSync(from).isSymbolicLink() ? readlinkSync(from) : null
    const inWorkspace =
      target !== null && !isAbsolute(target) && !relative(ROOT, resolve(dirname(from), target)).startsWith('node_modules')
    symlinkSync(inWorkspace ? (target as string) : from, join(dir, rel))
  }
  mkdirSync(join(dir, 'node_modules'))
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (!name.startsWith('@')) {
      link(join('node_modules', name))
      continue
    }
    mkdirSync(join(dir, 'node_modules', name))
    for (const sub of readdirSync(join(ROOT, 'node_modules', name))) link(join('node_modules', name, sub))
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

/** Processes whose working directory is inside `dir`: everything this test started there (npm start, Pombo, its
 *  worker, Postgres and its backends, Redis, a command), and nothing else. */
function processesIn(dir: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`)
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(entry))
    } catch {
      // gone, or not ours to read
    }
  }
  return pids
}

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true)
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), ms)
    child.once('exit', () => {
      clearTimeout(timer)
      done(true)
    })
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Ran {
  code: number | null
  out: string
  err: string
  /** The HTTP status curl wrote (through the test's curlrc), if it ran one. */
  status?: number
}

t.test("the README's first five minutes, as written, on a fresh clone", async (t) => {
  const started = Date.now()
  const part = section(README, 'First five minutes')
  const list = commands(part)
  const kinds = list.map((c) => kindOf(c.code))
  t.same(
    list.filter((_, i) => kinds[i] === undefined).map((c) => c.code),
    [],
    'every command of the section is one this test knows how to check (a new one needs its check here)',
  )
  for (const kind of ['install', 'start', 'create app', 'register', 'send', 'read', 'simulate'] as Kind[]) {
    t.ok(kinds.includes(kind), `the section shows the ${kind} command`)
  }
  if (kinds.includes(undefined)) return

  const dir = mkdtempSync(join(tmpdir(), 'pombo-readme-'))
  // mkdtemp makes it 0700; as root, the embedded Postgres runs as the postgres user, which must reach its data.
  chmodSync(dir, 0o755)
  const children = new Set<ChildProcess>()
  let start: ChildProcess | undefined
  t.teardown(async () => {
    if (start && start.exitCode === null && start.signalCode === null) {
      killGroup(start, 'SIGINT')
      if (!(await exited(start, 40_000))) killGroup(start, 'SIGKILL')
    }
    for (const child of children) if (child.exitCode === null && child.signalCode === null) killGroup(child, 'SIGKILL')
    for (let round = 0; round < 20; round++) {
      const left = processesIn(dir)
      if (!left.length) break
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
      await sleep(250)
    }
    rmSync(dir, { recursive: true, force: true })
  })

  const ports = {
    PORT: await freePort(),
    PM_DASHBOARD_PORT: await freePort(),
    PM_GRPC_PORT: await freePort(),
    PM_OPS_PORT: await freePort(),
    PM_LOCAL_PG_PORT: await freePort(),
    PM_LOCAL_REDIS_PORT: await freePort(),
  }
  const curlHome = join(dir, '.curl-home')
  // A fresh machine's shell: none of the test runner's settings (its services, its key, tap's and npm's own).
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(PM_|TAP|_TAPJS|npm_|DATABASE_URL$|REDIS_URL$|NODE_OPTIONS$|NODE_ENV$|NODE_V8_COVERAGE$|CURL_HOME$)/.test(k)) {
      env[k] = v
    }
  }
  for (const [k, v] of Object.entries(ports)) env[k] = String(v)
  env.CURL_HOME = curlHome

  const clone = join(dir, 'pombo')
  mkdirSync(clone)
  await layOut(clone)
  t.notOk(existsSync(join(clone, '.data')), 'the clone has no .data yet')
  t.notOk(existsSync(join(clone, 'packages', 'sdk', 'dist')), 'nor a build of the SDK')
  mkdirSync(curlHome)
  writeFileSync(join(curlHome, '.curlrc'), 'write-out = "%{stderr}HTTP %{http_code}\\n"\n')

  /** Runs one command through bash in the clone; resolves when it exits. */
  const run = (text: string, ms: number): Promise<Ran> =>
    new Promise((done) => {
      const child = spawn('bash', ['-c', text], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      children.add(child)
      let out = ''
      let err = ''
      child.stdout?.on('data', (c) => {
        out += c
      })
      child.stderr?.on('data', (c) => {
        err += c
      })
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), ms)
      child.on('close', (code) => {
        clearTimeout(timer)
        children.delete(child)
        const status = err.match(/^HTTP (\d{3})$/m)
        done({ code, out, err, status: status ? Number(status[1]) : undefined })
      })
    })

  const values = new Map<string, string>()
  /** A value the README asks for later, as the reader copies it from an output (nothing when the output lacks it). */
  const copy = (name: string, value: unknown) => {
    if (typeof value === 'string' && value) values.set(name, value)
  }
  /** The command as the reader types it: the values the README asks for filled in, the API on the test's port. */
  const filled = (c: Command): string => {
    const missing = [...c.code.matchAll(/<([a-z][a-z_ ]*)>/g)].map((m) => m[1] as string).filter((n) => !values.has(n))
    if (missing.length) throw new Error(`the README asks for ${missing.map((n) => `<${n}>`).join(', ')} in: ${c.code}`)
    let text = c.text.replaceAll(README_API, `127.0.0.1:${ports.PORT}`)
    for (const [name, value] of values) text = text.replaceAll(`<${name}>`, value)
    return text
  }
  const json = (t: Tap, r: Ran, what: string): Record<string, unknown> => {
    try {
      return JSON.parse(r.out)
    } catch {
      t.fail(`${what} printed JSON`, { out: r.out, err: r.err })
      return {}
    }
  }
  /** Checks an answer against the README's `# → …` note: its status, the fields it names, the values it gives. */
  const asNoted = (t: Tap, c: Command, r: Ran, body: Record<string, unknown>) => {
    const note = noteOf(c.expect)
    t.ok(r.status && r.status >= 200 && r.status < 300, `answered ${r.status}`)
    if (!note) return
    if (note.status) t.equal(r.status, note.status, `the status the README says (${note.status})`)
    for (const name of note.names) t.ok(name in body, `has ${name}, as the README says`)
    t.match(body, note.values, 'the values the README gives')
  }

  let startOut = ''
  let startClosed: Promise<unknown> = Promise.resolve()
  let banner: Record<string, string> = {}
  for (const c of list) {
    const kind = kindOf(c.code) as Kind
    if (kind === 'install') {
      // npm ci's result, without the download (see the top of this file): the packages, then the workspace's
      // `prepare`, which builds the SDK that `pombo simulate` runs.
      linkModules(clone)
      const prepared = await run('npm run prepare --workspace packages/sdk', 120_000)
      t.equal(prepared.code, 0, "the SDK's prepare (npm ci runs it) succeeded", { err: prepared.err })
      t.ok(existsSync(join(clone, 'packages', 'sdk', 'dist', 'pombo.min.js')), 'and built the SDK')
      continue
    }
    if (kind === 'start') {
      // In the background, as in its own terminal, and in its own process group, so Ctrl-C can be sent to it.
      start = spawn('bash', ['-c', filled(c)], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      startClosed = new Promise((r) => start?.once('close', r))
      start.stdout?.on('data', (chunk) => {
        startOut += chunk
      })
      start.stderr?.on('data', (chunk) => {
        startOut += chunk
      })
      const line = '-'.repeat(78)
      const deadline = Date.now() + 180_000
      let shown: RegExpMatchArray | null = null
      while (!shown && Date.now() < deadline && start.exitCode === null) {
        shown = startOut.match(new RegExp(`${line}\\n( Pombo is running\\.[\\s\\S]*?)\\n${line}\\n`))
        if (!shown) await sleep(200)
      }
      if (!t.ok(shown, 'npm start printed its banner', { out: startOut.slice(-4000) })) return
      await t.test('npm start: the banner', async (t) => {
        banner = checkBanner(t, (shown as RegExpMatchArray)[1] as string, ports)
      })
      copy('platform key printed by npm start', banner.key)
      continue
    }
    await t.test(`${kind}: ${c.code.slice(0, 90)}`, async (t) => {
      if (kind === 'create app') {
        const text = filled(c)
        t.equal(
          text.replace(/\\\n/g, ' ').replace(/\s+/g, ' ').trim(),
          (banner.curl as string).replace(/\s+/g, ' '),
          "the README's curl is the one npm start printed",
        )
        const r = await run(text, 30_000)
        const app = json(t, r, 'creating the app')
        asNoted(t, c, r, app)
        t.match(app, { id: /^[0-9a-f-]{36}$/, nome: 'Meu app', api_key: /^pm_live_/ })
        copy('id', app.id)
        copy('api_key', app.api_key)
      } else if (kind === 'register') {
        // The reader's own device's token; any string is a token to the service until a provider says otherwise.
        copy('push token', `readme-device-${Date.now()}`)
        const r = await run(filled(c), 30_000)
        const player = json(t, r, 'the registration')
        asNoted(t, c, r, player)
        t.match(player, { success: true, id: /^[0-9a-f-]{36}$/ })
        copy('player_id', player.id)
      } else if (kind === 'send') {
        const r = await run(filled(c), 30_000)
        const send = json(t, r, 'the send')
        asNoted(t, c, r, send)
        t.match(send, { id: /^[0-9a-f-]{36}$/, recipients: 1 })
        copy('send id', send.id)
      } else if (kind === 'read') {
        // "The send answers at once; delivery follows": the reader runs the read again until it has closed.
        const problem = part.match(/`pm_problema: "([^"]+)"`/)?.[1]
        t.ok(problem, 'the README says how the send closes without a credential')
        let read: Record<string, unknown> = {}
        for (const until = Date.now() + 60_000; Date.now() < until; await sleep(500)) {
          const r = await run(filled(c), 30_000)
          t.equal(r.status, 200, 'the read answers 200')
          read = json(t, r, 'the read')
          if (read.remaining === 0 || r.status !== 200) break
        }
        t.match(
          read,
          { id: values.get('send id'), successful: 0, errored: 1, remaining: 0, pm_problema: problem },
          'closed with the device errored and the problem the README names',
        )
      } else if (kind === 'simulate') {
        const devices = Number(c.code.match(/--devices (\d+)/)?.[1])
        const r = await run(filled(c), 300_000)
        t.equal(r.code, 0, 'pombo simulate succeeded', { err: r.err.slice(-3000) })
        checkSimulate(t, r.out, devices)
        // The README's note names what the report shows.
        for (const item of (c.expect ?? '').split(/,\s*/).filter(Boolean)) {
          const shown = item === 'latency percentiles' ? /p50 \d+ ms · p90 \d+ ms · p99 \d+ ms/ : new RegExp(`^${item}\\b`, 'm')
          t.match(r.out, shown, `the report shows ${item}, as the README says`)
        }
      } else if (kind === 'create person') {
        const r = await run(filled(c), 60_000)
        t.equal(r.code, 0, 'the person was created', { err: r.err })
        t.match(json(t, r, 'creating a person'), { id: /^[0-9a-f-]{36}$/, email: c.code.match(/--email (\S+)/)?.[1] })
      }
    })
  }

  // What npm start says it did on a first run.
  t.match(startOut, /Postgres: first run, creating a cluster in \.data\/pg/, 'npm start created the embedded cluster')
  t.match(startOut, new RegExp(`Redis: started redis-server on 127\\.0\\.0\\.1:${ports.PM_LOCAL_REDIS_PORT}`))
  t.ok(existsSync(join(clone, '.data', 'pg', 'PG_VERSION')), 'its data is in ./.data/pg')
  t.equal(statSync(join(clone, '.data', 'secrets.json')).mode & 0o777, 0o600, './.data/secrets.json is mode 0600')
  t.match(JSON.parse(readFileSync(join(clone, '.data', 'secrets.json'), 'utf8')), {
    PM_PLATFORM_KEY: banner.key,
    PM_VAULT_KEY: /^[0-9a-f]{64}$/,
  })
  t.ok(existsSync(join(clone, '.data', 'local-env.json')), '.data/local-env.json was written')

  // What runs before Ctrl-C, by the pids the logs name: each is found working in the clone, so "none is left" below
  // looks where they are.
  const pids = {
    Postgres: Number(startOut.match(/Postgres: started on \S+ \(pid (\d+)/)?.[1]),
    Redis: Number(startOut.match(/Redis: started redis-server on \S+ \(pid (\d+)/)?.[1]),
    'the delivery worker': Number(startOut.match(/"pid":(\d+),"msg":"delivery worker process started"/)?.[1]),
  }
  const running = processesIn(dir)
  for (const [name, pid] of Object.entries(pids)) t.ok(running.includes(pid), `${name} runs (pid ${pid}), in the clone`)
  // A first start compiles the clone's src/ and runs the build: the worker is a process of dist/src/main.js.
  t.match(startOut, /compiling src\/ into dist\/[^\n]*\n[\s\S]*?compiled in [\d.]+ s/, 'npm start compiled src/ first')
  t.match(
    readFileSync(`/proc/${pids['the delivery worker']}/cmdline`, 'utf8'),
    join(clone, 'dist', 'src', 'main.js'),
    'and runs it',
  )

  // "Ctrl-C stops everything it started": the terminal's interrupt goes to npm start's whole process group. npm
  // waits for its script, then ends by the same signal (what a shell shows as 130), whatever the script's own exit:
  // a clean stop is read from what stopped and how.
  const npmStart = start as ChildProcess
  killGroup(npmStart, 'SIGINT')
  t.ok(await exited(npmStart, 60_000), 'npm start stopped on Ctrl-C', { out: startOut.slice(-3000) })
  t.ok(npmStart.exitCode === 0 || npmStart.signalCode === 'SIGINT', 'as a Ctrl-C ends a command', {
    code: npmStart.exitCode,
    signal: npmStart.signalCode,
  })
  t.same(processesIn(dir), [], 'no process it started outlives it')
  for (const [name, pid] of Object.entries(pids)) t.notOk(alive(pid), `${name} is gone`)
  await startClosed
  t.match(startOut, /stopping: finishing in-flight requests/, 'Pombo drained')
  t.match(startOut, /stopping Redis[\s\S]*stopping Postgres/, 'then npm start stopped Redis, then Postgres')
  t.notMatch(
    startOut,
    /second signal|drain deadline passed|stop failed|did not stop within|killing/,
    'nothing was cut short or killed',
  )
  t.match(readFileSync(join(clone, '.data', 'pg.log'), 'utf8'), /database system is shut down/, 'Postgres shut down cleanly')
  t.comment(`the first five minutes took ${((Date.now() - started) / 1000).toFixed(1)} s`)
})

function checkBanner(t: Tap, text: string, ports: Record<string, number>): Record<string, string> {
  const field = (name: string) => text.match(new RegExp(`^ {3}${name} +(\\S.*)$`, 'm'))?.[1]
  const api = field('API')
  const key = field('Platform key') ?? ''
  t.equal(api, `http://127.0.0.1:${ports.PORT}`, 'names the API')
  t.equal(field('Dashboard'), `http://127.0.0.1:${ports.PM_DASHBOARD_PORT}`, 'names the dashboard')
  t.match(key, /^pm_platform_[0-9a-f]{48}$/, 'shows the platform key')
  t.match(text, /\(generated now, kept in \.data\/secrets\.json/, 'made on this first run')
  t.equal(field('Postgres'), `postgres://postgres:***@127.0.0.1:${ports.PM_LOCAL_PG_PORT}/pombo`, 'its own Postgres')
  t.equal(field('Redis'), `redis://127.0.0.1:${ports.PM_LOCAL_REDIS_PORT}`, 'its own Redis')
  t.match(text, /Ctrl-C stops Pombo, then Redis and Postgres\./, 'it owns both')
  const curl = text.match(/^ {3}(curl .*\/api\/v1\/apps .*)$/m)?.[1]
  t.ok(curl, 'shows a curl that creates an app')
  return { api: api ?? '', key, curl: curl ?? '' }
}

function checkSimulate(t: Tap, out: string, devices: number): void {
  const line = (label: string) => out.match(new RegExp(`^${label} {2,}(.*)$`, 'm'))?.[1] ?? ''
  const n = (s: string, re: RegExp) => (s.match(re) ?? []).slice(1).map(Number)
  t.ok(devices > 0, 'the README says how many devices')
  t.same(n(line('devices registered'), /^(\d+) of (\d+)$/), [devices, devices], 'every device registered')
  const [sends, recipients] = n(line('sends'), /^(\d+) \((\d+) recipients\)$/)
  t.ok((sends as number) > 0, `the run sent (${sends})`)
  t.equal(recipients, (sends as number) * devices, 'each send to every device')
  t.same(n(line('pushes received'), /^(\d+)/), [recipients], 'every push received')
  const [receipts] = n(line('receipts sent'), /^(\d+)/)
  t.ok((receipts as number) > 0, `receipts sent (${receipts})`)
  t.same(n(line('receipts counted by the service'), /^(\d+) of (\d+)/), [receipts, receipts], 'every receipt counted once')
  const [clicks, counted] = n(line('clicks sent / counted'), /^(\d+) \/ (\d+)$/)
  t.equal(clicks, counted, `every click counted (${clicks})`)
  for (const leg of [
    'send accepted → provider accepted',
    'provider accepted → receipt counted',
    'send accepted → receipt counted',
  ]) {
    const [p50, p90, p99, max, count] = n(line(leg), /^p50 (\d+) ms · p90 (\d+) ms · p99 (\d+) ms · max (\d+) ms \((\d+)\)$/)
    t.ok(
      (count as number) > 0 &&
        (p50 as number) <= (p90 as number) &&
        (p90 as number) <= (p99 as number) &&
        (p99 as number) <= (max as number),
      `${leg}: latency percentiles (p50 ${p50}, p90 ${p90}, p99 ${p99} ms)`,
    )
  }
  t.match(line("the run's key"), /^kid \w+, revoked$/, "the run's own key was revoked")
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal)
  } catch {
    // already gone
  }
}
