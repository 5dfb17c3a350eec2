// A connection string as it may appear on a terminal: its password, and any secret parameter, written `***`,
// whatever the form it came in. The scripts' copy of src/core/redact.ts (the scripts run without the TypeScript
// sources); test/unit/redact-url.test.ts holds both to one table of forms. See that file for why this is text and
// not a URL parser.

const SECRET_PARAM = /pass|secret|token|key/i

function decoded(s) {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '))
  } catch {
    return s
  }
}

/** The string with every password and secret parameter replaced by `***`. */
export function redactUrl(s) {
  const scheme = /^(\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/)([\s\S]*)$/.exec(s)
  if (scheme) {
    let rest = scheme[2]
    const at = rest.lastIndexOf('@')
    if (at >= 0) {
      const userinfo = rest.slice(0, at)
      const colon = userinfo.indexOf(':')
      if (colon >= 0) rest = `${userinfo.slice(0, colon)}:***${rest.slice(at)}`
    }
    rest = rest.replace(/([?&;])([^=&#;]*)=([^&#;]*)/g, (all, sep, name) =>
      SECRET_PARAM.test(decoded(name)) ? `${sep}${name}=***` : all,
    )
    return `${scheme[1]}${rest}`
  }
  const kv = s.replace(/(^|\s)([A-Za-z_]+)(\s*=\s*)('(?:[^'\\]|\\[\s\S])*'?|\S*)/g, (all, pre, name, eq) =>
    SECRET_PARAM.test(name) ? `${pre}${name}${eq}***` : all,
  )
  const at = kv.lastIndexOf('@')
  const colon = kv.indexOf(':')
  return !kv.includes('=') && at > 0 && colon >= 0 && colon < at ? `${kv.slice(0, colon)}:***${kv.slice(at)}` : kv
}
