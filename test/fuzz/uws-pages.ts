// The answers the current uWebSockets.js build (@btc-vision/uwebsockets.js 20.57, Node 22 and 24 here) writes
// itself, while it parses a request head, before any Pombo code runs: Pombo cannot give them a request id or the
// error envelope, and cannot turn its 505 into a 400. Measured with a bare app of that build on Node 22 and 24 (the
// route never called; docs/runtimes.md, test/fuzz/README.md):
//   - a byte 0x00-0x20 but CR in the request-target (NUL, TAB, LF, a space, ...): its 505 page; checked before
//     anything else in the head, so whatever the head's size;
//   - a head (request line, header lines, blank line) over 4,096 bytes, in one read or several, or more than 98
//     header lines (Host included): its 431 page.
// Each page is written whole, with `Connection: close` as its only header, and the connection closed at once. The
// Node 20 build writes none of them (it drops such requests without an answer).
//
// The fuzzer lets a page through its request-id, envelope, status and no-5xx checks only when the loaded build is the
// current one, the request has the shape that makes that build write that page, and the answer is that page byte for
// byte, closed. Any other answer to such a request is judged like any of Pombo's.
import { CURRENT_BUILD } from '../../src/http/uws'
import { headBytes, type WireAnswer, type WireRequest } from './wire'

/** The current build's head limit (measured; its binary names a UWS_HTTP_MAX_HEADERS_SIZE setting, left unset). */
export const UWS_MAX_HEAD_BYTES = 4096
/** The most header lines (Host included) the current build takes. */
export const UWS_MAX_HEADER_LINES = 98

export interface UwsPage {
  status: 431 | 505
  /** Status line and header lines, without the blank line. */
  head: string
  body: string
  /** Why the build writes it, as a reader wants it in a report. */
  why: string
}

export const UWS_PAGES = {
  505: {
    status: 505,
    head: 'HTTP/1.1 505 HTTP Version Not Supported\r\nConnection: close',
    body: '<h1>HTTP Version Not Supported</h1><p>This server does not support HTTP/1.0.</p><hr><i>uWebSockets/20 Server</i>',
    why: 'a control byte or a space in the request-target',
  },
  431: {
    status: 431,
    head: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close',
    body: '<h1>Request Header Fields Too Large</h1><hr><i>uWebSockets/20 Server</i>',
    why: `a head over ${UWS_MAX_HEAD_BYTES} bytes or over ${UWS_MAX_HEADER_LINES} header lines`,
  },
} as const satisfies Record<number, UwsPage>

/** Header lines of the request's head, Host included (as `headBytes` writes it). */
export function headerLines(req: WireRequest): number {
  return 1 + req.headers.length + (req.body === null ? 0 : 1)
}

/** The page `build` writes itself for `req`, or null when the request reaches Pombo (or was not measured). */
export function uwsPageFor(build: string, req: WireRequest): UwsPage | null {
  if (build !== CURRENT_BUILD) return null
  // A CR in the target makes the build wait for more of the request line instead (not a page; never sent).
  if (req.target.includes(0x0d)) return null
  if (req.target.some((b) => b <= 0x20)) return UWS_PAGES[505]
  if (headBytes(req).length > UWS_MAX_HEAD_BYTES || headerLines(req) > UWS_MAX_HEADER_LINES) return UWS_PAGES[431]
  return null
}

/** The answer is exactly `page`: its status line and one header, its body, and the connection closed after it. */
export function isPage(a: WireAnswer, page: UwsPage): boolean {
  return a.status === page.status && a.head === page.head && a.body.toString('latin1') === page.body && a.closed
}
