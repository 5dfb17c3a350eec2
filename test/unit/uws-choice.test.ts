// Which uWebSockets.js build the HTTP layer loads for each runtime and C library (src/http/uws.ts), and the one-line
// refusal when none fits.
import t from 'tap'
import { CURRENT_BUILD, chooseUws, currentRuntime, NODE20_BUILD, type Runtime } from '../../src/http/uws'

const linux = (node: string, glibc: string | null): Runtime => ({ node, platform: 'linux', glibc })

t.test('glibc ≥ 2.38: the current build on every supported Node', async (t) => {
  for (const node of ['v20.19.0', 'v22.12.0', 'v24.3.0']) {
    for (const glibc of ['2.38', '2.39', '2.41', '3.0']) {
      const c = chooseUws(linux(node, glibc))
      t.same('build' in c && c.build, CURRENT_BUILD, `${node} glibc ${glibc}`)
    }
  }
})

t.test('older glibc: Node 20 takes the Node 20 build; Node 22 and 24 are refused in one line', async (t) => {
  const c20 = chooseUws(linux('v20.20.2', '2.36'))
  t.equal('build' in c20 && c20.build, NODE20_BUILD)
  for (const node of ['v22.12.0', 'v24.21.0']) {
    const c = chooseUws(linux(node, '2.36'))
    t.ok('refusal' in c, node)
    if (!('refusal' in c)) continue
    t.notMatch(c.refusal, /\n/, 'one line')
    t.match(c.refusal, node, 'names the runtime')
    t.match(c.refusal, 'glibc 2.36', 'names the C library')
    t.match(c.refusal, 'glibc ≥ 2.38', 'says what the current build needs')
    t.match(c.refusal, 'run Pombo on Node 20', 'says what to do')
  }
})

t.test('versions compare as numbers, not text', async (t) => {
  const c = chooseUws(linux('v22.1.0', '2.4'))
  t.ok('refusal' in c, '2.4 is older than 2.38')
  const d = chooseUws(linux('v22.1.0', '2.100'))
  t.equal('build' in d && d.build, CURRENT_BUILD, '2.100 is newer than 2.38')
})

t.test('runtimes without a build are refused by name', async (t) => {
  const odd = chooseUws(linux('v23.1.0', '2.39'))
  t.ok('refusal' in odd && /Node 20, 22 and 24/.test(odd.refusal), 'an odd major')
  const old = chooseUws(linux('v18.20.0', '2.36'))
  t.ok('refusal' in old, 'Node 18')
  const musl = chooseUws(linux('v22.1.0', null))
  t.ok('refusal' in musl && /not glibc/.test(musl.refusal), 'musl (Alpine)')
  const mac = chooseUws({ node: 'v24.1.0', platform: 'darwin', glibc: null })
  t.equal('build' in mac && mac.build, CURRENT_BUILD, 'macOS takes the current build')
})

t.test('this process: the runtime read from process.report', async (t) => {
  const rt = currentRuntime()
  t.equal(rt.node, process.version)
  if (process.platform === 'linux') t.match(rt.glibc ?? '', /^\d+\.\d+/)
})
