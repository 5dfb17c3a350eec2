// tap's error domains (the async-hook-domain package), kept on an AsyncLocalStorage instead of an async hook with a
// destroy callback. tap makes a domain for every test, so that a throw or an unhandled rejection from anything the
// test started (a timer, a socket, a promise) fails that test and not the whole process. The package finds the domain
// with an init and a destroy hook on every async resource: a destroy hook makes Node track every promise until it is
// collected, and the test processes run the service in-process, so each of its promises paid for it (about a tenth of
// a test run's CPU). An AsyncLocalStorage carries the same answer (which domain was current where the resource was
// made) with an init-time copy only. children.mjs installs it in place of the package in every test process; the
// package's API and its rules are kept: a domain covers what is started from where it was made; a destroyed domain
// hands its errors to its nearest living parent; with none, the error is not handled here (the process's own
// handling applies). test/unit/tap-domain.test.ts checks both rules through tap itself.
'use strict'

const { AsyncLocalStorage } = require('node:async_hooks')

const storage = new AsyncLocalStorage()
let active = false

/** The nearest domain not destroyed, from the one current where this code runs. */
function currentDomain() {
  let d = storage.getStore()
  while (d?.destroyed) d = d.parent
  return d
}

// As the package reads it: in strict mode Node throws before the unhandledRejection event, so only the
// uncaughtExceptionMonitor is needed; otherwise unhandled rejections are taken from process.emit.
const unhandledRejectionMode = (() => {
  let mode = 'throw'
  for (let i = 0; i < process.execArgv.length; i++) {
    const m = process.execArgv[i]
    if (m.startsWith('--unhandled-rejections=')) mode = m.slice('--unhandled-rejections='.length)
    else if (m === '--unhandled-rejections') mode = process.execArgv[i + 1]
  }
  return mode
})()

const originalEmit = process.emit

function domainErrorHandler(er, ev, rejectionHandler = false) {
  // A handler of the process's own takes precedence, as with the package.
  if (process.hasUncaughtExceptionCaptureCallback() || process.listeners('uncaughtException').length > 0) return false
  const domain = currentDomain()
  if (!domain) return false
  try {
    domain.onerror(er, ev)
  } catch (e) {
    domain.destroy()
    if (domainErrorHandler(e)) return true
    throw e
  }
  if (!rejectionHandler) {
    process.setUncaughtExceptionCaptureCallback(() => process.setUncaughtExceptionCaptureCallback(null))
    if (unhandledRejectionMode === 'strict') process.once('unhandledRejection', () => {})
  }
  return true
}

function domainProcessEmit(ev, ...args) {
  if (ev !== 'unhandledRejection' || process.listeners('unhandledRejection').length) {
    return originalEmit.call(process, ev, ...args)
  }
  return domainErrorHandler(args[0], 'unhandledRejection', true)
}

function activate() {
  if (active) return
  active = true
  process.on('uncaughtExceptionMonitor', domainErrorHandler)
  if (unhandledRejectionMode !== 'strict') process.emit = domainProcessEmit
}

class Domain {
  constructor(onerror) {
    if (typeof onerror !== 'function') {
      const er = new TypeError('onerror must be a function')
      Error.captureStackTrace(er, this.constructor)
      throw er
    }
    this.onerror = onerror
    this.parent = currentDomain()
    this.destroyed = false
    // What runs from here on in this execution context, and every resource it creates, sees this domain.
    storage.enterWith(this)
    activate()
  }

  destroy() {
    if (this.destroyed) return
    this.destroyed = true
    let parent = this.parent
    while (parent?.destroyed) parent = parent.parent
    this.parent = parent
  }
}

module.exports = { Domain }
