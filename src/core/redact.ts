// A connection string as it may appear in a log or on a terminal: its password, and any secret parameter, written
// `***`, whatever the form it came in. scripts/redact-url.mjs is the same function for the scripts (npm start's
// banner, the test runner), which run without the TypeScript sources; test/unit/redact-url.test.ts holds both to one
// table of forms.
//
// Text, not a URL parser: a password may hold `@`, `/`, `?` or `#` unencoded, and a parser then reads part of it as
// the host, the port or the fragment (and would print it there). So everything between `://` and the last `@` is the
// user and the password; an `@` later in the string (a query value) only makes the redaction wider, never narrower.

/** Parameter names whose value is a secret (libpq's password and sslpassword, any *token, *secret or *key). */
const SECRET_PARAM = /pass|secret|token|key/i

function decoded(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '))
  } catch {
    return s
  }
}

/** The string with every password and secret parameter replaced by `***`. */
export function redactUrl(s: string): string {
  const scheme = /^(\s*[A-Za-z][A-Za-z0-9+.-]*:\/\/)([\s\S]*)$/.exec(s)
  if (scheme) {
    let rest = scheme[2] as string
    const at = rest.lastIndexOf('@')
    if (at >= 0) {
      const userinfo = rest.slice(0, at)
      const colon = userinfo.indexOf(':')
      if (colon >= 0) rest = `${userinfo.slice(0, colon)}:***${rest.slice(at)}`
    }
    // Query parameters (postgres://h/db?password=…, percent-encoded names included).
    rest = rest.replace(/([?&;])([^=&#;]*)=([^&#;]*)/g, (all, sep: string, name: string) =>
      SECRET_PARAM.test(decoded(name)) ? `${sep}${name}=***` : all,
    )
    return `${scheme[1]}${rest}`
  }
  // libpq key=value: `host=h password=secret` or `password='with spaces \' and quotes'`.
  const kv = s.replace(
    /(^|\s)([A-Za-z_]+)(\s*=\s*)('(?:[^'\\]|\\[\s\S])*'?|\S*)/g,
    (all, pre: string, name: string, eq: string) => (SECRET_PARAM.test(name) ? `${pre}${name}${eq}***` : all),
  )
  // No scheme and no key=value: `user:password@host` typed without its scheme is still a password.
  const at = kv.lastIndexOf('@')
  const colon = kv.indexOf(':')
  return !kv.includes('=') && at > 0 && colon >= 0 && colon < at ? `${kv.slice(0, colon)}:***${kv.slice(at)}` : kv
}
