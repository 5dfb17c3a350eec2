// Who the client is when Pombo sits behind proxies (PM_TRUST_PROXY): the right-most X-Forwarded-For entry that is
// not itself a trusted proxy. Without trusted proxies the header is ignored, so a client cannot pick its own address.
import { BlockList, isIPv4, isIPv6 } from 'node:net'

export class ProxyTrust {
  readonly #list = new BlockList()
  readonly #any: boolean

  /** False when no proxy is trusted: X-Forwarded-For is then never read. */
  get active(): boolean {
    return this.#any
  }

  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const [addr = '', bits] = e.split('/')
      const type = isIPv6(addr) ? 'ipv6' : 'ipv4'
      if (bits === undefined) this.#list.addAddress(addr, type)
      else this.#list.addSubnet(addr, Number(bits), type)
    }
    this.#any = entries.length > 0
  }

  trusts(addr: string): boolean {
    if (!this.#any) return false
    if (isIPv4(addr)) return this.#list.check(addr, 'ipv4')
    if (isIPv6(addr)) return this.#list.check(addr, 'ipv6')
    return false
  }

  clientIp(peer: string, forwardedFor: string | undefined): string {
    if (!forwardedFor || !this.trusts(peer)) return peer
    const hops = forwardedFor
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string
      if (!this.trusts(hop)) return hop
    }
    return hops[0] ?? peer
  }
}
