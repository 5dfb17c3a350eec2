// The providers' HTTP/2 client as configured: PM_PROVIDER_HTTP2 picks our own (the default) or node:http2 behind the
// same interface, PM_H2_* its limits (docs/configuration.md). Every pool that reaches a provider is made with these
// options, so the choice changes nothing else.
import type { Config } from '../core/config'
import type { H2PoolOptions } from '../h2/types'

export function providerPoolOptions(cfg: Pick<Config, 'providerHttp2'>): Pick<H2PoolOptions, 'client' | 'limits'> {
  const { client, ...limits } = cfg.providerHttp2
  return { client, limits }
}
