// The naming rule of docs/naming.md as code: which words are Portuguese, which are the wire's, and the scans that
// find a Portuguese name inside the code (src/ identifiers, SQL columns). Read by test/unit/naming.test.ts and by the
// migration test, which checks the live schema with the same rule.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

const ROOT = join(__dirname, '..', '..')

/**
 * Portuguese words that can only be Portuguese in a name (none is an English word a name could mean: no `total`,
 * `via`, `modal`, `url`, `data`, `mau` (monthly active users), `cap`).
 */
export const PORTUGUESE = new Set(
  `abrir acao aceitas aceito acima agora alcancaveis alcance alinhamento altura alvo anterior aplicadas apos assinar
  assinatura ate ativa ativas ativo ativos atraso atual atualizada atualizado bateria bloco blocos bloqueados botao
  busca caminho campanha campanhas campo canal capaz causa chave chaves clique cliques cobertura como comparador
  conexoes confirmar conta contadores conteudo convite cor corpo corrigir criada criado dados definicao dependencia
  desativado desconhecidas desde desinscritos destino destinos detalhes dia dias diferente disparos dispositivo
  dispositivos duplicado duplicar duracao em encerrada encerrado encerrar entrega entregues enviados envio envios erro
  espacador estado estados estava estilo estimado evento eventos existe expira fabricante falhas fechados fechar
  fechou fila fonte formato fundo funil gatilho gratis habilita horas icone igual imagem impressao impressoes
  inatividade inicia injetados instalacao irrestrita italico limite linhas lote maior margens medido menor mensagem
  mes metodo metricas modo modos mostrar motivo nome nova novo nunca ocorrencia onde operacao operador origem origens
  pacote padrao pais para pausada pausado pausar pediu pelo pendente pendentes permissoes peso plano plataforma por
  preco prioridade problema problemas prova provados proximo publicado publicar quando que quem raio rascunho
  reativados recebido recebidos recibo regra regras removida reportada resultado resultados revogadas rota secundario
  segmento segmentos segredo segundos sem senha servico servidor servidos sessao sessoes seta simulacao simultaneos
  sublinhado tamanho tardio tentativa tentativas termina teste texto tipo titulo todos totais transporte usa validade
  validos valor versao`.split(/\s+/),
)

/** A name's words: camelCase, PascalCase, snake_case and SCREAMING_SNAKE split and lowered. */
export function words(name: string): string[] {
  return name
    .replace(/^#/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .split(/[_$]+/)
    .filter(Boolean)
}

export const portugueseWords = (name: string): string[] => words(name).filter((w) => PORTUGUESE.has(w))

/** The documents that say the wire: the spec, the operator contract and the error catalogue (its `explain` fields). */
const WIRE_DOCS = ['docs/spec/push-delivery-spec.md', 'docs/spec/contract.md', 'docs/errors.md']
export const NAMING_DOC = 'docs/naming.md'

const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/
const backticked = (text: string): string[] => [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '')

/** The text between `<!-- name:start -->` and `<!-- name:end -->` of a page. */
export function section(md: string, name: string): string {
  const m = new RegExp(`<!-- ${name}:start -->([\\s\\S]*?)<!-- ${name}:end -->`).exec(md)
  if (!m) throw new Error(`${NAMING_DOC}: no ${name} section`)
  return m[1] ?? ''
}

/** The rows of a Markdown table: its cells, header and rule left out. */
function rows(table: string): string[][] {
  return table
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2)
    .map((l) => l.split('|').slice(1, -1))
}

/** naming.md's table: wire words (left) and the code names they become (right). */
export function wordTable(md: string): Array<{ wire: string[]; code: string[] }> {
  return rows(section(md, 'wire-words')).map(([w, c]) => ({ wire: backticked(w ?? ''), code: backticked(c ?? '') }))
}

/** naming.md's Portuguese columns: table → columns. */
export function listedColumns(md: string): Map<string, Set<string>> {
  return new Map(
    rows(section(md, 'columns')).map(([tb, cols]) => [backticked(tb ?? '')[0] ?? '', new Set(backticked(cols ?? ''))]),
  )
}

/**
 * Every wire word: lower-case snake tokens inside backticks in the spec, the contract and the error catalogue; the
 * OpenAPI's keys, parameter names and enum values; the proto's names; naming.md's wire words and own words (unless
 * `ownPage` is false: what the other documents name).
 */
