// Where a stored credential may send our servers (issue #31, point 2). A service-account JSON is a file an app owner
// uploads, and its `token_uri` is the one address inside it that Pombo calls (FCM's OAuth token endpoint, as
// Google's own clients do): left free, it would make a worker or the dashboard's connection test POST a signed
// assertion to any address, loopback and the operator's private network included. So one rule, applied when a
// credential is stored and again before every token request:
//
//   - Google's token endpoint, https://oauth2.googleapis.com/token, is always accepted. The older
//     https://accounts.google.com/o/oauth2/token (service accounts made before 2019) is Google's too: it is read as
//     today's endpoint, the only one ever called;
//   - when the FCM base URL in effect names another host (a test provider, a simulator), an https URL on that same
//     host (any port, any path) is accepted too: the operator already trusts that host with every push;
//   - anything else is refused.
//
// The other URLs of a service-account file (auth_uri, auth_provider_x509_cert_url, client_x509_cert_url,
// universe_domain) are never called by Pombo: they are kept as they came and not checked. Nor is any URL of
// google-services.json (firebase_url, storage_bucket: served back as public parameters, never fetched). An APNs
// credential holds no URL. The one other address a credential can carry is a simulator's (`simulator`, written only
// by `pombo simulate`), checked by simulatorTargetRefusal below.

/** Google's OAuth token endpoint for service accounts. */
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token'
/** Google's endpoint of older service-account files: the same service, called as GOOGLE_TOKEN_URI. */
export const LEGACY_GOOGLE_TOKEN_URI = 'https://accounts.google.com/o/oauth2/token'
/** The host of FCM HTTP v1 (PM_FCM_BASE_URL's default). */
export const GOOGLE_FCM_HOST = 'fcm.googleapis.com'

function parseHttps(v: unknown): URL | null {
  if (typeof v !== 'string') return null
  try {
    const u = new URL(v)
    return u.protocol === 'https:' && u.username === '' && u.password === '' && u.hostname !== '' ? u : null
  } catch {
    return null
  }
}

/** The host other than Google's that PM_FCM_BASE_URL names (a test provider), or null when it is Google's. */
function testProviderHost(fcmBaseUrl: string): string | null {
  let host: string
  try {
    host = new URL(fcmBaseUrl).hostname
  } catch {
    return null
  }
  return host === '' || host === GOOGLE_FCM_HOST ? null : host
}

export type TokenUriCheck = { ok: true; uri: string } | { ok: false; reason: string }

/**
 * The token endpoint to call for `tokenUri` (undefined: the file had none, and Google's is used, as Google's clients
 * do), or why it is refused: one line naming the field and what is accepted, safe to show the uploader.
 */
export function checkTokenUri(tokenUri: unknown, fcmBaseUrl: string): TokenUriCheck {
  if (tokenUri === undefined) return { ok: true, uri: GOOGLE_TOKEN_URI }
  const host = testProviderHost(fcmBaseUrl)
  const accepted = host
    ? `Google's token endpoint ${GOOGLE_TOKEN_URI} or an https URL on ${host} (the host of PM_FCM_BASE_URL)`
    : `Google's token endpoint ${GOOGLE_TOKEN_URI}`
  const u = parseHttps(tokenUri)
  if (!u) return { ok: false, reason: `token_uri must be ${accepted}; it is not an https URL` }
  if (u.href === GOOGLE_TOKEN_URI || u.href === LEGACY_GOOGLE_TOKEN_URI) return { ok: true, uri: GOOGLE_TOKEN_URI }
  if (host !== null && u.hostname === host) return { ok: true, uri: u.href }
  return { ok: false, reason: `token_uri must be ${accepted}; got an address on ${u.hostname}` }
}

/** Hosts a simulator may listen on: `pombo simulate` starts them on this machine. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/**
 * A simulator's address inside a simulator credential: an https URL on a loopback host, or why not. Only
 * `pombo simulate` writes one, and only an instance that allows simulators reads it; the loopback rule keeps even
 * such an instance from being aimed at another machine by a credential.
 */
export function simulatorTargetRefusal(url: unknown): string | null {
  const u = parseHttps(url)
  if (!u || !LOOPBACK.has(u.hostname)) return 'simulator address must be an https URL on a loopback host'
  return null
}
