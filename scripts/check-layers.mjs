// The import boundaries of src/, written once: `npm run lint` runs this. Folders sit in layers, lowest first; a file
// may import from its own folder, from another folder of its own layer, or from a lower layer, never from a higher
// one; and the folders' import graph has no cycle (within a layer, the order is whatever the imports make it, as long
// as it stays a line). Type-only imports count too: a type pulled from above is the same coupling as a value.
//   node scripts/check-layers.mjs          exits 1 naming every breach
//   node scripts/check-layers.mjs --graph  prints the folder graph
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** Lowest first. `service` builds a process from every feature; `main.ts` (the root) and `simulate` start one. */
export const LAYERS = [
  ['core', ['core']],
  ['platform', ['db', 'redis', 'http', 'h2', 'ops', 'infra']],
  ['shared', ['message', 'handoff', 'providers', 'audit']],
  [
    'features',
    ['orgs', 'people', 'apps', 'devices', 'credentials', 'confirmations', 'sends', 'delivery', 'receipts', 'inapp', 'erasure'],
  ],
  ['surfaces', ['dashboard', 'cli', 'simulators', 'group']],
  ['composition', ['service']],
  ['entry', ['simulate', '.']],
]

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src')
const IMPORT =
  /^\s*(?:import|export)\s(?:type\s)?[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm

function files(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name)
    if (statSync(p).isDirectory()) out.push(...files(p))
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(p)
  }
  return out
}

/** The top folder of src a file belongs to ('.' for the root files). */
function folderOf(srcDir, file) {
  const rel = path.relative(srcDir, file)
  return rel.includes(path.sep) ? rel.split(path.sep)[0] : '.'
}

export function check(srcDir = SRC) {
  const layerOf = new Map()
  LAYERS.forEach(([, folders], i) => {
    for (const f of folders) layerOf.set(f, i)
  })
  const breaches = []
  const graph = new Map()
  for (const file of files(srcDir)) {
    const from = folderOf(srcDir, file)
    if (!layerOf.has(from))
      breaches.push(`${path.relative(srcDir, file)}: folder "${from}" is in no layer (scripts/check-layers.mjs)`)
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const spec = m[1] ?? m[2]
      const target = path.resolve(path.dirname(file), spec)
      if (!target.startsWith(srcDir + path.sep)) continue
      const to = folderOf(srcDir, target.endsWith('.ts') || target.endsWith('.js') ? target : `${target}.ts`)
      if (to === from) continue
      if (!graph.has(from)) graph.set(from, new Map())
      graph.get(from).set(to, `${path.relative(srcDir, file)} → ${spec}`)
      const lf = layerOf.get(from)
      const lt = layerOf.get(to)
      if (lf !== undefined && lt !== undefined && lt > lf) {
        breaches.push(
          `${path.relative(srcDir, file)} imports ${spec}: ${LAYERS[lf][0]} (${from}) may not import from ${LAYERS[lt][0]} (${to})`,
        )
      }
    }
  }
  for (const cycle of cycles(graph)) {
    const edges = cycle.map((f, i) => graph.get(f).get(cycle[(i + 1) % cycle.length]))
    breaches.push(`folder cycle ${[...cycle, cycle[0]].join(' → ')}: ${edges.join('; ')}`)
  }
  return { breaches, graph }
}

/** Strongly connected components of more than one folder (Tarjan), each as a closed walk through it. */
function cycles(graph) {
  let index = 0
  const idx = new Map()
  const low = new Map()
  const stack = []
  const on = new Set()
  const out = []
  const visit = (v) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
    }
    if (low.get(v) === idx.get(v)) {
      const comp = []
      let w
      do {
        w = stack.pop()
        on.delete(w)
        comp.push(w)
      } while (w !== v)
      if (comp.length > 1) out.push(walk(graph, new Set(comp), comp[0]))
    }
  }
  for (const v of graph.keys()) if (!idx.has(v)) visit(v)
  return out
}

/** A cycle through `start` inside the component (breadth-first back to start). */
function walk(graph, comp, start) {
  const prev = new Map([[start, null]])
  const queue = [start]
  while (queue.length) {
    const v = queue.shift()
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!comp.has(w)) continue
      if (w === start) {
        const path = [v]
        for (let p = prev.get(v); p !== null && p !== undefined; p = prev.get(p)) path.unshift(p)
        return path
      }
      if (!prev.has(w)) {
        prev.set(w, v)
        queue.push(w)
      }
    }
  }
  return [...comp]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { breaches, graph } = check()
  if (process.argv.includes('--graph')) for (const [f, to] of graph) console.log(`${f} → ${[...to.keys()].sort().join(' ')}`)
  for (const b of breaches) console.error(b)
  if (breaches.length) {
    console.error(`check-layers: ${breaches.length} breach(es) of the layers in scripts/check-layers.mjs`)
    process.exit(1)
  }
  console.log('check-layers: every import points down or across, and no folder cycle')
}