export function wireWords(root = ROOT, o: { ownPage?: boolean } = {}): Set<string> {
  const out = new Set<string>()
  const add = (text: string) => {
    for (const tok of text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) if (SNAKE.test(tok)) out.add(tok)
  }
  for (const doc of WIRE_DOCS) for (const b of backticked(readFileSync(join(root, doc), 'utf8'))) add(b)
  for (const line of readFileSync(join(root, 'docs/openapi.yaml'), 'utf8').split('\n')) {
    const key = /^\s*(?:- )?['"]?([A-Za-z_][\w]*)['"]?:/.exec(line)
    if (key) add(key[1] ?? '')
    const value = /^\s*(?:name:|-)\s*['"]?([A-Za-z_][\w]*)['"]?\s*$/.exec(line)
    if (value) add(value[1] ?? '')
    const inline = /^\s*enum:\s*\[(.*)\]/.exec(line)
    if (inline) add(inline[1] ?? '')
  }
  // The proto's names, its messages and method too (`Assinar` is a key of the server's handlers).
  const proto = readFileSync(join(root, 'proto/pombo/confirmacoes/v1/confirmacoes.proto'), 'utf8').replace(/\/\/.*$/gm, '')
  for (const tok of proto.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) out.add(tok)
  if (o.ownPage === false) return out
  const md = readFileSync(join(root, NAMING_DOC), 'utf8')
  for (const r of wordTable(md)) for (const w of r.wire) add(w)
  for (const b of backticked(section(md, 'own-words'))) add(b)
  return out
}

/**
 * The columns of each table as the migrations leave them, read from their text: CREATE TABLE (partitions left out:
 * their columns are their table's), ADD/DROP/RENAME COLUMN, RENAME TO, DROP TABLE. Enough for Pombo's migrations; a
 * statement it does not understand that changes columns would make the live check in
 * test/integration/migrations.test.ts disagree.
 */
export function schemaColumns(sqls: string[]): Map<string, string[]> {
  const tables = new Map<string, string[]>()
  const id = '([a-z_][a-z0-9_]*)'
  const re = (pattern: string) => new RegExp(pattern, 'i')
  for (const raw of sqls) {
    const sql = raw.replace(/--[^\n]*/g, '').replace(/\$\$[\s\S]*?\$\$/g, "''")
    for (const stmt of sql.split(';')) {
      const s = stmt.trim().replace(/\s+/g, ' ')
      const partition = re(`^CREATE TABLE (?:IF NOT EXISTS )?${id} PARTITION OF ${id}`).exec(s)
      const create = re(`^CREATE TABLE (?:IF NOT EXISTS )?${id} \\((.*)\\)`).exec(s)
      const alter = re(`^ALTER TABLE (?:IF EXISTS )?${id} (.*)$`).exec(s)
      const drop = re(`^DROP TABLE (?:IF EXISTS )?${id}`).exec(s)
      // A partition has its table's columns by construction: only the table is listed and checked.
      if (partition) tables.delete(partition[1] as string)
      else if (create) tables.set(create[1] as string, topLevel(create[2] as string).flatMap(columnOf))
      else if (drop) tables.delete(drop[1] as string)
      else if (alter) {
        const table = alter[1] as string
        const cols = tables.get(table) ?? []
        for (const action of topLevel(alter[2] as string).map((x) => x.trim())) {
          const add = re(`^ADD COLUMN (?:IF NOT EXISTS )?${id}`).exec(action)?.[1]
          const dropped = re(`^DROP COLUMN (?:IF EXISTS )?${id}`).exec(action)?.[1]
          const renamed = re(`^RENAME COLUMN ${id} TO ${id}`).exec(action)
          const moved = re(`^RENAME TO ${id}`).exec(action)?.[1]
          if (add && !cols.includes(add)) cols.push(add)
          if (dropped && cols.includes(dropped)) cols.splice(cols.indexOf(dropped), 1)
          if (renamed) cols[cols.indexOf(renamed[1] as string)] = renamed[2] as string
          if (moved) {
            tables.delete(table)
            tables.set(moved, cols)
          }
        }
      }
    }
  }
  return tables
}

/** A CREATE TABLE item's column name; none for a table constraint. */
function columnOf(item: string): string[] {
  const first = /^[a-z_][a-z0-9_]*/i.exec(item.trim())?.[0] ?? ''
  return !first || /^(PRIMARY|UNIQUE|CHECK|FOREIGN|CONSTRAINT|EXCLUDE|LIKE)$/i.test(first) ? [] : [first]
}

/** A list split at its top-level commas (not those inside parentheses). */
function topLevel(list: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < list.length; i++) {
    const c = list[i]
    if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === ',' && depth === 0) {
      out.push(list.slice(start, i))
      start = i + 1
    }
  }
  out.push(list.slice(start))
  return out
}

