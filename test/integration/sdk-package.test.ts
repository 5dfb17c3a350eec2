// @pombo/sdk as someone installs it: `npm pack` from a copy of the package without dist/ (its prepack builds it, with
// the repository's build tools), the tarball's contents and manifest, then `npm install <tarball>` offline in an
// empty folder (the package has no runtime dependencies), and there: both ES entries import in Node, the script
// runs and defines the global `Pombo`, and a TypeScript consumer type-checks against the shipped declarations
// through the exports map.
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..')
const SDK = join(ROOT, 'packages', 'sdk')
const NPM_ENV = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }

t.setTimeout(180_000)

t.test('npm pack builds the package; the tarball installs offline in a clean folder and imports', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'pombo-sdk-pack-'))
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }))

  // A clean copy: what the repository holds for the package (no dist/), with the repository's tools beside it.
  const pkg = join(tmp, 'sdk')
  cpSync(SDK, pkg, { recursive: true, filter: (src) => !/[/\\](dist|node_modules)$/.test(src) })
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir')
  const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: pkg, env: NPM_ENV, maxBuffer: 1 << 24 })
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  const files = (info?.files ?? []).map((f) => f.path).sort()
  for (const f of [
    'LICENSE',
    'README.md',
    'package.json',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/sw.js',
    'dist/sw.d.ts',
    'dist/pombo.min.js',
  ])
    t.ok(files.includes(f), `the tarball has ${f} (prepack built dist/)`)
  t.notOk(
    files.some((f) => f.startsWith('src/') || f.startsWith('scripts/') || f.startsWith('dist/browser.')),
    'no sources, build scripts or the script bundle entry',
  )

  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'))
  t.match(manifest, {
    name: '@pombo/sdk',
    type: 'module',
    types: './dist/index.d.ts',
    license: 'MIT',
    engines: { node: '>=20' },
    exports: {
      '.': { types: './dist/index.d.ts', import: './dist/index.js' },
      './sw': { types: './dist/sw.d.ts', import: './dist/sw.js' },
      './pombo.min.js': './dist/pombo.min.js',
    },
    scripts: { prepare: /build\.mjs/, prepack: /build\.mjs --force/ },
  })
  t.notOk(manifest.dependencies, 'no runtime dependencies')
  t.equal(readFileSync(join(pkg, 'LICENSE'), 'utf8'), readFileSync(join(ROOT, 'LICENSE'), 'utf8'), 'the licence is the project’s')

  // A clean folder: install the tarball with no registry.
  const app = join(tmp, 'app')
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  await run('npm', ['install', '--offline', join(tmp, info?.filename ?? '')], { cwd: app, env: NPM_ENV })

  writeFileSync(
    join(app, 'check.mjs'),
    `import { Pombo, SDK_VERSION, describeNotification, IndexedDbStorage, MemoryStorage } from '@pombo/sdk'
import * as sw from '@pombo/sdk/sw'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import vm from 'node:vm'
const script = readFileSync(createRequire(import.meta.url).resolve('@pombo/sdk/pombo.min.js'), 'utf8')
const g = {}
vm.runInNewContext(script, Object.assign(g, { globalThis: g }))
const push = { pm_msg_id: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', pm_rcpt: 'p', pmx_title: 'T', pmx_body: 'B' }
console.log(JSON.stringify({
  version: SDK_VERSION,
  init: typeof Pombo.init,
  storage: typeof IndexedDbStorage + typeof MemoryStorage,
  described: describeNotification(push)?.title,
  sw: typeof sw.configure + typeof sw.installServiceWorker,
  global: typeof g.Pombo?.init + typeof g.Pombo?.configureWorker + typeof g.Pombo?.describeNotification,
}))
`,
  )
  const out = JSON.parse((await run(process.execPath, ['check.mjs'], { cwd: app })).stdout)
  t.same(out, {
    version: manifest.version,
    init: 'function',
    storage: 'functionfunction',
    described: 'T',
    sw: 'functionfunction',
    global: 'functionfunctionfunction',
  })

  // A TypeScript consumer resolves the declarations through the exports map.
  writeFileSync(
    join(app, 'check.ts'),
    `import { Pombo, describeNotification, type NotificationDescription, type PomboOptions } from '@pombo/sdk'
import { configure, type WorkerOptions } from '@pombo/sdk/sw'
const o: PomboOptions = { baseUrl: 'https://x', appId: 'a', appVersion: '1', deviceType: 5, getToken: () => null }
const d: NotificationDescription | null = describeNotification({})
const w: WorkerOptions = { defaultTitle: 'x', display: (n) => void n.title }
export const used = [Pombo.init, o, d, w, configure]
`,
  )
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022']
  await t.resolves(run(process.execPath, [tsc, ...args, '--lib', 'es2022,dom', 'check.ts'], { cwd: app }), 'types check')
})
