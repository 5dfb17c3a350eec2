// The providers' HTTP/2 pool options as a service would make them from this environment (PM_PROVIDER_HTTP2 and the
// PM_H2_* limits, read by loadConfig): the provider tests run once on our client and once with PM_PROVIDER_HTTP2=node
// (test/integration/providers-*-node.test.ts).
import { loadConfig } from '../../src/core/config'
import { providerPoolOptions } from '../../src/providers/http2'

export function providerHttp2FromEnv(): ReturnType<typeof providerPoolOptions> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k === 'PM_PROVIDER_HTTP2' || k.startsWith('PM_H2_')))
  return providerPoolOptions(loadConfig(env))
}
