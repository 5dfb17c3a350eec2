// Which addresses a webhook may reach (docs/spec/contract.md PM_WEBHOOK_ALLOW_PRIVATE): loopback, private, link-local,
// unique-local, CGNAT, multicast and reserved ranges are refused unless allowed. The check runs on the resolved
// address at connection time (a custom `lookup`), so a name that resolves to 10.0.0.1 is refused, not just the
// literal; IP literals skip DNS and are checked before the request.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { embeddedIpv4, parseIpv6 } from '../core/ip'

const blocked = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, bits, 'ipv4')
}
for (const [net, bits] of [
  ['::', 128], // unspecified
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into the operator's own IPv4 space
  ['2001::', 32], // Teredo: the client's IPv4 is obfuscated inside; a tunnel, never a webhook host
  ['2001:db8::', 32], // documentation
] as const) {
  blocked.addSubnet(net, bits, 'ipv6')
}

/** True when a webhook must not connect to `ip` without PM_WEBHOOK_ALLOW_PRIVATE=1. */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip)
  if (family === 4) return blocked.check(ip, 'ipv4')
  if (family !== 6) return true // not an address at all: refuse
  const groups = parseIpv6(ip)
  if (!groups) return true
  // Forms that reach an IPv4 host (mapped, compatible, translated, NAT64, 6to4) are judged by that host.
  const v4 = embeddedIpv4(groups)
  if (v4 !== null) return blocked.check(v4, 'ipv4')
  return blocked.check(groups.map((x) => x.toString(16)).join(':'), 'ipv6')
}

/** Raised by the lookup (or for a literal) when every address of the destination is refused. */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError'
  readonly code = 'EPM_PRIVATE_ADDRESS'
}

/** The host of a URL as net.connect sees it (brackets of an IPv6 literal removed). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

/** Refuses a literal private address before any connection (net.connect skips `lookup` for literals). */
export function checkLiteral(host: string, allowPrivate: boolean): void {
  if (!allowPrivate && isIP(host) && isPrivateAddress(host)) {
    throw new RefusedAddressError(`endereço ${host} é privado ou de loopback`)
  }
}

/**
 * A `lookup` for https.request: resolves every address, keeps only the allowed ones, and hands those to the
 * socket, so the connection goes to an address that was checked (no second resolution an attacker could flip).
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const list = (addresses as LookupAddress[]).filter((a) => allowPrivate || !isPrivateAddress(a.address))
      if (list.length === 0) {
        // The host as given, never the addresses it resolved to: the reason reaches the tenant (the dashboard's
        // attempts, logs), and those addresses would map our internal network for them.
        return callback(new RefusedAddressError(`${hostname} resolve para endereço privado ou de loopback`), '', 0)
      }
      if ((options as { all?: boolean }).all) {
        ;(callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      } else {
        const first = list[0] as LookupAddress
        callback(null, first.address, first.family)
      }
    })
  }
}
