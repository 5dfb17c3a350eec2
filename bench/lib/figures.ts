// The figures table of bench/README.md is written here, from what the scenarios record, never by hand. A scenario
// records each figure beside its same-run baseline (`record`); after the scenario, bench/run.ts merges them into the
// block between FIGURES_BEGIN and FIGURES_END (a row per scenario and figure, each with its own date and commit, so
// a scenario not run keeps its last figures) and refreshes the rows README.md copies between HEADLINE_BEGIN and
// HEADLINE_END. parseBlock reads the same format back, so the unit test can check both files against the renderer.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

export const FIGURES_BEGIN = '<!-- figures:begin -->'
export const FIGURES_END = '<!-- figures:end -->'
export const HEADLINE_BEGIN = '<!-- headline:begin -->'
export const HEADLINE_END = '<!-- headline:end -->'
const HEADER = ['| scenario | figure | Pombo | same-run baseline | ratio | measured |', '|---|---|---|---|---|---|']

/** A measured amount: one figure, or a range where only the range was recorded. */
export interface Amount {
  lo: number
  hi: number
  unit: string
}

export interface Figure {
  scenario: string
  name: string
  /** Null where the run recorded only the ratio. */
  pombo: Amount | null
  /** Null for an absolute figure, which has no baseline and no ratio. */
  baseline: { name: string; amount: Amount } | null
  /** Pombo ÷ the baseline (a scenario may give its own, e.g. the median of per-round ratios). */
  ratio: number | null
  date: string
  commit: string
}

/** What a scenario hands to `record`: plain numbers in one unit, the baseline's in `baseUnit` when it differs. */
export interface Recorded {
  name: string
  pombo: number
  unit: string
  baseline?: string
  base?: number
  baseUnit?: string
  ratio?: number
}

let scenario = ''
let pending: Recorded[] = []

/** Called by the runner before each scenario: what it records until the next call is that scenario's. */
export function startScenario(name: string): void {
  scenario = name
  pending = []
}

export function record(r: Recorded): void {
  pending.push(r)
}

/** The figures recorded since startScenario, dated and attributed to the commit measured. */
export function takeRecorded(date: string, commit: string): Figure[] {
  const out = pending.map((r) => figureOf(scenario, r, date, commit))
  pending = []
  return out
}

export function figureOf(scenarioName: string, r: Recorded, date: string, commit: string): Figure {
  const hasBase = r.baseline !== undefined && r.base !== undefined
  return {
    scenario: scenarioName,
    name: r.name,
    pombo: { lo: r.pombo, hi: r.pombo, unit: r.unit },
    baseline: hasBase
      ? { name: r.baseline as string, amount: { lo: r.base as number, hi: r.base as number, unit: r.baseUnit ?? r.unit } }
      : null,
    ratio: r.ratio ?? (hasBase ? r.pombo / (r.base as number) : null),
    date,
    commit,
  }
}

/** Below 10 two significant digits (1.6 s, 2.0 ms); from 10 on a whole number with thousands separators. */
export function formatNumber(n: number): string {
  return Math.abs(n) < 10 ? n.toPrecision(2) : Math.round(n).toLocaleString('en')
}

export function formatRatio(r: number): string {
  return r < 0.1 ? r.toFixed(3) : r.toFixed(2)
}

function formatAmount(a: Amount): string {
  const lo = formatNumber(a.lo)
  const hi = formatNumber(a.hi)
  return `${lo === hi ? lo : `${lo}–${hi}`} ${a.unit}`
}

function cell(text: string): string {
  if (/[|\n]/.test(text) || text.trim() !== text || text === '') throw new Error(`a figures cell cannot hold "${text}"`)
  return text
}

export function renderRow(f: Figure): string {
  if (f.baseline?.name.includes(': ')) throw new Error(`a baseline's name cannot hold ": " (${f.baseline.name})`)
  if (!/^\d{4}-\d{2}-\d{2}$/.test(f.date) || !/^[0-9a-f]{7,40}(-dirty)?$/.test(f.commit))
    throw new Error(`bad date or commit: ${f.date} ${f.commit}`)
  const cells = [
    f.scenario,
    f.name,
    f.pombo ? formatAmount(f.pombo) : '-',
    f.baseline ? `${f.baseline.name}: ${formatAmount(f.baseline.amount)}` : '-',
    f.ratio === null ? '-' : formatRatio(f.ratio),
    `${f.date}, ${f.commit}`,
  ].map(cell)
  return `| ${cells.join(' | ')} |`
}

/** The whole block, markers included. */
export function renderBlock(figures: readonly Figure[]): string {
  return [FIGURES_BEGIN, ...HEADER, ...figures.map(renderRow), FIGURES_END].join('\n')
}

function parseAmount(text: string): Amount {
  const m = /^(\d[\d,]*(?:\.\d+)?)(?:–(\d[\d,]*(?:\.\d+)?))? (\S.*)$/.exec(text)
  if (!m) throw new Error(`not an amount: "${text}"`)
  const num = (s: string) => Number(s.replaceAll(',', ''))
  return { lo: num(m[1] as string), hi: num((m[2] ?? m[1]) as string), unit: m[3] as string }
}