/** Rule 2: every column with a Portuguese word is listed in naming.md and is a wire word; every listed one exists. */
export function columnBreaches(schema: Map<string, string[]>, listed: Map<string, Set<string>>, wire: Set<string>): string[] {
  const out: string[] = []
  for (const [table, cols] of schema) {
    for (const c of cols) {
      if (portugueseWords(c).length === 0) continue
      if (!listed.get(table)?.has(c)) out.push(`${table}.${c}: a Portuguese column not listed in ${NAMING_DOC}`)
      else if (!wire.has(c)) out.push(`${table}.${c}: listed, but no wire field has that name`)
    }
  }
  for (const [table, cols] of listed) {
    for (const c of cols)
      if (!schema.get(table)?.includes(c)) out.push(`${table}.${c}: listed in ${NAMING_DOC}, not in the schema`)
  }
  return out
}

export function tsFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f)
      if (statSync(p).isDirectory()) return tsFiles(p)
      return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : []
    })
}

export interface Breach {
  file: string
  line: number
  kind: string
  name: string
}

/** Names that declare something of the code's own: a Portuguese word is never allowed in them. */
function declares(n: ts.Node): boolean {
  return (
    ts.isVariableDeclaration(n) ||
    ts.isParameter(n) ||
    ts.isFunctionDeclaration(n) ||
    ts.isFunctionExpression(n) ||
    ts.isClassDeclaration(n) ||
    ts.isClassExpression(n) ||
    ts.isInterfaceDeclaration(n) ||
    ts.isTypeAliasDeclaration(n) ||
    ts.isEnumDeclaration(n) ||
    ts.isEnumMember(n) ||
    ts.isTypeParameterDeclaration(n) ||
    ts.isBindingElement(n) ||
    ts.isMethodDeclaration(n) ||
    ts.isMethodSignature(n) ||
    ts.isGetAccessorDeclaration(n) ||
    ts.isSetAccessorDeclaration(n) ||
    ts.isPropertyDeclaration(n) ||
    ts.isModuleDeclaration(n) ||
    (ts.isImportSpecifier(n) && n.propertyName !== undefined)
  )
}

/** Keys of object shapes and literals: a Portuguese word is allowed when the whole key is a wire word. */
function keys(n: ts.Node): boolean {
  return ts.isPropertySignature(n) || ts.isPropertyAssignment(n) || ts.isShorthandPropertyAssignment(n)
}

/** A shape with a camelCase key is the code's own (a record, options, a row mapped): its keys are English even where
 * they hold a wire field. The wire's shapes are snake_case or single words. */
function codeShape(n: ts.Node): boolean {
  const parent = n.parent
  const members = ts.isObjectLiteralExpression(parent)
    ? parent.properties
    : ts.isTypeLiteralNode(parent) || ts.isInterfaceDeclaration(parent)
      ? parent.members
      : []
  return members.some((m) => m.name !== undefined && ts.isIdentifier(m.name) && /[a-z0-9][A-Z]/.test(m.name.text))
}

/**
 * Every name in `file` that breaks rule 3: a declaration with a Portuguese word, or an object key with one that is
 * not exactly a wire word or sits in a code-shaped object. Quoted keys and strings are the wire's and are not read.
 */
export function scanSource(file: string, text: string, wire: Set<string>): Breach[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const out: Breach[] = []
  const visit = (n: ts.Node): void => {
    const name = (n as { name?: ts.Node }).name
    if (name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name))) {
      const text = name.text
      const pt = portugueseWords(text)
      const breach = pt.length > 0 && (declares(n) || (keys(n) && (!wire.has(text) || codeShape(n))))
      if (breach) {
        out.push({
          file,
          line: sf.getLineAndCharacterOfPosition(name.getStart(sf)).line + 1,
          kind: ts.SyntaxKind[n.kind],
          name: text,
        })
      }
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}

export function scanTree(dir: string, wire: Set<string>): Breach[] {
  return tsFiles(dir).flatMap((f) => scanSource(relative(ROOT, f), readFileSync(f, 'utf8'), wire))
}
