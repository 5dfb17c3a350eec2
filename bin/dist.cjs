// Whether the compiled service (dist/src/main.js, `npm run build`) is what src/ holds, so it may run instead of
// src/main.ts through tsx: always with PM_USE_DIST=1 or NODE_ENV=production, or where there is no src/ (the image);
// in a checkout, only when nothing in src/ changed since the build started, so an edit is never answered by old code.
// PM_USE_DIST=0 never. bin/pombo runs what this says; npm start (scripts/start.mjs) builds first when it says no.
'use strict'

const fs = require('node:fs')
const path = require('node:path')

/** The latest change under `dir`: files and folders (a deleted or renamed file changes its folder). */
function newest(dir) {
  let at = fs.statSync(dir).mtimeMs
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    at = Math.max(at, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs)
  }
  return at
}

/** The compiled entry of the checkout or image at `root`, whether it exists, and whether to run it. */
function distChoice(root, env = process.env) {
  const src = path.join(root, 'src')
  const main = path.join(root, 'dist', 'src', 'main.js')
  const built = fs.statSync(main, { throwIfNoEntry: false })?.mtimeMs
  const choice = env.PM_USE_DIST
  const use =
    built !== undefined &&
    choice !== '0' &&
    (choice === '1' || env.NODE_ENV === 'production' || !fs.existsSync(src) || newest(src) <= built)
  return { main, built: built !== undefined, use }
}

module.exports = { distChoice }
