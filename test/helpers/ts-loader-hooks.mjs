// The module hooks of test/helpers/ts-loader.cjs, in the hooks' thread, for a .ts file that reaches the ESM loader:
// - the entry (resolved with no parent) is CommonJS, loaded by the CommonJS loader (no source given here), where
//   ts-loader.cjs compiles it, so it is `require.main`;
// - any other (an `import()` of a .ts file: a shard importing its test files) is a small module that requires it and
//   exports what it exports, by name and as the default, as `import()` of compiled TypeScript gives: Node would
//   look for the names in the .ts text itself and find none.
// - `./x.js` imported from a .ts file, when there is no such file, is the `./x.ts` beside it.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const { compile } = createRequire(import.meta.url)('./ts-compile.cjs')
const entries = new Set()

export async function resolve(specifier, context, next) {
  let r
  try {
    r = await next(specifier, context)
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !/^\.\.?\/.*\.js$/.test(specifier) || !context.parentURL?.endsWith('.ts'))
      throw err
    r = await next(`${specifier.slice(0, -3)}.ts`, context)
  }
  if (context.parentURL === undefined && r.url.endsWith('.ts')) entries.add(r.url)
  return r
}

/** The names a compiled file exports: esbuild lists them for Node at its end, `0 && (module.exports = { … })` (without
 *  the spaces, as the whitespace is minified). */
function exportNames(code) {
  const list = /(?:^|[\n;])0\s*&&\s*\(module\.exports\s*=\s*\{([^}]*)\}\)/.exec(code)?.[1] ?? ''
  return list
    .split(',')
    .map((n) => n.trim())
    .filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== 'default')
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  if (entries.has(url)) return { format: 'commonjs', shortCircuit: true }
  const file = fileURLToPath(url)
  const names = exportNames(compile(readFileSync(file, 'utf8'), file))
  const source = [
    "import { createRequire } from 'node:module'",
    `const m = createRequire(${JSON.stringify(url)})(${JSON.stringify(file)})`,
    'export default m',
    ...(names.length ? [`export const { ${names.join(', ')} } = m`] : []),
  ].join('\n')
  return { format: 'module', source, shortCircuit: true }
}
