// Runs the TypeScript of a test process (through ts-loader.mjs, package.json "tap"."node-arg"), in place of
// tsx, which gave each of the ~300 modules a test process loads a pass of its ESM lexer and its resolver, and loaded
// its own loader into the module hooks' thread. This does only what our sources need:
// - a .ts file required is compiled to CommonJS (test/helpers/ts-compile.cjs: esbuild, cached by content);
// - `./x.js` written in a .ts file, when there is no such file, is the `./x.ts` beside it (TypeScript's node16
//   resolution asks for the compiled name);
// - a .ts file reached through the ESM loader (the entry, which tap's own `--import` sends there, or a test file a
//   shard imports) is handled by ts-loader-hooks.mjs.
'use strict'

const { readFileSync } = require('node:fs')
const Module = require('node:module')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { compile } = require('./ts-compile.cjs')

Module._extensions['.ts'] = function loadTs(module, filename) {
  module._compile(compile(readFileSync(filename, 'utf8'), filename), filename)
}

// `./x.js` written in a .ts file for the .ts beside it (TypeScript's node16 resolution asks for the output's name).
const resolve = Module._resolveFilename
Module._resolveFilename = function resolveTs(request, parent, ...rest) {
  try {
    return resolve.call(this, request, parent, ...rest)
  } catch (err) {
    if (err?.code !== 'MODULE_NOT_FOUND' || !/^\.\.?\/.*\.js$/.test(request) || !parent?.filename?.endsWith('.ts')) throw err
    return resolve.call(this, `${request.slice(0, -3)}.ts`, parent, ...rest)
  }
}

Module.register(pathToFileURL(path.join(__dirname, 'ts-loader-hooks.mjs')))
