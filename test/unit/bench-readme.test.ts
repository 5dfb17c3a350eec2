// The benchmark figures live in one place: bench/README.md's block, written by bench/run.ts from what the scenarios
// record (bench/lib/figures.ts). These check the renderer on a sample run, that the block in the repository is
// exactly the runner's format (a hand edit that breaks it fails here), that README.md's table only copies rows of the
// block, and the runner's writing path on copies of both files.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import {
  FIGURES_BEGIN,
  FIGURES_END,
  figureOf,
  measuredCommit,
  mergeFigures,
  parseBlock,
  parseHeadline,
  parseRow,
  record,
  renderBlock,
  startScenario,
  takeRecorded,
  withHeadline,
  writeFigures,
} from '../../bench/lib/figures'

const ROOT = join(__dirname, '..', '..')
const benchReadme = () => readFileSync(join(ROOT, 'bench', 'README.md'), 'utf8')
const readme = () => readFileSync(join(ROOT, 'README.md'), 'utf8')

const sample = [
  figureOf(
    'deliver',
    {
      name: 'fan-out of a 200,000-device segment, one worker',
      pombo: 18_512.4,
      unit: 'deliveries/s',
      baseline: 'raw node:http2 client to the same fake',
      base: 17_933,
      baseUnit: 'requests/s',
      ratio: 1.0312,
    },
    '2026-12-01',
    'abcdef1',
  ),
  figureOf(
    'deliver',
    { name: 'worker peak memory (VmHWM), fan-out of a 200,000-device segment', pombo: 151.2, unit: 'MB' },
    '2026-12-01',
    'abcdef1',
  ),
  figureOf(
    'send',
    {
      name: 'single-device sends at saturation',
      pombo: 12_062,
      unit: 'sends/s',
      baseline: 'bare uWS POST + JSON.parse',
      base: 123_653,
      baseUnit: 'req/s',
    },
    '2026-12-01',
    'abcdef1-dirty',
  ),
  figureOf('register', { name: 'export of 1,000,000 devices, file ready', pombo: 1.63, unit: 's' }, '2026-12-01', 'abcdef1'),
]

t.test('a run renders as the block: figure, same-run baseline, ratio, date and commit', async (t) => {
  t.equal(
    renderBlock(sample),
    [
      '<!-- figures:begin -->',
      '| scenario | figure | Pombo | same-run baseline | ratio | measured |',
      '|---|---|---|---|---|---|',
      '| deliver | fan-out of a 200,000-device segment, one worker | 18,512 deliveries/s | raw node:http2 client to the same fake: 17,933 requests/s | 1.03 | 2026-12-01, abcdef1 |',
      '| deliver | worker peak memory (VmHWM), fan-out of a 200,000-device segment | 151 MB | - | - | 2026-12-01, abcdef1 |',
      '| send | single-device sends at saturation | 12,062 sends/s | bare uWS POST + JSON.parse: 123,653 req/s | 0.098 | 2026-12-01, abcdef1-dirty |',
      '| register | export of 1,000,000 devices, file ready | 1.6 s | - | - | 2026-12-01, abcdef1 |',
      '<!-- figures:end -->',
    ].join('\n'),
  )
  // What the block says reads back as what was rendered (rounded as shown).
  const back = parseBlock(renderBlock(sample))
  t.same(back[2], { ...sample[2], pombo: { lo: 12_062, hi: 12_062, unit: 'sends/s' }, ratio: 0.098 })
  t.equal(renderBlock(back), renderBlock(sample))
})

t.test('what a scenario records is dated and attributed to it and to the commit measured', async (t) => {
  startScenario('http')
  record({ name: 'GET /', pombo: 150_000, unit: 'req/s', baseline: 'bare uWS GET /', base: 160_000 })
  const commit = measuredCommit(ROOT)
  t.match(commit, /^[0-9a-f]{7}(-dirty)?$/)
  const [f, ...more] = takeRecorded('2026-12-03', commit)
  t.same(more, [])
  t.same([f?.scenario, f?.name, f?.ratio, f?.date, f?.commit], ['http', 'GET /', 0.9375, '2026-12-03', commit])
  t.same(takeRecorded('2026-12-03', commit), [], 'taken once')
})

