// What the device can say about itself without asking anyone anything (never a permission prompt): language, UTC
// offset and zone name, the platform, the network type, and whether notifications are allowed, as far as the
// runtime exposes them. Every probe is guarded: a runtime without `navigator`, `Intl` or `Notification` (Node, a
// service worker) simply reports less.

type Anyish = Record<string, unknown> | undefined

const g = globalThis as unknown as Record<string, unknown>
const nav = (): Anyish => (typeof g.navigator === 'object' ? (g.navigator as Record<string, unknown>) : undefined)

/** The primary language subtag, lower case (`pt-BR` → `pt`): the short code the service stores. */
export function shortLanguage(tag: string | undefined): string | undefined {
  if (!tag) return undefined
  const m = /^([A-Za-z]{2,8})(?:[-_]|$)/.exec(tag.trim())
  return m?.[1]?.toLowerCase()
}

export function detectLanguage(): string | undefined {
  const n = nav()
  const fromNav = typeof n?.language === 'string' ? n.language : undefined
  let fromIntl: string | undefined
  try {
    fromIntl = Intl.DateTimeFormat().resolvedOptions().locale
  } catch {
    fromIntl = undefined
  }
  return shortLanguage(fromNav ?? fromIntl)
}

/** Seconds east of UTC now (the service's `timezone`: an integer offset, never a zone name). */
export function utcOffsetSeconds(at: Date = new Date()): number {
  return -at.getTimezoneOffset() * 60
}

export function detectTimezoneId(): string | undefined {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || undefined
  } catch {
    return undefined
  }
}

export function detectOs(): string | undefined {
  const n = nav()
  const uad = n?.userAgentData as Anyish
  if (typeof uad?.platform === 'string' && uad.platform) return uad.platform
  const proc = g.process as Anyish
  const versions = proc?.versions as Anyish
  if (typeof proc?.platform === 'string' && typeof versions?.node === 'string')
    return `${proc.platform} (Node.js ${versions.node})`
  if (typeof n?.platform === 'string' && n.platform) return n.platform
  return undefined
}

export function detectNetType(): string | undefined {
  const c = nav()?.connection as Anyish
  return typeof c?.effectiveType === 'string' ? c.effectiveType : undefined
}

/** The service's permission bitmask: bit 1 allowed, bit 2 the prompt was shown. */
export const PERMISSION = { granted: 3, denied: 2, default: 0 } as const

/** The Notification API's state, read (never requested), as the bitmask; undefined where there is none. */
export function detectPermission(): number | undefined {
  const N = g.Notification as Anyish
  const p = N?.permission
  return p === 'granted' || p === 'denied' || p === 'default' ? PERMISSION[p] : undefined
}

/** A random UUID v4 (crypto.randomUUID where present, else getRandomValues, else Math.random). */
export function uuid(): string {
  const c = g.crypto as { randomUUID?: () => string; getRandomValues?: (a: Uint8Array) => Uint8Array } | undefined
  if (typeof c?.randomUUID === 'function') return c.randomUUID()
  const b = new Uint8Array(16)
  if (typeof c?.getRandomValues === 'function') c.getRandomValues(b)
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256)
  b[6] = ((b[6] as number) & 0x0f) | 0x40
  b[8] = ((b[8] as number) & 0x3f) | 0x80
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
