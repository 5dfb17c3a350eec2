// Starts a real service for one test: its own Postgres schema and Redis prefix (so test files run in parallel),
// port 0, a controllable clock, logs captured as JSON. Teardown is registered on the test that asked for it.
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import Redis from 'ioredis'
import pg from 'pg'
import {
  type Config,
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
  type Limits,
  loadConfig,
  type Webhook,
} from '../../src/core/config'
import { createLogger } from '../../src/core/log'
import type { Role } from '../../src/service/roles'
import { Service } from '../../src/service/service'
import { CLUSTER_BY_DEFAULT, sharedClusterNodes } from './redis-cluster'
import { request } from './http'
import { claimSchema, recycleSchema } from './schema-pool'

export const PLATFORM_KEY = 'pm_platform_test_0123456789abcdef'
export const VAULT_KEY = 'ab'.repeat(32)
/** scrypt's N for dashboard passwords in tests (PM_DASHBOARD_SCRYPT_N): the lowest the service accepts. */
export const TEST_SCRYPT_N = '16384'
export const DATABASE_URL = process.env.DATABASE_URL || DEFAULT_DATABASE_URL
export const REDIS_URL = process.env.REDIS_URL || DEFAULT_REDIS_URL

interface Tap {
  teardown(fn: () => unknown): void
}

/** A clock the test moves by hand; starts at the real time so Postgres timestamps look ordinary. */
export class FakeClock {
  constructor(public ms = Date.now()) {}
  now = (): number => this.ms
  advance(ms: number): void {
    this.ms += ms
  }
}

export interface StartOptions {
  env?: Record<string, string | undefined>
  limits?: Partial<Limits>
  clock?: FakeClock
  roles?: Role[]
  /** Run against another service's schema and Redis prefix: a second instance of the same deployment. */
  shareWith?: TestService
  /** Run the periodic jobs (sweeper, MAU); off by default so tests drive them by hand, deterministically. */
  jobs?: boolean
  /** CA the delivery engine trusts (the fake providers'). */
  providerCa?: string
  /** Webhook dispatcher settings over the defaults (shorter ladder and timeout). */
  webhook?: Partial<Webhook>
  /** Run the webhook dispatcher (it runs with the worker role; `true` runs it in an api-only test service). */
  dispatcher?: boolean
  /** CA the webhook dispatcher trusts (the local receiver's). */
  webhookCa?: string
  /** Serve the confirmation stream (gRPC) on a free port (`svc.grpc.port`); off by default. */
  grpc?: boolean
  /** Serve the operations port on a free port (`svc.ops.port`, `opsUrl`); on by default, `false` turns it off. */
  ops?: boolean
  /** Log level of the captured logs (default info). */
  logLevel?: string
  /** The schema to use (dropped at the end like a generated one); default: a fresh `t_…`. */
  schema?: string
  /**
   * Connect to a Redis Cluster instead of REDIS_URL: `true` for the run's shared cluster, or the seeds of another
   * (REDIS_CLUSTER_NODES form). Default: the shared cluster when PM_TEST_REDIS=cluster, else the single Redis.
   */
  cluster?: boolean | string
}

export interface Answer {
  status: number
  headers: Headers
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  json: any
}

export interface CallOptions {
  body?: unknown
  headers?: Record<string, string>
  /** Send this exact text as the body (broken JSON, oversized bodies). */
  raw?: string | Buffer
}

export class TestService {
  constructor(
    readonly svc: Service,
    readonly cfg: Config,
    /** Every log line the service wrote, parsed. */
    readonly logs: Array<Record<string, unknown>>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.svc.api?.port}`
  }

  /** The operations port (metrics, health, readiness). */
  get opsUrl(): string {
    return `http://127.0.0.1:${this.svc.ops?.port}`
  }

  get dashboardUrl(): string {
    return `http://127.0.0.1:${this.svc.dashboard?.port}`
  }

  async call(method: string, path: string, o: CallOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...o.headers }
    let body: string | Buffer | undefined
    if (o.raw !== undefined) body = o.raw
    else if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await request(this.url + path, { method, headers, body })
    const text = res.text
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, text, json }
  }

  /** Creates an app through the real operator route. */
  async createApp(body: Record<string, unknown> = {}): Promise<{
    id: string
    api_key: string
    kid: string
    receipt_key: string
    rate_por_min: number
    nome: string
    criado_em: string
  }> {
    const r = await this.call('POST', '/api/v1/apps', {
      body: { nome: 'App de teste', ...body },
      headers: { authorization: `Bearer ${PLATFORM_KEY}` },
    })
    if (r.status !== 201) throw new Error(`createApp: ${r.status} ${r.text}`)
    return r.json
  }

  /** SQL against this service's schema. */
  async sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]> {
    const r = await this.svc.deps.db.query<R>(text, params)
    return r.rows
  }
}

function captureLogs(into: Array<Record<string, unknown>>): Writable {
  return new Writable({
    write(chunk, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) into.push(JSON.parse(line))
      cb()
    },
  })
}

