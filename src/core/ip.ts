// IP address helpers shared by the per-IP limiter and the webhook address guard: an IPv6 parser that understands
// every textual form (RFC 4291 §2.2: `::` compression, a dotted IPv4 tail, a zone), and the IPv4 address an IPv6
// address carries inside it.
import { isIPv4 } from 'node:net'

/** The 8 16-bit groups of an IPv6 address, or null when `s` is not one. */
export function parseIpv6(s: string): number[] | null {
  const text = s.includes('%') ? s.slice(0, s.indexOf('%')) : s
  if (text.length < 2 || text.length > 45) return null
  let head = text
  let v4: number[] | null = null
  const lastColon = text.lastIndexOf(':')
  if (text.includes('.', lastColon)) {
    const tail = text.slice(lastColon + 1)
    if (!isIPv4(tail)) return null
    const o = tail.split('.').map(Number) as [number, number, number, number]
    v4 = [(o[0] << 8) | o[1], (o[2] << 8) | o[3]]
    head = `${text.slice(0, lastColon + 1)}0:0`
  }
  const halves = head.split('::')
  if (halves.length > 2) return null
  const part = (p: string): number[] | null => {
    if (p === '') return []
    const out: number[] = []
    for (const g of p.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null
      out.push(Number.parseInt(g, 16))
    }
    return out
  }
  const left = part(halves[0] as string)
  const right = halves.length === 2 ? part(halves[1] as string) : []
  if (!left || !right) return null
  let groups: number[]
  if (halves.length === 2) {
    const missing = 8 - left.length - right.length
    if (missing < 1) return null
    groups = [...left, ...new Array<number>(missing).fill(0), ...right]
  } else {
    groups = left
  }
  if (groups.length !== 8) return null
  if (v4) {
    groups[6] = v4[0] as number
    groups[7] = v4[1] as number
  }
  return groups
}

function v4Text(hi: number, lo: number): string {
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
}

/**
 * The IPv4 address an IPv6 address stands for or carries, when it is one of the forms that reach an IPv4 host:
 * IPv4-compatible `::a.b.c.d` (::/96, deprecated but still routed by some stacks), IPv4-mapped `::ffff:0:0/96`,
 * IPv4-translated `::ffff:0:0:0/96` (SIIT), NAT64 `64:ff9b::/96`, and 6to4 `2002::/16` (the IPv4 in bits 16–47).
 */
export function embeddedIpv4(g: readonly number[]): string | null {
  const [a, b, c, d, e, f, hi, lo] = g as [number, number, number, number, number, number, number, number]
  if (a === 0 && b === 0 && c === 0 && d === 0) {
    if (e === 0 && (f === 0 || f === 0xffff)) return v4Text(hi, lo)
    if (e === 0xffff && f === 0) return v4Text(hi, lo)
  }
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return v4Text(hi, lo)
  if (a === 0x2002) return v4Text(b, c)
  return null
}

/**
 * Whom a request is counted against: an IPv4 address as it is, an IPv6 address by its /64 (one subscriber's
 * network: a host picks any of its 2^64 addresses at will), an IPv4-mapped IPv6 address as its IPv4.
 */
export function clientKey(ip: string): string {
  if (!ip.includes(':')) return ip
  const g = parseIpv6(ip)
  if (!g) return ip
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return v4Text(g[6] as number, g[7] as number)
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`
}
