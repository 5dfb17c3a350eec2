// docs/naming.md's rule, checked: no Portuguese name inside src/ (a declaration never; an object key only when it is
// a wire word in a wire-shaped object), SQL columns Portuguese only where naming.md lists them as wire fields, and the
// page's table in step with the code.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { migrations } from '../../src/db/migrate'
import {
  columnBreaches,
  listedColumns,
  NAMING_DOC,
  portugueseWords,
  scanSource,
  scanTree,
  schemaColumns,
  tsFiles,
  wireWords,
  wordTable,
} from '../helpers/naming'

const ROOT = join(__dirname, '..', '..')
const md = readFileSync(join(ROOT, NAMING_DOC), 'utf8')
const wire = wireWords()

t.test('no name inside src/ is Portuguese, except a wire key in a wire-shaped object', async (t) => {
  const found = scanTree(join(ROOT, 'src'), wire).map((b) => `${b.file}:${b.line} ${b.kind} ${b.name}`)
  t.same(found, [], 'each is renamed to English, or is a wire word missing from the documents (say it in naming.md)')
})

t.test('the scan names declarations and code-shaped keys, and leaves the wire alone', async (t) => {
  const text = `
    const nome = body.nome
    function toEvento(e: number) { return e }
    interface AppRecord { orgId: string; ratePorMin: number; nome: string }
    const reply = { id: 'x', nome: 'Loja', rate_por_min: 5, criado_em: 'agora' }
    const quoted = { 'criadoEm': 1 }
    log.warn({ evento: 'webhook_falhou', destino: 'x' })
    const text = 'inapp_ativo: o campo em português'
    class Stream { #assinar(): void {} }
  `
  const names = scanSource('x.ts', text, wire).map((b) => `${b.kind} ${b.name}`)
  t.same(names, [
    'VariableDeclaration nome',
    'FunctionDeclaration toEvento',
    'PropertySignature ratePorMin',
    'PropertySignature nome',
    'MethodDeclaration #assinar',
  ])
  t.same(portugueseWords('INAPP_CAP_HORAS_DB_MAX'), ['horas'], 'SCREAMING_SNAKE is split too')
  t.same(portugueseWords('inappCapTotalDefault'), [], 'English words are not')
})

t.test('SQL columns: Portuguese only where a column stores the wire field of that name, as naming.md lists', async (t) => {
  const all = migrations()
  t.same(columnBreaches(schemaColumns(all.map((m) => m.sql)), listedColumns(md), wire), [])
  // Before 0019 the rule names the nine columns it renamed: the check reads the schema the migrations build. (And the
  // listed columns of a table made since, audit_log of 0031, as missing.)
  const before = columnBreaches(schemaColumns(all.filter((m) => m.version < '0019').map((m) => m.sql)), listedColumns(md), wire)
  t.same(before.map((b) => b.split(':')[0]).sort(), [
    'apps.confirm_modo',
    'audit_log.acao',
    'audit_log.detalhes',
    'audit_log.em',
    'audit_log.quem',
    'dashboard_users.operador',
    'dashboard_users.senha_hash',
    'inapp_campaigns.definicao',
    'inapp_campaigns.usa_config_notif',
    'inapp_events.recebido_em',
    'inapp_reactivations.em',
    'inapp_served.em',
    'webhook_attempts.entrega_id',
  ])
})

t.test("naming.md's table: each wire word is the documents', each code name is in src/", async (t) => {
  const documented = wireWords(ROOT, { ownPage: false })
  const names = new Set<string>()
  for (const f of tsFiles(join(ROOT, 'src'))) {
    const sf = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true)
    const visit = (n: ts.Node): void => {
      if (ts.isIdentifier(n)) names.add(n.text)
      ts.forEachChild(n, visit)
    }
    visit(sf)
  }
  const table = wordTable(md)
  t.ok(table.length >= 30, 'the table is there')
  for (const { wire: w, code } of table) {
    for (const word of w) t.ok(documented.has(word) || /^[A-Z]/.test(word) || word.startsWith('--'), `wire word ${word}`)
    t.ok(code.length > 0, `${w.join(', ')} has a code name`)
    for (const name of code.filter((c) => /^[A-Za-z_]\w*$/.test(c)))
      t.ok(names.has(name), `${name} (for ${w.join(', ')}) is in src/`)
  }
})