export async function startService(t: Tap, o: StartOptions = {}): Promise<TestService> {
  const id = randomBytes(5).toString('hex')
  const want = o.cluster ?? (o.shareWith ? o.shareWith.cfg.redisClusterNodes !== null : CLUSTER_BY_DEFAULT)
  const clusterNodes =
    typeof want === 'string'
      ? want
      : want
        ? (o.shareWith?.cfg.redisClusterNodes?.map((n) => `${n.host}:${n.port}`).join(',') ?? (await sharedClusterNodes()))
        : undefined
  // A fresh schema: one the run's pool emptied (test/helpers/schema-pool.ts), else a new one that start migrates.
  const generated = !o.shareWith && !o.schema
  const claimed = generated ? await claimSchema(DATABASE_URL) : null
  const schema = o.shareWith?.cfg.dbSchema ?? o.schema ?? claimed ?? `t_${id}`
  const prefix = o.shareWith?.cfg.redisPrefix ?? `pmt_${id}`
  const base = loadConfig(
    {
      DATABASE_URL,
      REDIS_URL,
      PM_PLATFORM_KEY: PLATFORM_KEY,
      PM_VAULT_KEY: VAULT_KEY,
      PORT: '0',
      PM_DASHBOARD_PORT: '0',
      PM_GIT_COMMIT: 'test-commit',
      PM_EXPORT_DIR: `/tmp/pombo-test-exports/${id}`,
      REDIS_CLUSTER_NODES: clusterNodes,
      // Tests read /metrics right after what they measure: every scrape computes (a test of the cache sets it).
      PM_OPS_METRICS_CACHE_MS: '0',
      // Dashboard passwords at scrypt's lowest accepted cost (16 MiB, about an eighth of the default's time): tests
      // sign in hundreds of times. dashboard-people checks the default cost and the upgrade between costs.
      PM_DASHBOARD_SCRYPT_N: TEST_SCRYPT_N,
      ...o.env,
    },
    {
      dbSchema: schema,
      redisPrefix: prefix,
      limits: o.limits as Limits | undefined,
      grpcPort: o.grpc ? 0 : null,
      opsPort: o.ops === false ? null : 0,
    },
  )
  const cfg: Config = o.webhook ? Object.freeze({ ...base, webhook: Object.freeze({ ...base.webhook, ...o.webhook }) }) : base
  const logs: Array<Record<string, unknown>> = []
  ;(globalThis as { __pmServiceStarts?: number }).__pmServiceStarts =
    ((globalThis as { __pmServiceStarts?: number }).__pmServiceStarts ?? 0) + (o.shareWith ? 0 : 1)
  const svc = await Service.start(cfg, {
    roles: o.roles ?? ['api'],
    log: createLogger(o.logLevel ?? 'info', captureLogs(logs)),
    clock: o.clock?.now,
    // A schema from the pool matched the migrations' catalog when it was emptied, and keeps their schema_migrations
    // rows: the runner would find nothing to apply, and its session of its own is a fork of Postgres (~35 ms of its
    // CPU here) for every service. A new schema, or one a test names, is migrated as before.
    migrate: !o.shareWith && claimed === null,
    jobs: o.jobs ?? false,
    providerCa: o.providerCa,
    dispatcher: o.dispatcher,
    webhookCa: o.webhookCa,
  })
  const ts = new TestService(svc, cfg, logs)
  t.teardown(async () => {
    await svc.stop()
    if (!o.shareWith) await dropNamespace(schema, prefix, cfg.redisClusterNodes, generated)
  })
  return ts
}

/** Drops the service's Redis keys, and its schema, or gives a generated schema back to the run's pool. */
async function dropNamespace(
  schema: string,
  prefix: string,
  cluster: Config['redisClusterNodes'],
  generated: boolean,
): Promise<void> {
  if (generated) await recycleSchema(DATABASE_URL, schema)
  else {
    const c = new pg.Client({ connectionString: DATABASE_URL })
    await c.connect()
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await c.end()
  }
  if (!cluster) {
    const r = new Redis(REDIS_URL)
    await dropKeys(r, prefix)
    r.disconnect()
    return
  }
  // SCAN sees one node's keys: every seed (each a master in the test clusters) is scanned on a plain connection, and
  // each key deleted on its own node. Best effort: the cluster is thrown away at the end of the run anyway, and a
  // busy machine must not fail a test over its cleanup.
  await Promise.all(
    cluster.map(async (n) => {
      const r = new Redis({ host: n.host, port: n.port, lazyConnect: true, maxRetriesPerRequest: 3 })
      r.on('error', () => {})
      try {
        await r.connect()
        await dropKeys(r, prefix)
      } catch {
        // a node that is down (a failover test) keeps its keys
      } finally {
        r.disconnect()
      }
    }),
  )
}

async function dropKeys(r: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    if (keys.length) {
      const pipe = r.pipeline()
      for (const k of keys) pipe.del(k)
      await pipe.exec()
    }
    cursor = next
  } while (cursor !== '0')
}

export function basic(key: string): Record<string, string> {
  return { authorization: `Basic ${key}` }
}
