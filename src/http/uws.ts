// Loads the uWebSockets.js build that fits this runtime. Two builds exist and neither covers every system:
// - the current one (@btc-vision/uwebsockets.js) has native bindings for Node 20, 22, 24 and 25, linked against
//   glibc 2.38 or later on Linux (Debian 13, Ubuntu 24.04, current container images);
// - the Node 20 one (@trufflesuite/uws-js-unofficial, installed as `uWebSockets.js`) loads on older glibc, but only
//   on Node ≤ 20, and on another runtime it silently falls back to a slow pure-JS server.
// The choice is made once, at start, from the runtime and the C library; when no build fits, Pombo refuses in one
// line that names the runtime, the glibc and what to do, instead of failing deep inside a native loader.

import type uWSTypes from 'uWebSockets.js'
import { createRequire } from 'node:module'

export type Uws = typeof uWSTypes

export const CURRENT_BUILD = '@btc-vision/uwebsockets.js'
export const NODE20_BUILD = 'uWebSockets.js'
/** Node majors the current build ships bindings for; Pombo supports the even (LTS) ones. */
const CURRENT_NODE_MAJORS = [20, 22, 24, 25]
const CURRENT_MIN_GLIBC = [2, 38]

export interface Runtime {
  /** process.version, e.g. "v24.3.0". */
  node: string
  platform: NodeJS.Platform
  /** The C library's version on glibc Linux ("2.36"), null elsewhere (musl, macOS, Windows). */
  glibc: string | null
}

export type Choice = { build: string; why: string } | { refusal: string }

export function currentRuntime(): Runtime {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
  return { node: process.version, platform: process.platform, glibc: header?.glibcVersionRuntime ?? null }
}

function atLeast(version: string, min: number[]): boolean {
  const parts = version.split('.').map(Number)
  for (let i = 0; i < min.length; i++) {
    const v = parts[i] ?? 0
    if (v !== min[i]) return v > (min[i] ?? 0)
  }
  return true
}

/** Which build fits `rt`, or why none does. Pure: the loader and its tests share it. */
export function chooseUws(rt: Runtime): Choice {
  const major = Number(rt.node.replace(/^v/, '').split('.')[0])
  const where = `Node ${rt.node} on ${rt.platform}${rt.glibc ? ` with glibc ${rt.glibc}` : ''}`
  if (rt.platform === 'linux' && rt.glibc === null) {
    return {
      refusal: `Pombo cannot serve HTTP on ${where} (not glibc): uWebSockets.js ships glibc builds only; use a Debian or Ubuntu based system or image (node:24-trixie-slim)`,
    }
  }
  const modernLibc = rt.platform !== 'linux' || atLeast(rt.glibc ?? '0', CURRENT_MIN_GLIBC)
  if (modernLibc && CURRENT_NODE_MAJORS.includes(major)) return { build: CURRENT_BUILD, why: `${where}: the current build` }
  if (major === 20) return { build: NODE20_BUILD, why: `${where}: the Node 20 build (the current one needs glibc ≥ 2.38)` }
  if (!modernLibc) {
    return {
      refusal: `Pombo cannot serve HTTP on ${where}: uWebSockets.js for Node ${major} needs glibc ≥ 2.38 (Debian 13, Ubuntu 24.04, the node:24-trixie-slim image); on this system run Pombo on Node 20`,
    }
  }
  return { refusal: `Pombo cannot serve HTTP on ${where}: supported runtimes are Node 20, 22 and 24; install one of them` }
}

let loaded: { uws: Uws; choice: { build: string; why: string } } | null = null

/** The build for this process (chosen and loaded once); throws the refusal as an Error with one line. */
export function loadUws(): { uws: Uws; choice: { build: string; why: string } } {
  if (loaded) return loaded
  const choice = chooseUws(currentRuntime())
  if ('refusal' in choice) throw new Error(choice.refusal)
  const require = createRequire(__filename)
  let uws: Uws
  try {
    uws = require(choice.build) as Uws
  } catch (err) {
    const first = String((err as Error).message ?? err).split('\n')[0]
    throw new Error(`Pombo cannot load ${choice.build} (${choice.why}): ${first}; run npm ci to install it`)
  }
  // The Node 20 build answers an unsupported runtime with a pure-JS fallback instead of an error.
  if (!String(uws.App).includes('[native code]')) {
    throw new Error(`Pombo cannot serve HTTP: ${choice.build} loaded without its native binding on Node ${process.version}`)
  }
  loaded = { uws, choice }
  return loaded
}