export function parseRow(line: string): Figure {
  if (!line.startsWith('| ') || !line.endsWith(' |')) throw new Error(`not a figures row: ${line}`)
  const cells = line.slice(2, -2).split(' | ')
  if (cells.length !== 6) throw new Error(`a figures row has 6 cells: ${line}`)
  const [scenarioName, name, pombo, baseline, ratio, measured] = cells as [string, string, string, string, string, string]
  const at = baseline.lastIndexOf(': ')
  if (baseline !== '-' && at < 0) throw new Error(`a baseline is "name: amount" or "-": ${line}`)
  const when = /^(\d{4}-\d{2}-\d{2}), ([0-9a-f]{7,40}(?:-dirty)?)$/.exec(measured)
  if (!when) throw new Error(`"measured" is "date, commit": ${line}`)
  if (ratio !== '-' && !/^\d+\.\d+$/.test(ratio)) throw new Error(`not a ratio: ${line}`)
  return {
    scenario: scenarioName,
    name,
    pombo: pombo === '-' ? null : parseAmount(pombo),
    baseline: baseline === '-' ? null : { name: baseline.slice(0, at), amount: parseAmount(baseline.slice(at + 2)) },
    ratio: ratio === '-' ? null : Number(ratio),
    date: when[1] as string,
    commit: when[2] as string,
  }
}

/** The rows between `begin` and `end` in `text` (the table's header skipped). */
function between(text: string, begin: string, end: string): { start: number; stop: number; rows: string[] } {
  const start = text.indexOf(begin)
  const stop = text.indexOf(end, start)
  if (start < 0 || stop < 0) throw new Error(`no ${begin} … ${end} block`)
  const lines = text
    .slice(start + begin.length, stop)
    .split('\n')
    .filter((l) => l.trim() !== '')
  if (lines[0] !== HEADER[0] || lines[1] !== HEADER[1])
    throw new Error(`the block after ${begin} does not start with the figures header`)
  return { start, stop: stop + end.length, rows: lines.slice(2) }
}

/** The figures of bench/README.md's generated block. */
export function parseBlock(text: string): Figure[] {
  return between(text, FIGURES_BEGIN, FIGURES_END).rows.map(parseRow)
}

/** The rows README.md copies from the block. */
export function parseHeadline(text: string): Figure[] {
  return between(text, HEADLINE_BEGIN, HEADLINE_END).rows.map(parseRow)
}

const key = (f: Figure) => `${f.scenario}\u0000${f.name}`

/** `old` with each fresh figure in place of the row of the same scenario and name; a new one after its scenario's
 *  last row (or at the end). A figure not measured again keeps its row, date and commit. */
export function mergeFigures(old: readonly Figure[], fresh: readonly Figure[]): Figure[] {
  const out = [...old]
  for (const f of fresh) {
    const same = out.findIndex((o) => key(o) === key(f))
    if (same >= 0) {
      out[same] = f
      continue
    }
    const last = out.findLastIndex((o) => o.scenario === f.scenario)
    out.splice(last >= 0 ? last + 1 : out.length, 0, f)
  }
  return out
}

/** bench/README.md with its block holding `figures`. */
export function withBlock(text: string, figures: readonly Figure[]): string {
  const { start, stop } = between(text, FIGURES_BEGIN, FIGURES_END)
  return text.slice(0, start) + renderBlock(figures) + text.slice(stop)
}

/** README.md with each copied row taken again from `figures` (the same scenario and name). */
export function withHeadline(text: string, figures: readonly Figure[]): string {
  const { start, stop, rows } = between(text, HEADLINE_BEGIN, HEADLINE_END)
  const copied = rows.map((line) => {
    const f = parseRow(line)
    return renderRow(figures.find((x) => key(x) === key(f)) ?? f)
  })
  return `${text.slice(0, start)}${[HEADLINE_BEGIN, ...HEADER, ...copied, HEADLINE_END].join('\n')}${text.slice(stop)}`
}

/** The commit measured: HEAD, marked -dirty when tracked files differ from it. */
export function measuredCommit(root: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim()
  try {
    return git('rev-parse', '--short=7', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '-dirty' : '')
  } catch {
    return '0000000-dirty'
  }
}

/** Merges `fresh` into the block of `benchReadme` and, when given, refreshes the copies in `readme`. */
export function writeFigures(fresh: readonly Figure[], benchReadme: string, readme?: string): void {
  if (fresh.length === 0) return
  const text = readFileSync(benchReadme, 'utf8')
  const figures = mergeFigures(parseBlock(text), fresh)
  writeFileSync(benchReadme, withBlock(text, figures))
  if (readme) writeFileSync(readme, withHeadline(readFileSync(readme, 'utf8'), figures))
}
