import t from 'tap'
import { ProxyTrust } from '../../src/http/client-ip'

t.test('X-Forwarded-For is ignored unless the peer is a trusted proxy', async (t) => {
  const none = new ProxyTrust([])
  t.equal(none.clientIp('10.0.0.5', '1.2.3.4'), '10.0.0.5')
  const p = new ProxyTrust(['10.0.0.0/8', '::1'])
  t.equal(p.clientIp('10.0.0.5', '1.2.3.4'), '1.2.3.4')
  t.equal(p.clientIp('192.168.0.1', '1.2.3.4'), '192.168.0.1', 'untrusted peer')
  t.equal(p.clientIp('::1', '1.2.3.4'), '1.2.3.4', 'IPv6 proxy')
  t.equal(p.clientIp('10.0.0.5', undefined), '10.0.0.5')
})

t.test('the client is the right-most address that is not a trusted proxy (a client cannot spoof past it)', async (t) => {
  const p = new ProxyTrust(['10.0.0.0/8'])
  t.equal(p.clientIp('10.0.0.5', '6.6.6.6, 1.2.3.4, 10.0.0.9'), '1.2.3.4')
  t.equal(p.clientIp('10.0.0.5', '10.0.0.7, 10.0.0.9'), '10.0.0.7', 'every hop trusted: the first')
})
