// The documents point at real files: every repository path written in backticks (`src/sends/writer.ts`) and every
// relative Markdown link in README.md, docs/ and bench/README.md must exist, so a reader who follows the docs
// never lands on a file that moved or never was.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'

const ROOT = join(__dirname, '..', '..')

const TOP = ['src/', 'test/', 'bench/', 'scripts/', 'proto/', 'docs/', 'packages/', 'bin/', 'examples/']

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return markdownFiles(p)
    return p.endsWith('.md') ? [p] : []
  })
}

function documents(): string[] {
  return [join(ROOT, 'README.md'), join(ROOT, 'bench', 'README.md'), ...markdownFiles(join(ROOT, 'docs'))]
}

/** Paths named in backticks: a token that starts with a top-level folder and has no placeholder or glob in it. */
function backtickedPaths(text: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    let p = m[1] as string
    if (!TOP.some((top) => p.startsWith(top))) continue
    if (/[*<>{}…$]/.test(p)) continue
    p = p.replace(/[:#].*$/, '').replace(/[.,;)]+$/, '')
    out.push(p)
  }
  return out
}

/** Relative Markdown links `[text](target)`, resolved from the document's folder; web addresses are not checked. */
function linkedPaths(text: string, doc: string): string[] {
  const out: string[] = []
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = (m[1] as string).replace(/#.*$/, '')
    if (!target || /^[a-z]+:/i.test(target)) continue
    out.push(relative(ROOT, resolve(dirname(doc), target)))
  }
  return out
}

t.test('every path the documents name exists', async (t) => {
  let checked = 0
  for (const doc of documents()) {
    const text = readFileSync(doc, 'utf8')
    const name = relative(ROOT, doc)
    for (const p of backtickedPaths(text)) {
      checked++
      t.ok(existsSync(join(ROOT, p)), `${name}: \`${p}\` exists`)
    }
    for (const p of linkedPaths(text, doc)) {
      checked++
      t.ok(existsSync(join(ROOT, p)), `${name}: link to ${p} exists`)
    }
  }
  t.ok(checked > 100, `checked ${checked} paths`)
})
