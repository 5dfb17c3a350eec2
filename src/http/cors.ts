// CORS for the device routes. The web SDK runs in the customer's pages and service workers, on the customer's
// origin, and calls Pombo's API on another one: without these headers a browser would refuse to hand it the answers
// (and would send no POST with a JSON body at all, the preflight failing). Any origin may call: these routes carry no
// cookie and no secret (the app id and the device's own ids are public by nature; receipts carry their own proof),
// so `*` grants nothing a script could not already do with curl. Answers name the headers a script needs to read:
// ETag (in-app pending), Retry-After (429 and 503), the request ids, and the mark of an unknown device (the SDK
// registers again when it sees it).
import { UNKNOWN_DEVICE_HEADER } from './unknown-device'
import type { Reply } from './reply'

const ALLOW_ORIGIN = 'Access-Control-Allow-Origin'
const EXPOSE = `ETag, Retry-After, X-Pm-Request-Id, X-Request-Id, ${UNKNOWN_DEVICE_HEADER}`
/** Headers a device request may carry; the SDK sends only the first two. */
const ALLOW_HEADERS = 'Content-Type, If-None-Match, X-Request-Id, Traceparent'
/** How long a browser may reuse a preflight (Chromium caps it at 2 hours, Firefox at 24). */
const MAX_AGE_S = '86400'

/** The answer with the CORS headers added (the reply's own headers win on a clash). */
export function withCors(reply: Reply): Reply {
  return { ...reply, headers: { [ALLOW_ORIGIN]: '*', 'Access-Control-Expose-Headers': EXPOSE, ...reply.headers } }
}

/** The answer to a preflight of a path whose CORS methods are `methods` (the list may still grow at start-up). */
export function preflightReply(methods: readonly string[]): Reply {
  return {
    status: 204,
    headers: {
      [ALLOW_ORIGIN]: '*',
      'Access-Control-Allow-Methods': [...methods, 'OPTIONS'].join(', '),
      'Access-Control-Allow-Headers': ALLOW_HEADERS,
      'Access-Control-Max-Age': MAX_AGE_S,
    },
  }
}
