// How test/helpers/ts-loader.cjs compiles a .ts file to CommonJS, shared with its module hooks (ts-loader-hooks.mjs):
// esbuild with the tsconfig's options and an inline source map, the result kept in .cache/ts-loader under the hash of
// the options, the path and the text, so a file is compiled once for every process and every run until it changes.
'use strict'

const { createHash } = require('node:crypto')
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..', '..')
const CACHE = path.join(ROOT, '.cache', 'ts-loader')
const compilerOptions = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')).compilerOptions

let esbuild = null
/** esbuild's options for one file; their text is part of every cache key, so a change to them compiles afresh. */
const options = (file) => ({
  loader: 'ts',
  format: 'cjs',
  platform: 'node',
  target: `node${process.versions.node.split('.')[0]}`,
  sourcefile: file,
  sourcemap: 'inline',
  // As tsx compiles (whitespace out, names kept), so a test sees the same code either way (ts-loader.mjs runs tsx when
  // coverage is recorded); the map needs no copy of the source, which stack traces read from the file.
  minifyWhitespace: true,
  keepNames: true,
  sourcesContent: false,
  tsconfigRaw: { compilerOptions },
})
const KEY = `${require('esbuild/package.json').version} ${JSON.stringify(options(''))}`

/** The CommonJS text of `file`: from the cache when its source was compiled before, else compiled and stored. */
function compile(source, file) {
  const hash = createHash('sha1').update(KEY).update('\0').update(file).update('\0').update(source).digest('hex')
  const cached = path.join(CACHE, `${hash}.js`)
  try {
    return readFileSync(cached, 'utf8')
  } catch {
    esbuild ??= require('esbuild')
    const { code } = esbuild.transformSync(source, options(file))
    try {
      mkdirSync(CACHE, { recursive: true })
      // Written beside and renamed: a process reading the cache never sees half a file.
      const tmp = `${cached}.${process.pid}.tmp`
      writeFileSync(tmp, code)
      renameSync(tmp, cached)
    } catch {
      // a read-only checkout: compiled again next time
    }
    return code
  }
}

module.exports = { compile }
