// docs/configuration.md lists exactly the environment variables the code reads: a variable read in src/ and not
// documented, or documented and not read, fails here.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../src/core/config'

const ROOT = join(__dirname, '..', '..')

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return tsFiles(p)
    return p.endsWith('.ts') ? [p] : []
  })
}

/** Variables the code reads: by name in config.ts (`int(env, 'X', …)`, `env.X`, `env['X']`), and `process.env.X`
 *  anywhere in src/ (a module that reads the environment behind config.ts's back is caught here too). */
function readByCode(): Map<string, string> {
  const found = new Map<string, string>()
  for (const file of tsFiles(join(ROOT, 'src'))) {
    const src = readFileSync(file, 'utf8')
    const where = relative(ROOT, file)
    const patterns = [/process\.env\.([A-Z][A-Z0-9_]*)/g, /process\.env\[['"]([A-Z][A-Z0-9_]*)['"]\]/g]
    if (where === join('src', 'core', 'config.ts')) {
      patterns.push(
        /\(\s*env\s*,\s*['"]([A-Z][A-Z0-9_]*)['"]/g,
        /\benv\.([A-Z][A-Z0-9_]*)/g,
        /\benv\[['"]([A-Z][A-Z0-9_]*)['"]\]/g,
      )
    }
    for (const re of patterns) for (const m of src.matchAll(re)) if (!found.has(m[1] as string)) found.set(m[1] as string, where)
  }
  return found
}

function documented(): string[] {
  const page = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8')
  return [...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1] as string)
}

t.test('docs/configuration.md lists exactly the variables src/ reads', async (t) => {
  const code = readByCode()
  const doc = documented()
  t.ok(code.size > 40, `found the code's variables (${code.size})`)
  t.same(doc.length, new Set(doc).size, 'no variable is listed twice')
  const missing = [...code.keys()].filter((v) => !doc.includes(v)).map((v) => `${v} (read in ${code.get(v)})`)
  const stale = doc.filter((v) => !code.has(v))
  t.same(missing, [], 'read by the code but not documented')
  t.same(stale, [], 'documented but not read by the code')
})

t.test('every documented variable really changes the configuration', async (t) => {
  // A name the parser found but loadConfig ignores would be a lie of this page too: setting a variable to a valid
  // non-default value must change what loadConfig returns. Values per kind; a refusal (ConfigError) also counts.
  const base = JSON.stringify(loadConfig({}), replacer)
  for (const name of documented()) {
    let changed = false
    for (const value of ['1', '7', '3000', 'errors', 'pro', 'x_y', 'https://example.com', '10.0.0.1', 'a'.repeat(64), '1,2']) {
      try {
        if (JSON.stringify(loadConfig({ [name]: value }), replacer) !== base) changed = true
      } catch {
        changed = true
      }
      if (changed) break
    }
    t.ok(changed, `${name} is read by loadConfig`)
  }
})

function replacer(_k: string, v: unknown): unknown {
  return Buffer.isBuffer(v) ? v.toString('hex') : v
}