t.test('a scenario run again replaces its own rows and keeps every other row', async (t) => {
  const old = parseBlock(renderBlock(sample))
  const fresh = [
    figureOf(
      'deliver',
      {
        name: 'fan-out of a 200,000-device segment, one worker',
        pombo: 9_000,
        unit: 'deliveries/s',
        baseline: 'raw node:http2 client to the same fake',
        base: 10_000,
        baseUnit: 'requests/s',
      },
      '2026-12-02',
      '1234567',
    ),
    figureOf(
      'deliver',
      {
        name: 'fan-out of a 50,000-device segment, one worker',
        pombo: 9_500,
        unit: 'deliveries/s',
        baseline: 'raw node:http2 client to the same fake',
        base: 10_000,
        baseUnit: 'requests/s',
      },
      '2026-12-02',
      '1234567',
    ),
  ]
  const merged = mergeFigures(old, fresh)
  t.same(
    merged.map((f) => [f.scenario, f.name, f.date]),
    [
      ['deliver', 'fan-out of a 200,000-device segment, one worker', '2026-12-02'],
      ['deliver', 'worker peak memory (VmHWM), fan-out of a 200,000-device segment', '2026-12-01'],
      ['deliver', 'fan-out of a 50,000-device segment, one worker', '2026-12-02'],
      ['send', 'single-device sends at saturation', '2026-12-01'],
      ['register', 'export of 1,000,000 devices, file ready', '2026-12-01'],
    ],
  )
  t.equal(merged[0]?.ratio, 0.9, 'the ratio is Pombo ÷ the same-run baseline unless the scenario gives its own')
})

t.test("bench/README.md's block is exactly the runner's output format", async (t) => {
  const text = benchReadme()
  const figures = parseBlock(text)
  t.ok(figures.length >= 20, `${figures.length} figures`)
  const block = text.slice(text.indexOf(FIGURES_BEGIN), text.indexOf(FIGURES_END) + FIGURES_END.length)
  t.equal(renderBlock(figures), block, 'rendering the parsed block gives it back byte for byte')
  const keys = figures.map((f) => `${f.scenario} / ${f.name}`)
  t.same(keys.length, new Set(keys).size, 'one row per scenario and figure')
  for (const f of figures) {
    if (f.baseline) t.ok(f.ratio !== null, `${f.name}: a figure with a baseline has its ratio`)
    else t.equal(f.ratio, null, `${f.name}: an absolute figure has no ratio`)
  }
})

t.test("every figure in README.md's table equals the one in bench/README.md's block", async (t) => {
  const block = parseBlock(benchReadme())
  const copied = parseHeadline(readme())
  t.ok(copied.length >= 5, `${copied.length} headline figures`)
  for (const f of copied) {
    const source = block.find((b) => b.scenario === f.scenario && b.name === f.name)
    t.ok(source, `${f.scenario} / ${f.name} is in the block`)
    t.same(f, source, `${f.scenario} / ${f.name}: the same figure, baseline, ratio, date and commit`)
  }
  t.equal(withHeadline(readme(), block), readme(), "refreshing README.md's copies from the block changes nothing")
})

t.test('a row edited by hand out of the format is refused', async (t) => {
  const row =
    '| deliver | fan-out of a 200,000-device segment, one worker | - | raw node:http2 client to the same fake: 17,544–19,318 requests/s | 1.02 | 2026-11-27, 9ff56a6 |'
  t.ok(parseRow(row))
  t.throws(() => parseRow(row.replace('| 1.02 |', '| 1.02–1.23 |')), /not a ratio/)
  t.throws(() => parseRow(row.replace('2026-11-27, 9ff56a6', 'Nov 27')), /date, commit/)
  t.throws(() => parseRow(row.replace('raw node:http2 client to the same fake: ', 'raw client ')), /amount|name: amount/)
})

t.test("the runner's writing path: the block and README.md's copies follow a run", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pombo-bench-readme-'))
  const bench = join(dir, 'bench-README.md')
  const top = join(dir, 'README.md')
  writeFileSync(bench, benchReadme())
  writeFileSync(top, readme())
  const before = parseBlock(benchReadme())
  const fresh = figureOf(
    'http',
    { name: 'GET /', pombo: 150_000, unit: 'req/s', baseline: 'bare uWS GET /', base: 160_000 },
    '2026-12-03',
    'fedcba9',
  )
  writeFigures([fresh], bench, top)
  const after = parseBlock(readFileSync(bench, 'utf8'))
  t.equal(after.length, before.length)
  const row = after.find((f) => f.scenario === 'http' && f.name === 'GET /')
  t.same([row?.ratio, row?.date, row?.commit], [0.94, '2026-12-03', 'fedcba9'])
  t.same(
    after.filter((f) => f !== row),
    before.filter((f) => !(f.scenario === 'http' && f.name === 'GET /')),
    'the other rows are untouched',
  )
  const copies = parseHeadline(readFileSync(top, 'utf8'))
  t.same(
    copies.find((f) => f.scenario === 'http' && f.name === 'GET /'),
    row,
    "README.md's copy follows",
  )
  t.equal(readFileSync(top, 'utf8').split('\n').length, readme().split('\n').length, 'README.md keeps its length')
})
