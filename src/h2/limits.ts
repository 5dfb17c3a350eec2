// What a peer may make the HTTP/2 client hold, wait for or answer: one setting per limit, defaults after nghttp2 (and
// node:http2, which runs over it), so that switching to node:http2 changes nothing a peer could notice. A peer past
// any of them ends its session with GOAWAY (README.md, "Limits"); the answer body cap alone refuses one stream.

export interface H2Limits {
  /** Header fields in one response head or trailer block (node:http2's maxHeaderListPairs: 128). */
  maxHeaderListPairs: number
  /**
   * One decoded header list, counted as RFC 9113 §6.5.2 counts it (name + value + 32 octets a field) and announced
   * as SETTINGS_MAX_HEADER_LIST_SIZE (node:http2's default: 65,535). The block's bytes on the wire are held to it
   * too, every HEADERS and CONTINUATION frame counted with its 9-byte frame header, empty or not.
   */
  maxHeaderListBytes: number
  /** CONTINUATION frames after one HEADERS frame (nghttp2's max_continuations: 8). */
  maxContinuations: number
  /** An open header block (HEADERS without END_HEADERS) must end within this; every other frame waits behind it. */
  headerBlockTimeoutMs: number
  /** The peer's SETTINGS must come first and within this of our preface; ours must be acknowledged within it too
   *  (RFC 9113 §3.4, §6.5.3; nghttpx's settings timeout: 10 s). */
  settingsTimeoutMs: number
  /** Entries in one SETTINGS frame (nghttp2's max_settings, node:http2's maxSettings: 32). */
  maxSettingsEntries: number
  /** Frames we owe the peer (PING and SETTINGS acknowledgements, RST_STREAM) queued and not yet written: a peer that
   *  asks faster than it reads floods us (nghttp2's max_outbound_ack: 1,000). */
  maxQueuedControlFrames: number
  /** Our own PINGs waiting for their acknowledgement (node:http2's maxOutstandingPings: 10). */
  maxOutstandingPings: number
  /** Bytes of one answer body; a longer answer fails its request (RST_STREAM CANCEL) and the session goes on. A
   *  provider answers a few hundred bytes. The stream window we announce is this plus one, never reopened. */
  maxResponseBodyBytes: number
  /** Our connection receive window: answer bytes the peer may send before we release them (a body is released once
   *  its stream ends), so it bounds the answer bytes one session holds. At least 65,535 and above the body cap. */
  connectionWindowBytes: number
}

export const DEFAULT_H2_LIMITS: Readonly<H2Limits> = Object.freeze({
  maxHeaderListPairs: 128,
  maxHeaderListBytes: 65_535,
  maxContinuations: 8,
  headerBlockTimeoutMs: 5_000,
  settingsTimeoutMs: 10_000,
  maxSettingsEntries: 32,
  maxQueuedControlFrames: 1_000,
  maxOutstandingPings: 10,
  maxResponseBodyBytes: 64 * 1024,
  connectionWindowBytes: 1024 * 1024,
})

/** The largest flow-control window (RFC 9113 §6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1
/** The connection window starts at 65,535 and can only grow (§6.9.2). */
const MIN_CONNECTION_WINDOW = 65_535

/** `o` over the defaults; throws RangeError naming a setting that is not a positive integer or breaks another. */
export function resolveLimits(o: Partial<H2Limits> = {}): Readonly<H2Limits> {
  const out: H2Limits = { ...DEFAULT_H2_LIMITS }
  for (const key of Object.keys(DEFAULT_H2_LIMITS) as Array<keyof H2Limits>) {
    const v = o[key]
    if (v === undefined) continue
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`H2 limit ${key}: expected a positive integer, got ${v}`)
    out[key] = v
  }
  if (out.maxResponseBodyBytes >= MAX_WINDOW) throw new RangeError(`H2 limit maxResponseBodyBytes: at most ${MAX_WINDOW - 1}`)
  if (out.connectionWindowBytes > MAX_WINDOW) throw new RangeError(`H2 limit connectionWindowBytes: at most ${MAX_WINDOW}`)
  if (out.connectionWindowBytes < Math.max(MIN_CONNECTION_WINDOW, out.maxResponseBodyBytes + 1)) {
    throw new RangeError(
      `H2 limit connectionWindowBytes: at least 65,535 and above maxResponseBodyBytes (${out.maxResponseBodyBytes}), got ${out.connectionWindowBytes}`,
    )
  }
  return Object.freeze(out)
}
