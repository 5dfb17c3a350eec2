// Configuration: one table of defaults (the Limits table of docs/spec/push-delivery-spec.md, the environment of
// docs/spec/contract.md, and every tuning number), read once, frozen. Every variable is listed in docs/configuration.md.
import { isIP } from 'node:net'
import { redactUrl } from './redact'

// Defaults of the Postgres settings that the pool and the budget also read (src/db/pool.ts, src/db/budget.ts).
/** The least PM_PG_POOL accepts: the dispatcher's 2, the listener's 1, and 3 for the main pool. */
export const MIN_PG_BUDGET = 6

/** The server-side statement timeout by default: a runaway statement never holds a connection (and its locks) for
 *  longer. */
export const STATEMENT_TIMEOUT_MS = 30_000

/**
 * A pooled connection's life by default, in seconds. Postgres makes a prepared statement's generic plan once per
 * connection and keeps it until something invalidates it (an ANALYZE; autovacuum may be off or late): a plan made
 * while `sends` holds a few hundred rows walks the whole table on every outcome batch once it holds tens of
 * thousands (docs/design/throughput.md). A new connection plans with the table as it is; reconnecting every few
 * minutes costs nothing measurable.
 */
export const PG_CONN_LIFETIME_S = 600

export interface Config {
  readonly port: number
  readonly dashboardPort: number
  /** The confirmation stream's gRPC port (PM_GRPC_PORT); null: off (`0` in the environment). 0 here (tests): any. */
  readonly grpcPort: number | null
  /** PM_GRPC_TLS_CERT / PM_GRPC_TLS_KEY: PEM files; the confirmation stream serves TLS with them. null: plaintext
   *  (API keys travel in its metadata: put it behind TLS, as compose.yaml's nginx does). */
  readonly grpcTls: { readonly certFile: string; readonly keyFile: string } | null
  /** The operations port (PM_OPS_PORT: /metrics, /healthz, /readyz) of every process; null: off (`0` in the
   *  environment). 0 here (tests): any free port. */
  readonly opsPort: number | null
  /** PM_ACCESS_LOG: `all` (a line per request; the hot routes' at debug), `errors` (answers ≥ 400), `off`. */
  readonly accessLog: 'all' | 'errors' | 'off'
  /** PM_DRAIN_TIMEOUT_MS: how long a graceful stop may take before the process exits anyway (a second SIGTERM
   *  also ends it at once). */
  readonly drainTimeoutMs: number
  /** PM_SERVE_WORKERS: delivery worker processes `pombo serve` starts beside its other roles (src/group/): the API
   *  and the workers then use separate cores. 0: the worker role runs in the serving process itself. */
  readonly serveWorkers: number
  /** NODE_OPTIONS as given: Node reads it itself; the group only looks whether it names the workers' young
   *  generation (src/group/supervisor.ts). */
  readonly nodeOptions: string
  readonly host: string
  readonly databaseUrl: string
  /** PM_DATABASE_DIRECT_URL: a session of its own (Postgres itself, or PgBouncer in session mode) for what a
   *  transaction pooler cannot carry: migrations (an advisory lock for the run, index builds outside transactions)
   *  and the confirmation stream's LISTEN. Default: DATABASE_URL. */
  readonly databaseDirectUrl: string
  /** PM_PGBOUNCER=transaction: DATABASE_URL is PgBouncer in transaction mode (no startup options, no named
   *  prepared statements; src/db/pool.ts). */
  readonly pgBouncer: boolean
  /** PM_STATEMENT_TIMEOUT_MS: the server-side statement timeout of every pooled connection (not with PgBouncer in
   *  transaction mode, which takes no startup options): a runaway statement never holds a connection, and its locks,
   *  for longer. */
  readonly statementTimeoutMs: number
  /** PM_PG_CONN_LIFETIME_S: a pooled connection is closed (at its next release) after this long, 0 never. Postgres
   *  keeps a prepared statement's generic plan for the connection's life, and one made while a table was small
   *  can stay wrong long after it grew (docs/design/throughput.md); a new connection plans again. */
  readonly pgConnLifetimeS: number
  /** PM_OPS_CHECK_TIMEOUT_MS: `/readyz` waits this long for each dependency before calling it not ready. */
  readonly opsCheckTimeoutMs: number
  /** PM_OPS_TOKEN: when set, `/metrics` answers only `Authorization: Bearer <token>` (`/healthz`, `/readyz` stay open). */
  readonly opsToken: string | null
  /** PM_OPS_METRICS_CACHE_MS: `/metrics` answers the text computed at most this long ago; one scrape at a time
   *  computes it (a scrape costs a Postgres query and two Redis commands per partition). 0: every scrape computes. */
  readonly opsMetricsCacheMs: number
  /** PM_MIGRATE_ON_START (default 1): `serve` applies pending migrations at start; 0: it refuses to start on a
   *  schema behind its release (a deployment runs `pombo migrate` once instead). */
  readonly migrateOnStart: boolean
  readonly redisUrl: string
  /** Seeds of a Redis Cluster (REDIS_CLUSTER_NODES); when set, the cluster is used and redisUrl is ignored. */
  readonly redisClusterNodes: ReadonlyArray<{ host: string; port: number }> | null
  /** Namespace for every Redis key and channel; tests give each service its own. */
  readonly redisPrefix: string
  /** Postgres schema holding Pombo's tables; tests give each service its own. */
  readonly dbSchema: string
  readonly platformKey: string | null
  readonly vaultKey: Buffer | null
  readonly publicBaseUrl: string
  readonly fcmBaseUrl: string
  readonly apnsBaseUrl: string | null
  readonly webhookAllowPrivate: boolean
  /** PM_ALLOW_SIMULATORS: this instance delivers the pushes of apps holding simulator credentials (stored by
   *  `pombo simulate`) to their simulators, and `pombo simulate` runs against it. Off by default (`pombo serve`, the
   *  image); `npm start` turns it on. Off, such credentials are refused at use and simulate refuses to start. */
  readonly allowSimulators: boolean
  readonly exportDir: string
  /** PM_ERASE_BATCH: rows removed per statement by `pombo app delete` / `pombo org delete`. */
  readonly eraseBatch: number
  readonly trustProxy: readonly string[]
  readonly limits: Limits
  readonly defaultPlan: 'free' | 'pro'
  /** Work streams: apps are hashed over this many partitions (PM_PARTITIONS); change it only with empty streams. */
  readonly partitions: number
  /** Background jobs: the hand-off sweeper and the MAU measurement. */
  readonly jobs: Jobs
  readonly delivery: Delivery
  /** The webhook dispatcher (src/confirmations). */
  readonly webhook: Webhook
  /** The confirmation stream (gRPC, src/confirmations/stream.ts). */
  readonly stream: ConfirmationStream
  /** The providers' HTTP/2 client and what a provider may make it hold (PM_PROVIDER_HTTP2, PM_H2_*; src/h2/README.md). */
  readonly providerHttp2: ProviderHttp2
  /** Device exports (src/devices/export.ts). */
  readonly exports: Exports
  /** Shown when the free plan refuses a send: the price of leaving it (billing configuration, PM_PRO_PRICE). */
  readonly proPrice: string
  /** The dashboard's sign-in and session settings (src/dashboard). */
  readonly dashboard: Dashboard
  readonly gitCommit: string
  readonly logLevel: string
  /** PM_LOG_FORMAT: `json` lines, `pretty` short coloured lines for a person, `auto` pretty on a terminal only. */
  readonly logFormat: 'json' | 'pretty' | 'auto'
  /** Pretty lines in colour at a terminal, unless NO_COLOR is set to anything (no-color.org). */
  readonly logColor: boolean
}

export interface Dashboard {
  /** {dashboard_url} (PM_DASHBOARD_URL): invitation links are built on it; https makes the session cookie Secure. */
  readonly url: string
  /** PM_DASHBOARD_SECRET (64 hex): signs session cookies. Unset: derived from PM_VAULT_KEY; neither: random per
   *  process (sessions then end with the process and do not cross instances). */
  readonly secret: Buffer | null
  /** PM_DASHBOARD_SESSION_H: a session ends this long after sign-in. */
  readonly sessionTtlMs: number
  /** PM_DASHBOARD_IDLE_MIN: a session also ends after this long without use. */
  readonly idleTtlMs: number
  /** PM_DASHBOARD_SIGNIN_PER_ACCOUNT: failed sign-ins of an account (from one source) before delays start. */
  readonly signinPerAccount: number
  /** PM_DASHBOARD_SIGNIN_PER_IP: sign-in attempts per 15 minutes per IPv4 address or IPv6 /64. */
  readonly signinPerIp: number
  readonly signinWindowMs: number
  /** PM_DASHBOARD_SIGNIN_DELAY_MAX_S: the longest delay a failing source (network or browser) reaches. */
  readonly signinDelayMaxMs: number
  /** PM_DASHBOARD_SIGNIN_ACCOUNT_WAIT_S: the longest a source without failures waits while its account is attacked. */
  readonly signinAccountWaitMaxMs: number
  /** PM_DASHBOARD_INVITE_H: a sign-up invitation (`pombo user invite`) is valid this long (the contract: 72 h). */
  readonly inviteTtlMs: number
  /** PM_DASHBOARD_SCRYPT_N: scrypt's N for new password hashes (a power of two, 2^14 to 2^20; default 2^17). */
  readonly scryptN: number
}

export interface Limits {
  /** the spec, Limits: requests per minute per source IP on public routes (0 disables). */
  readonly ipPerMin: number
  readonly registrationsPerHour: number
  readonly sendsPerSec: number
  readonly freeMau: number
  /** the spec, Limits: body caps. */
  readonly deviceBodyBytes: number
  readonly sendBodyBytes: number
  readonly appBodyBytes: number
  /** the spec, Authentication 6: key resolution cache. */
  readonly keyCacheTtlMs: number
  /** the spec, Authentication 7: the previous key stays valid this long after a rotation. */
  readonly rotationOverlapMs: number
  readonly exportsPerSec: number
  readonly exportValidityH: number
  /** the spec, Limits: devices per external_user_id. */
  readonly devicesPerExternalUser: number
  /** Registration group commit (src/devices/writer.ts): rows per statement (PM_REG_BATCH_MAX), statements in
   *  flight (PM_REG_WRITERS), registrations waiting before 503 (PM_REG_QUEUE_MAX). */
  readonly registrationBatchMax: number
  readonly registrationWriters: number
  readonly registrationQueueMax: number
  /** Send group commit (src/sends/writer.ts): sends per transaction (PM_SEND_BATCH_MAX), transactions in flight
   *  (PM_SEND_WRITERS: 16 in flight sustain ~8,600 single-device sends a second on 2 cores, 4 only ~6,600). */
  readonly sendBatchMax: number
  readonly sendWriters: number
  /** Receipt group commit (src/receipts/writer.ts): receipts per statement (PM_RECEIPT_BATCH_MAX), statements in
   *  flight (PM_RECEIPT_WRITERS). */
  readonly receiptBatchMax: number
  readonly receiptWriters: number
  /** Postgres connection budget of the process (PM_PG_POOL), split between its pools (src/db/budget.ts). */
  readonly pgPool: number
  /** the spec, Limits: reads of sends per second per app. */
  readonly readsPerSec: number
  /** A free-plan MAU measurement older than this is ignored: the send is allowed (PM_MAU_MAX_AGE_S). */
  readonly mauMaxAgeMs: number
  /** Nesting of objects and lists allowed in a JSON body (PM_JSON_MAX_DEPTH); deeper is a 400 naming the field. */
  readonly jsonMaxDepth: number
  /** Caller-chosen keys (Idempotency-Key, idempotency_key, external_id) are at most this many UTF-8 bytes
   *  (PM_IDEMPOTENCY_KEY_MAX_BYTES): far below what a Postgres btree entry holds (~2.7 KB). */
  readonly idempotencyKeyMaxBytes: number
  /** An app's `nome`, in UTF-8 bytes (PM_APP_NAME_MAX_BYTES). */
  readonly appNameMaxBytes: number
  /** PUT /confirmacoes waits at most this long for a lock (the webhook queue's, then the app's row) before a 503
   *  (PM_CONFIG_LOCK_TIMEOUT_MS): longer than one webhook attempt, so a slow destination alone never trips it. */
  readonly configLockTimeoutMs: number
  /** Key-resolution cache (the spec, Authentication 6): apps and keys kept (least recently used leave first), and a separate,
   *  smaller room for ids that resolved to nothing, so a flood of random ids never evicts the real ones
   *  (PM_KEY_CACHE_MAX, PM_KEY_CACHE_MISS_MAX). */
  readonly keyCacheMax: number
  readonly keyCacheMissMax: number
  /** PM_KEY_CACHE_MISS_TTL_MS: an id that resolved to nothing is answered from memory this long (at most
   *  keyCacheTtlMs); every change of an app's keys also drops every such entry on every instance. */
  readonly keyCacheMissTtlMs: number
  /** Per-process caches that start over when full rather than grow (PM_APP_CACHE_MAX: the in-app packages and
   *  receipt keys, per app; PM_READ_CACHE_MAX: repeat reads of sends; PM_INAPP_PROFILE_CACHE_MAX: device profiles
   *  of the pending route; PM_INAPP_MEMO_MAX: a device's last package selection; PM_INAPP_SERVED_SEEN_MAX:
   *  (campaign, device) pairs already recorded as served). */
  readonly appCacheMax: number
  readonly readCacheMax: number
  readonly inappProfileCacheMax: number
  readonly inappMemoMax: number
  readonly inappServedSeenMax: number
  /** the spec, Limits In-app: campaigns per package, package validity, events per batch, the `em` window. */
  readonly inappPackageMax: number
  readonly inappValidityS: number
  readonly inappEventsBatchMax: number
  readonly inappEventPastMs: number
  readonly inappEventFutureMs: number
  /** In-app events group commit (src/inapp/events-writer.ts): events per statement, statements in flight. */
  readonly inappEventWriters: number
  readonly inappEventBatchMax: number
  /** In-app served group commit (src/inapp/served-writer.ts): pairs per statement, statements in flight. */
  readonly inappServedWriters: number
  readonly inappServedBatchMax: number
  /** Jobs waiting for a batch before the writer answers 503: sends, receipts, in-app events. */
  readonly sendQueueMax: number
  readonly receiptQueueMax: number
  readonly inappEventQueueMax: number
  /** (campaign, device) pairs waiting for the served writer; beyond, a pair is dropped (best effort, logged). */
  readonly inappServedQueueMax: number
  /** the spec, Limits, send rows: ids per target list, segments per send, `ttl` default and maximum, `collapse_id`
   *  bytes, how far ahead `send_after` may be, the final payload (including the 96 injected bytes). */
  readonly sendTargetsMax: number
  readonly sendSegmentsMax: number
  readonly ttlDefaultS: number
  readonly ttlMaxS: number
  readonly collapseIdMaxBytes: number
  readonly sendAfterMaxDays: number
  readonly payloadMaxBytes: number
  /** the spec, Limits: an idempotency key lives this long; a concurrent call with the same key waits this long. */
  readonly idempotencyTtlDays: number
  readonly idempotencyWaitMs: number
  /** The in-flight mark of an idempotency key lives this long in Redis (a process that died mid-send frees the key
   *  after it; PM_IDEMPOTENCY_LOCK_TTL_MS); a waiting call looks for the first call's answer this often
   *  (PM_IDEMPOTENCY_POLL_MS). */
  readonly idempotencyLockTtlMs: number
  readonly idempotencyPollMs: number
  /** the spec, Limits: `limit` of the send listing, default and maximum. */
  readonly sendsListMax: number
  /** the spec, Limits: repeat reads of one send within this window are answered from a cache and not counted. */
  readonly readCacheMs: number
  /** the spec, Limits, registration rows: `identifier`, `external_user_id`, `tags` (serialized), `language` bytes,
   *  the `timezone` range, and where the best-effort profile texts are truncated. */
  readonly identifierMaxBytes: number
  readonly externalUserIdMaxBytes: number
  readonly tagsMaxBytes: number
  readonly languageMaxBytes: number
  readonly timezoneMaxS: number
  readonly profileTruncateBytes: number
  /** the spec, Limits: `rcpt` characters; the receipt acceptance window, from when the send was due. */
  readonly rcptMaxChars: number
  readonly receiptWindowDays: number
  /** the spec, App: `rate_por_min` of an app created without one. */
  readonly defaultRatePerMin: number
  /** the spec, Limits, in-app frequency and content: the `regras` defaults, the `atraso_ms` default and maximum, the
   *  `fechar_apos_ms` maximum, `titulo`/`corpo`/button text characters, blocks per language, `ocorrencia_n`, and the
   *  largest `inapp_cap_horas` and the value a new app starts with. */
  readonly inappCapTotalDefault: number
  readonly inappCooldownHDefault: number
  readonly inappPriorityDefault: number
  readonly inappDelayMsDefault: number
  readonly inappDelayMsMax: number
  readonly inappCloseAfterMsMax: number
  readonly inappTitleMaxChars: number
  readonly inappBodyMaxChars: number
  readonly inappButtonMaxChars: number
  readonly inappBlocksMax: number
  readonly inappOccurrenceMax: number
  readonly inappCapHoursMax: number
  readonly inappCapHoursDefault: number
}

export interface Jobs {
  readonly sweepEveryMs: number
  /** An enqueued send that no worker took within this is enqueued again. */
  readonly handoffGraceMs: number
  /** A list send of at most this many devices travels whole in its hand-off entry (src/handoff/carried.ts); 0: none. */
  readonly handoffCarryDevices: number
  readonly mauEveryMs: number
  /** Receipts of sends due more than this many days ago are archived (PM_RECEIPT_ARCHIVE_DAYS; the spec, Receipts
   *  `tardio`); the archival job runs every `receiptArchiveEveryMs`. */
  readonly receiptArchiveDays: number
  readonly receiptArchiveEveryMs: number
  /** How often the retention jobs (deliveries, webhook attempts, events) run on worker processes. */
  readonly retentionEveryMs: number
  /** Delivery rows of sends completed more than this many days ago are deleted (PM_DELIVERIES_RETENTION_DAYS). */
  readonly deliveriesRetentionDays: number
  /** Webhook attempts older than this many days are deleted (PM_WEBHOOK_ATTEMPTS_RETENTION_DAYS). */
  readonly webhookAttemptsRetentionDays: number
  /** Events older than this many days that no destination can still read are deleted (PM_EVENTS_RETENTION_DAYS). */
  readonly eventsRetentionDays: number
  /** Completed sends (message, audience and counters) are deleted this many days after they completed; never less than
   *  the receipt window, since a receipt is counted on its send (PM_SENDS_RETENTION_DAYS). */
  readonly sendsRetentionDays: number
  /** In-app events: a week partition is dropped once its last day is this many days old (PM_INAPP_EVENTS_RETENTION_DAYS). */
  readonly inappEventsRetentionDays: number
  /** In-app served records and reactivations older than this many days are deleted (PM_INAPP_SERVED_RETENTION_DAYS,
   *  PM_INAPP_REACTIVATIONS_RETENTION_DAYS). */
  readonly inappServedRetentionDays: number
  readonly inappReactivationsRetentionDays: number
  /** Abandoned webhook events are deleted this many days after they were given up (PM_WEBHOOK_ABANDONED_RETENTION_DAYS). */
  readonly webhookAbandonedRetentionDays: number
  /** Dashboard invitations are deleted this many days after they expired (PM_INVITES_RETENTION_DAYS). */
  readonly invitesRetentionDays: number
  /** A device whose token is dead is deleted this many days after it died (PM_DEAD_DEVICES_RETENTION_DAYS). */
  readonly deadDevicesRetentionDays: number
  /** Stream confirmations of an app with no reader are kept this many days (PM_STREAM_KEEP_DAYS); the app's
   *  `pm_problema` and a metric warn PM_STREAM_WARN_H hours before the first of them goes. */
  readonly streamKeepDays: number
  readonly streamWarnH: number
  /** Rows per DELETE of the retention job (PM_RETENTION_BATCH). */
  readonly retentionBatch: number
  /** After each full batch the retention job waits this many times the batch's own time (PM_RETENTION_PAUSE), so a
   *  long pass takes a bounded share of Postgres and the API's latency stays flat beside it. */
  readonly retentionPause: number
  /** Audit records older than this many days are deleted (PM_AUDIT_RETENTION_DAYS; 0: kept forever). */
  readonly auditRetentionDays: number
  /** Approximate cap of each work stream; the sweeper re-derives anything trimmed. */
  readonly streamMaxLen: number
}

/** The delivery engine (src/delivery). */
export interface Delivery {
  readonly leaseMs: number
  readonly heartbeatMs: number
  /** Provider requests in flight per app (its actor's window). */
  readonly inflightPerApp: number
  /** Devices fetched per page of a send. */
  readonly pageSize: number
  /** Attempts of one delivery in all before a transient failure becomes `errored` (the spec: three). */
  readonly maxAttempts: number
  /** Waits before the 2nd, 3rd … attempt of a transient failure; the last one repeats. */
  readonly retryDelaysMs: readonly number[]
  /** Stream entries read per XREADGROUP of a partition. */
  readonly readCount: number
  /** Sends a worker holds at once (read from its streams, not yet finished); beyond, it stops reading, so a backlog
   *  waits in Redis and the worker's memory and heartbeat stay bounded whatever the backlog. */
  readonly maxHeldSends: number
  /** Outcome group commit (src/delivery/outcomes.ts): outcomes per statement, statements in flight. */
  readonly outcomeBatchMax: number
  readonly outcomeWriters: number
  /** Sends loaded (and closed) per statement across apps (src/delivery/send-batches.ts), statements in flight. */
  readonly sendLoadBatchMax: number
  readonly sendLoadWriters: number
  /** Outcomes, and send loads or closings, waiting for a statement; beyond, one is refused and its send stays
   *  unacknowledged in its stream, to be handed out again. */
  readonly outcomeQueueMax: number
  readonly sendLoadQueueMax: number
  /** A segment send estimated above this many devices is cut into slices of about this size, which any worker may
   *  lease (PM_SLICE_DEVICES). */
  readonly sliceDevices: number
  /** Slices one worker holds at once (PM_SLICES_PER_WORKER). */
  readonly slicesPerWorker: number
  /** A send never has more slices than this, whatever its size (PM_MAX_SLICES). */
  readonly maxSlices: number
  /** At or above this share (percent) of APNs BadDeviceToken among the app's APNs answers of the last 24 hours, an
   *  environment mismatch is suspected and nothing is invalidated (PM_APNS_SUSPECT_PERCENT; src/delivery/bad-tokens.ts). */
  readonly apnsSuspectPercent: number
  /** How often a worker with room looks for a slice to lease (PM_SLICE_POLL_MS); after finding none, it waits
   *  PM_SLICE_IDLE_POLL_MS unless its own process plans slices meanwhile. */
  readonly slicePollMs: number
  readonly sliceIdlePollMs: number
  /** How often the actor of a sliced send reads how far its slices are (PM_SLICE_WATCH_MS). */
  readonly sliceWatchMs: number
  /** Delivery credentials are re-read at most this often even without a change notice (PM_CREDENTIAL_CACHE_MS): a
   *  missed notice heals itself within this. */
  readonly credentialCacheMs: number
}

/** The webhook dispatcher (the spec, Events redelivery policy, Limits Webhook row). */
export interface Webhook {
  /** spec: timeout per attempt. */
  readonly timeoutMs: number
  /** spec: waits after the 1st, 2nd, … failed attempt of an event; the last one repeats (the ceiling). */
  readonly retryDelaysMs: readonly number[]
  /** spec: attempts of one event before it is abandoned. */
  readonly maxAttempts: number
  /** spec: consecutive failed deliveries that disable the destination. */
  readonly disableAfter: number
  /** How often a dispatcher looks for destinations with due events (latency of a new event). */
  readonly pollMs: number
  /** Destinations worked on at once by one process (each holds one Postgres connection while it works). */
  readonly concurrency: number
  /** Events delivered under one hold of a destination before its cursor is written. */
  readonly batch: number
  /** A batch stops taking new events after this long, so the cursor is written regularly (PM_WEBHOOK_BATCH_MAX_MS). */
  readonly batchMaxMs: number
  /** A dispatcher's lease on an app's queue (PM_WEBHOOK_LEASE_MS): renewed while a call is in flight; a dispatcher
   *  that died is taken over this long after its last renewal. */
  readonly leaseMs: number
  /** A destination whose call took this long (or timed out) shares the slow half of the concurrency until one of
   *  its calls is quicker (PM_WEBHOOK_SLOW_MS). */
  readonly slowMs: number
}

/** The confirmation stream: presence in Redis (`streams_ativos`), positions in Postgres, reading events. */
export interface ConfirmationStream {
  /** How often an instance re-scores its open streams in Redis (PM_GRPC_HEARTBEAT_MS). */
  readonly heartbeatMs: number
  /** A stream not re-scored within this stops counting in `streams_ativos` (an instance that died; the spec:
   *  "within seconds"); longer than the heartbeat (PM_GRPC_STREAM_TTL_MS). */
  readonly ttlMs: number
  /** How often the open streams' positions are written to Postgres, for retention (PM_GRPC_POSITION_EVERY_MS). */
  readonly positionEveryMs: number
  /** Open streams of one app on one instance; beyond, RESOURCE_EXHAUSTED (PM_GRPC_STREAMS_PER_APP). */
  readonly maxPerApp: number
  /** Open streams re-check their key and app at least this often, besides every invalidation (PM_GRPC_RECHECK_MS). */
  readonly recheckMs: number
  /** A caught-up stream reads again at least this often, whatever the notifications do (PM_GRPC_POLL_MS). */
  readonly pollMs: number
  /** Events read per page: the most a stream holds in memory besides gRPC's own buffer (PM_GRPC_PAGE). */
  readonly page: number
}

export const DEFAULT_STREAM: ConfirmationStream = Object.freeze({
  heartbeatMs: 2_000,
  ttlMs: 6_000,
  positionEveryMs: 10_000,
  maxPerApp: 100,
  recheckMs: 30_000,
  pollMs: 1_000,
  page: 200,
})

/** The providers' HTTP/2 client (src/h2/): which one, and the limits of src/h2/limits.ts an operator may tune; the
 *  names are the library's. A peer past one ends its session with GOAWAY (the body cap refuses one answer). */
export interface ProviderHttp2 {
  /** PM_PROVIDER_HTTP2: `pombo` (our client, src/h2/pool.ts) or `node` (node:http2 behind the same interface). */
  readonly client: 'pombo' | 'node'
  /** PM_H2_MAX_BODY_BYTES: one answer body; a longer one fails its request. */
  readonly maxResponseBodyBytes: number
  /** PM_H2_CONNECTION_WINDOW_BYTES: unfinished answer bytes one session may hold (at least 65,535, above the body cap). */
  readonly connectionWindowBytes: number
  /** PM_H2_MAX_HEADER_PAIRS, PM_H2_MAX_HEADER_BYTES: fields and bytes (name + value + 32 each) of one answer head. */
  readonly maxHeaderListPairs: number
  readonly maxHeaderListBytes: number
  /** PM_H2_MAX_CONTINUATIONS: CONTINUATION frames after one HEADERS. */
  readonly maxContinuations: number
  /** PM_H2_HEADER_BLOCK_TIMEOUT_MS: an open header block must end within this. */
  readonly headerBlockTimeoutMs: number
  /** PM_H2_SETTINGS_TIMEOUT_MS: the provider's SETTINGS first and within this, and ours acknowledged within it. */
  readonly settingsTimeoutMs: number
  /** PM_H2_MAX_CONTROL_FRAMES: acknowledgements and resets we owe, queued unwritten, before the peer is a flood. */
  readonly maxQueuedControlFrames: number
}

/** nghttp2's defaults (and node:http2's over it); test/unit/h2-library.test.ts checks they are the library's. */
export const DEFAULT_PROVIDER_HTTP2: ProviderHttp2 = Object.freeze({
  client: 'pombo',
  maxResponseBodyBytes: 65_536,
  connectionWindowBytes: 1_048_576,
  maxHeaderListPairs: 128,
  maxHeaderListBytes: 65_535,
  maxContinuations: 8,
  headerBlockTimeoutMs: 5_000,
  settingsTimeoutMs: 10_000,
  maxQueuedControlFrames: 1_000,
})

/** Device exports: builds per process, their queue, the estimate, and the takeover of a dead instance's builds. */
export interface Exports {
  /** Rows per second assumed before this process has timed an export of its own (PM_EXPORT_ROWS_PER_SEC):
   *  an export writes ~420k rows/s on a 2-core machine (`npm run bench -- register`); a little under that, so the
   *  estimate is more often early than late. */
  readonly initialRowsPerSec: number
  /** Builds running at once per process; more wait their turn (PM_EXPORT_BUILDS). */
  readonly maxBuilds: number
  /** Builds waiting beyond this answer 503 (PM_EXPORT_QUEUE_MAX). */
  readonly maxQueued: number
  /** How often expired export files and rows are swept (PM_EXPORT_SWEEP_EVERY_MS). */
  readonly sweepEveryMs: number
  /** How often an instance refreshes the claims of its builds and looks for orphaned ones (PM_EXPORT_CLAIM_EVERY_MS). */
  readonly claimEveryMs: number
  /** A build whose claim is older than this has no live instance behind it and is taken over
   *  (PM_EXPORT_CLAIM_STALE_MS); longer than the refresh. */
  readonly claimStaleMs: number
  /** Orphaned builds taken over per look (PM_EXPORT_RECOVER_BATCH). */
  readonly recoverBatch: number
}

export const DEFAULT_EXPORTS: Exports = Object.freeze({
  initialRowsPerSec: 350_000,
  maxBuilds: 2,
  maxQueued: 100,
  sweepEveryMs: 10 * 60_000,
  claimEveryMs: 30_000,
  claimStaleMs: 2 * 60_000,
  recoverBatch: 10,
})

export const DEFAULT_WEBHOOK: Webhook = Object.freeze({
  timeoutMs: 10_000,
  retryDelaysMs: Object.freeze([1_000, 10_000, 60_000, 300_000, 900_000]),
  maxAttempts: 30,
  disableAfter: 20,
  pollMs: 250,
  concurrency: 32,
  batch: 100,
  batchMaxMs: 1_000,
  leaseMs: 5_000,
  slowMs: 1_000,
})

function pgBouncer(v: string | undefined): boolean {
  if (v === undefined || v === '' || v === 'off') return false
  if (v === 'transaction') return true
  throw new ConfigError(`PM_PGBOUNCER: expected off or transaction, got "${v}" (session mode needs no setting)`)
}

function flag(env: Env, name: string, def: boolean): boolean {
  const v = env[name]
  if (v === undefined || v === '') return def
  if (v === '1' || v === 'true') return true
  if (v === '0' || v === 'false') return false
  throw new ConfigError(`${name}: expected 1 or 0, got "${v}"`)
}

function msList(env: Env, name: string, def: readonly number[]): readonly number[] {
  const raw = env[name]
  if (raw === undefined || raw === '') return def
  const items = raw.split(',').map((s) => s.trim())
  if (!items.every((s) => /^\d+$/.test(s))) throw new ConfigError(`${name}: expected comma-separated milliseconds, got "${raw}"`)
  return Object.freeze(items.map(Number))
}

export const DEFAULT_DELIVERY: Delivery = Object.freeze({
  leaseMs: 10_000,
  heartbeatMs: 10_000,
  inflightPerApp: 256,
  pageSize: 500,
  maxAttempts: 3,
  retryDelaysMs: Object.freeze([1_000, 5_000]),
  readCount: 500,
  maxHeldSends: 10_000,
  outcomeBatchMax: 1_000,
  // One writer: while its statement runs the next batch grows, and a larger batch costs Postgres less per outcome
  // (about a quarter less a delivery than with four writers). The provider's window does not wait for the record
  // (actor.ts), so the writer's latency costs no throughput.
  outcomeWriters: 1,
  sendLoadBatchMax: 500,
  sendLoadWriters: 2,
  outcomeQueueMax: 200_000,
  sendLoadQueueMax: 200_000,
  sliceDevices: 20_000,
  slicesPerWorker: 2,
  maxSlices: 256,
  apnsSuspectPercent: 50,
  slicePollMs: 250,
  sliceIdlePollMs: 1_000,
  sliceWatchMs: 500,
  credentialCacheMs: 30_000,
})

export const DEFAULT_JOBS: Jobs = Object.freeze({
  sweepEveryMs: 1_000,
  handoffGraceMs: 30_000,
  // A transactional send is one device, a user's send a few: those are the sends whose load was the worker's cost.
  // Each carried device is ~250 bytes of stream entry (its token), and a copy over 2 KB is not carried (carried.ts),
  // so a backlog of capped entries stays bounded.
  handoffCarryDevices: 10,
  mauEveryMs: 10 * 60_000,
  receiptArchiveDays: 30,
  receiptArchiveEveryMs: 3600_000,
  deliveriesRetentionDays: 7,
  retentionEveryMs: 10 * 60_000,
  webhookAttemptsRetentionDays: 30,
  eventsRetentionDays: 7,
  sendsRetentionDays: 90,
  inappEventsRetentionDays: 90,
  inappServedRetentionDays: 90,
  inappReactivationsRetentionDays: 90,
  webhookAbandonedRetentionDays: 90,
  invitesRetentionDays: 30,
  deadDevicesRetentionDays: 30,
  streamKeepDays: 7,
  streamWarnH: 24,
  retentionBatch: 2_000,
  retentionPause: 1,
  auditRetentionDays: 365,
  streamMaxLen: 1_000_000,
})

export const DEFAULT_LIMITS: Limits = Object.freeze({
  ipPerMin: 120,
  registrationsPerHour: 50_000,
  sendsPerSec: 6_000,
  freeMau: 1_000,
  deviceBodyBytes: 16 * 1024,
  sendBodyBytes: 256 * 1024,
  appBodyBytes: 16 * 1024,
  keyCacheTtlMs: 60_000,
  rotationOverlapMs: 24 * 3600_000,
  exportsPerSec: 1,
  exportValidityH: 72,
  devicesPerExternalUser: 10,
  registrationBatchMax: 500,
  registrationWriters: 4,
  registrationQueueMax: 20_000,
  sendBatchMax: 200,
  sendWriters: 16,
  receiptBatchMax: 1_000,
  receiptWriters: 4,
  pgPool: 32,
  readsPerSec: 1_000,
  mauMaxAgeMs: 24 * 3600_000,
  jsonMaxDepth: 32,
  idempotencyKeyMaxBytes: 256,
  appNameMaxBytes: 200,
  configLockTimeoutMs: 15_000,
  keyCacheMax: 200_000,
  keyCacheMissMax: 20_000,
  keyCacheMissTtlMs: 10_000,
  appCacheMax: 100_000,
  readCacheMax: 10_000,
  inappProfileCacheMax: 500_000,
  inappMemoMax: 200_000,
  inappServedSeenMax: 1_000_000,
  inappPackageMax: 20,
  inappValidityS: 86_400,
  inappEventsBatchMax: 50,
  inappEventPastMs: 7 * 86_400_000,
  inappEventFutureMs: 5 * 60_000,
  inappEventWriters: 4,
  inappEventBatchMax: 1_000,
  inappServedWriters: 2,
  inappServedBatchMax: 1_000,
  sendQueueMax: 20_000,
  receiptQueueMax: 50_000,
  inappEventQueueMax: 50_000,
  inappServedQueueMax: 100_000,
  sendTargetsMax: 2_000,
  sendSegmentsMax: 10,
  ttlDefaultS: 259_200,
  ttlMaxS: 2_419_200,
  collapseIdMaxBytes: 64,
  sendAfterMaxDays: 28,
  payloadMaxBytes: 3_891,
  idempotencyTtlDays: 30,
  idempotencyWaitMs: 3_000,
  idempotencyLockTtlMs: 15_000,
  idempotencyPollMs: 25,
  sendsListMax: 50,
  readCacheMs: 1_000,
  identifierMaxBytes: 194,
  externalUserIdMaxBytes: 128,
  tagsMaxBytes: 2_048,
  languageMaxBytes: 32,
  timezoneMaxS: 86_400,
  profileTruncateBytes: 64,
  rcptMaxChars: 64,
  receiptWindowDays: 90,
  defaultRatePerMin: 60_000,
  inappCapTotalDefault: 1,
  inappCooldownHDefault: 24,
  inappPriorityDefault: 100,
  inappDelayMsDefault: 2_000,
  inappDelayMsMax: 60_000,
  inappCloseAfterMsMax: 600_000,
  inappTitleMaxChars: 80,
  inappBodyMaxChars: 240,
  inappButtonMaxChars: 24,
  inappBlocksMax: 12,
  inappOccurrenceMax: 500,
  inappCapHoursMax: 168,
  inappCapHoursDefault: 6,
})

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

/** The CHECK on apps.inapp_cap_horas (a fact of the schema, not a setting). */
const INAPP_CAP_HOURS_DB_MAX = 168

function atMost(name: string, v: number, max: number): number {
  if (v > max) throw new ConfigError(`${name}: expected at most ${max}, got ${v}`)
  return v
}

function int(env: Env, name: string, def: number, min = 0): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return def
  if (!/^-?\d+$/.test(raw) || Number(raw) < min) throw new ConfigError(`${name}: expected an integer >= ${min}, got "${raw}"`)
  return Number(raw)
}

/** PM_DASHBOARD_SCRYPT_N: a power of two from 2^14 (16 MiB a hash) to 2^20 (1 GiB), the bounds stored hashes are
 *  checked against (src/people/password.ts). */
function scryptN(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 2 ** 17
  const n = /^\d{1,8}$/.test(raw) ? Number(raw) : Number.NaN
  if (!Number.isInteger(Math.log2(n)) || n < 2 ** 14 || n > 2 ** 20)
    throw new ConfigError(`PM_DASHBOARD_SCRYPT_N: expected a power of two from 16384 to 1048576, got "${raw}"`)
  return n
}

function vaultKey(raw: string | undefined): Buffer | null {
  if (raw === undefined || raw === '') return null
  if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError('PM_VAULT_KEY: expected 64 hex characters')
  return Buffer.from(raw, 'hex')
}

/** The driver reads only URLs: a libpq `key=value` string would become a database name, password included, that
 *  Postgres then quotes in its refusal. Refused here, without echoing the value (it holds the password). */
function postgresUrl(name: string, url: string): string {
  if (!/^postgres(?:ql)?:\/\//i.test(url)) {
    throw new ConfigError(`${name}: expected a postgres:// or postgresql:// URL (the value is not shown: it may hold a password)`)
  }
  return url
}

/** Both files or neither: a certificate without its key (or the reverse) is a mistake, not plaintext. */
function grpcTls(cert: string | undefined, key: string | undefined): Config['grpcTls'] {
  if (!cert && !key) return null
  if (!cert || !key) throw new ConfigError('PM_GRPC_TLS_CERT and PM_GRPC_TLS_KEY: set both (PEM files) or neither')
  return Object.freeze({ certFile: cert, keyFile: key })
}

/** A bearer token travels in a header: printable ASCII without spaces, long enough not to be guessed. */
function opsToken(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null
  if (!/^[\x21-\x7e]{16,512}$/.test(raw)) {
    throw new ConfigError('PM_OPS_TOKEN: expected 16-512 printable ASCII characters without spaces')
  }
  return raw
}

function hexKey(name: string, raw: string | undefined): Buffer | null {
  if (raw === undefined || raw === '') return null
  if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError(`${name}: expected 64 hex characters`)
  return Buffer.from(raw, 'hex')
}

function trustProxy(raw: string | undefined): string[] {
  if (!raw) return []
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const item of items) {
    const [addr, bits] = item.split('/')
    if (!addr || !isIP(addr) || (bits !== undefined && !/^\d+$/.test(bits))) {
      throw new ConfigError(`PM_TRUST_PROXY: "${item}" is not an address or CIDR`)
    }
  }
  return items
}

/** `host:port,host:port` (an IPv6 host in brackets: `[::1]:7000`); unset or empty: no cluster. */
function clusterNodes(raw: string | undefined): Config['redisClusterNodes'] {
  if (raw === undefined || raw.trim() === '') return null
  const nodes = raw.split(',').map((item) => {
    const s = item.trim()
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(s)
    const port = Number(m?.[3])
    if (!m || port < 1 || port > 65535) throw new ConfigError(`REDIS_CLUSTER_NODES: "${s}" is not host:port`)
    return Object.freeze({ host: (m[1] ?? m[2]) as string, port })
  })
  return Object.freeze(nodes)
}

function providerHttp2(env: Env): ProviderHttp2 {
  const d = DEFAULT_PROVIDER_HTTP2
  const client = env.PM_PROVIDER_HTTP2 || d.client
  if (client !== 'pombo' && client !== 'node') throw new ConfigError(`PM_PROVIDER_HTTP2: expected pombo or node, got "${client}"`)
  const out: ProviderHttp2 = Object.freeze({
    client,
    maxResponseBodyBytes: atMost(
      'PM_H2_MAX_BODY_BYTES',
      int(env, 'PM_H2_MAX_BODY_BYTES', d.maxResponseBodyBytes, 1),
      2 ** 31 - 2,
    ),
    connectionWindowBytes: atMost(
      'PM_H2_CONNECTION_WINDOW_BYTES',
      int(env, 'PM_H2_CONNECTION_WINDOW_BYTES', d.connectionWindowBytes, 65_535),
      2 ** 31 - 1,
    ),
    maxHeaderListPairs: int(env, 'PM_H2_MAX_HEADER_PAIRS', d.maxHeaderListPairs, 1),
    maxHeaderListBytes: int(env, 'PM_H2_MAX_HEADER_BYTES', d.maxHeaderListBytes, 1),
    maxContinuations: int(env, 'PM_H2_MAX_CONTINUATIONS', d.maxContinuations, 1),
    headerBlockTimeoutMs: int(env, 'PM_H2_HEADER_BLOCK_TIMEOUT_MS', d.headerBlockTimeoutMs, 1),
    settingsTimeoutMs: int(env, 'PM_H2_SETTINGS_TIMEOUT_MS', d.settingsTimeoutMs, 1),
    maxQueuedControlFrames: int(env, 'PM_H2_MAX_CONTROL_FRAMES', d.maxQueuedControlFrames, 1),
  })
  // The whole of a body must fit the connection window, or the answer could never finish.
  if (out.connectionWindowBytes <= out.maxResponseBodyBytes) {
    throw new ConfigError(
      `PM_H2_CONNECTION_WINDOW_BYTES: ${out.connectionWindowBytes} must exceed PM_H2_MAX_BODY_BYTES (${out.maxResponseBodyBytes})`,
    )
  }
  return out
}

function accessLog(raw: string | undefined): Config['accessLog'] {
  if (raw === undefined || raw === '') return 'all'
  if (raw !== 'all' && raw !== 'errors' && raw !== 'off')
    throw new ConfigError(`PM_ACCESS_LOG: expected all, errors or off, got "${raw}"`)
  return raw
}

function logFormat(v: string | undefined): Config['logFormat'] {
  if (v === undefined || v === '') return 'auto'
  if (v === 'json' || v === 'pretty' || v === 'auto') return v
  throw new ConfigError(`PM_LOG_FORMAT: "${v}" is not json, pretty or auto`)
}

/** Reads the environment once; throws ConfigError with a one-line reason. Only main.ts passes process.env. */
export function loadConfig(env: Env, overrides: Partial<Config> = {}): Config {
  const port = int(env, 'PORT', 8080)
  const host = env.PM_HOST || '127.0.0.1'
  const limits: Limits = Object.freeze({
    ...DEFAULT_LIMITS,
    ipPerMin: int(env, 'PM_LIMIT_IP_PER_MIN', DEFAULT_LIMITS.ipPerMin),
    registrationsPerHour: int(env, 'PM_LIMIT_REGISTRATIONS_PER_HOUR', DEFAULT_LIMITS.registrationsPerHour),
    sendsPerSec: int(env, 'PM_LIMIT_SENDS_PER_SEC', DEFAULT_LIMITS.sendsPerSec),
    freeMau: int(env, 'PM_FREE_MAU', DEFAULT_LIMITS.freeMau),
    mauMaxAgeMs: int(env, 'PM_MAU_MAX_AGE_S', DEFAULT_LIMITS.mauMaxAgeMs / 1000) * 1000,
    registrationBatchMax: int(env, 'PM_REG_BATCH_MAX', DEFAULT_LIMITS.registrationBatchMax, 1),
    registrationWriters: int(env, 'PM_REG_WRITERS', DEFAULT_LIMITS.registrationWriters, 1),
    sendBatchMax: int(env, 'PM_SEND_BATCH_MAX', DEFAULT_LIMITS.sendBatchMax, 1),
    sendWriters: int(env, 'PM_SEND_WRITERS', DEFAULT_LIMITS.sendWriters, 1),
    receiptBatchMax: int(env, 'PM_RECEIPT_BATCH_MAX', DEFAULT_LIMITS.receiptBatchMax, 1),
    receiptWriters: int(env, 'PM_RECEIPT_WRITERS', DEFAULT_LIMITS.receiptWriters, 1),
    pgPool: int(env, 'PM_PG_POOL', DEFAULT_LIMITS.pgPool, MIN_PG_BUDGET),
    registrationQueueMax: int(env, 'PM_REG_QUEUE_MAX', DEFAULT_LIMITS.registrationQueueMax, 1),
    jsonMaxDepth: int(env, 'PM_JSON_MAX_DEPTH', DEFAULT_LIMITS.jsonMaxDepth, 2),
    idempotencyKeyMaxBytes: int(env, 'PM_IDEMPOTENCY_KEY_MAX_BYTES', DEFAULT_LIMITS.idempotencyKeyMaxBytes, 1),
    appNameMaxBytes: int(env, 'PM_APP_NAME_MAX_BYTES', DEFAULT_LIMITS.appNameMaxBytes, 1),
    configLockTimeoutMs: int(env, 'PM_CONFIG_LOCK_TIMEOUT_MS', DEFAULT_LIMITS.configLockTimeoutMs, 1),
    keyCacheMax: int(env, 'PM_KEY_CACHE_MAX', DEFAULT_LIMITS.keyCacheMax, 1),
    keyCacheMissMax: int(env, 'PM_KEY_CACHE_MISS_MAX', DEFAULT_LIMITS.keyCacheMissMax, 1),
    keyCacheMissTtlMs: int(env, 'PM_KEY_CACHE_MISS_TTL_MS', DEFAULT_LIMITS.keyCacheMissTtlMs, 0),
    appCacheMax: int(env, 'PM_APP_CACHE_MAX', DEFAULT_LIMITS.appCacheMax, 1),
    readCacheMax: int(env, 'PM_READ_CACHE_MAX', DEFAULT_LIMITS.readCacheMax, 1),
    inappProfileCacheMax: int(env, 'PM_INAPP_PROFILE_CACHE_MAX', DEFAULT_LIMITS.inappProfileCacheMax, 1),
    inappMemoMax: int(env, 'PM_INAPP_MEMO_MAX', DEFAULT_LIMITS.inappMemoMax, 1),
    inappServedSeenMax: int(env, 'PM_INAPP_SERVED_SEEN_MAX', DEFAULT_LIMITS.inappServedSeenMax, 1),
    deviceBodyBytes: int(env, 'PM_LIMIT_DEVICE_BODY_BYTES', DEFAULT_LIMITS.deviceBodyBytes, 1024),
    sendBodyBytes: int(env, 'PM_LIMIT_SEND_BODY_BYTES', DEFAULT_LIMITS.sendBodyBytes, 1024),
    appBodyBytes: int(env, 'PM_LIMIT_APP_BODY_BYTES', DEFAULT_LIMITS.appBodyBytes, 1024),
    keyCacheTtlMs: int(env, 'PM_KEY_CACHE_TTL_MS', DEFAULT_LIMITS.keyCacheTtlMs, 0),
    rotationOverlapMs: int(env, 'PM_ROTATION_OVERLAP_MS', DEFAULT_LIMITS.rotationOverlapMs, 0),
    exportsPerSec: int(env, 'PM_LIMIT_EXPORTS_PER_SEC', DEFAULT_LIMITS.exportsPerSec, 1),
    exportValidityH: int(env, 'PM_EXPORT_VALIDITY_H', DEFAULT_LIMITS.exportValidityH, 1),
    devicesPerExternalUser: int(env, 'PM_LIMIT_DEVICES_PER_USER', DEFAULT_LIMITS.devicesPerExternalUser, 1),
    readsPerSec: int(env, 'PM_LIMIT_READS_PER_SEC', DEFAULT_LIMITS.readsPerSec, 1),
    inappPackageMax: int(env, 'PM_INAPP_PACKAGE_MAX', DEFAULT_LIMITS.inappPackageMax, 1),
    inappValidityS: int(env, 'PM_INAPP_VALIDITY_S', DEFAULT_LIMITS.inappValidityS, 1),
    inappEventsBatchMax: int(env, 'PM_INAPP_EVENTS_PER_REQUEST', DEFAULT_LIMITS.inappEventsBatchMax, 1),
    inappEventPastMs: int(env, 'PM_INAPP_EVENT_PAST_MS', DEFAULT_LIMITS.inappEventPastMs, 0),
    inappEventFutureMs: int(env, 'PM_INAPP_EVENT_FUTURE_MS', DEFAULT_LIMITS.inappEventFutureMs, 0),
    inappEventWriters: int(env, 'PM_INAPP_EVENT_WRITERS', DEFAULT_LIMITS.inappEventWriters, 1),
    inappEventBatchMax: int(env, 'PM_INAPP_EVENT_BATCH_MAX', DEFAULT_LIMITS.inappEventBatchMax, 1),
    inappServedWriters: int(env, 'PM_INAPP_SERVED_WRITERS', DEFAULT_LIMITS.inappServedWriters, 1),
    inappServedBatchMax: int(env, 'PM_INAPP_SERVED_BATCH_MAX', DEFAULT_LIMITS.inappServedBatchMax, 1),
    sendQueueMax: int(env, 'PM_SEND_QUEUE_MAX', DEFAULT_LIMITS.sendQueueMax, 1),
    receiptQueueMax: int(env, 'PM_RECEIPT_QUEUE_MAX', DEFAULT_LIMITS.receiptQueueMax, 1),
    inappEventQueueMax: int(env, 'PM_INAPP_EVENT_QUEUE_MAX', DEFAULT_LIMITS.inappEventQueueMax, 1),
    inappServedQueueMax: int(env, 'PM_INAPP_SERVED_QUEUE_MAX', DEFAULT_LIMITS.inappServedQueueMax, 1),
    sendTargetsMax: int(env, 'PM_LIMIT_SEND_TARGETS', DEFAULT_LIMITS.sendTargetsMax, 1),
    sendSegmentsMax: int(env, 'PM_LIMIT_SEND_SEGMENTS', DEFAULT_LIMITS.sendSegmentsMax, 1),
    ttlDefaultS: int(env, 'PM_TTL_DEFAULT_S', DEFAULT_LIMITS.ttlDefaultS, 0),
    ttlMaxS: int(env, 'PM_TTL_MAX_S', DEFAULT_LIMITS.ttlMaxS, 0),
    collapseIdMaxBytes: int(env, 'PM_LIMIT_COLLAPSE_ID_BYTES', DEFAULT_LIMITS.collapseIdMaxBytes, 1),
    sendAfterMaxDays: int(env, 'PM_SEND_AFTER_MAX_DAYS', DEFAULT_LIMITS.sendAfterMaxDays, 0),
    payloadMaxBytes: int(env, 'PM_LIMIT_PAYLOAD_BYTES', DEFAULT_LIMITS.payloadMaxBytes, 97),
    idempotencyTtlDays: int(env, 'PM_IDEMPOTENCY_TTL_DAYS', DEFAULT_LIMITS.idempotencyTtlDays, 1),
    idempotencyWaitMs: int(env, 'PM_IDEMPOTENCY_WAIT_MS', DEFAULT_LIMITS.idempotencyWaitMs, 0),
    idempotencyLockTtlMs: int(env, 'PM_IDEMPOTENCY_LOCK_TTL_MS', DEFAULT_LIMITS.idempotencyLockTtlMs, 1),
    idempotencyPollMs: int(env, 'PM_IDEMPOTENCY_POLL_MS', DEFAULT_LIMITS.idempotencyPollMs, 1),
    sendsListMax: int(env, 'PM_LIMIT_SENDS_LIST', DEFAULT_LIMITS.sendsListMax, 1),
    readCacheMs: int(env, 'PM_READ_CACHE_MS', DEFAULT_LIMITS.readCacheMs, 0),
    identifierMaxBytes: int(env, 'PM_LIMIT_IDENTIFIER_BYTES', DEFAULT_LIMITS.identifierMaxBytes, 1),
    externalUserIdMaxBytes: int(env, 'PM_LIMIT_EXTERNAL_USER_ID_BYTES', DEFAULT_LIMITS.externalUserIdMaxBytes, 1),
    tagsMaxBytes: int(env, 'PM_LIMIT_TAGS_BYTES', DEFAULT_LIMITS.tagsMaxBytes, 2),
    languageMaxBytes: int(env, 'PM_LIMIT_LANGUAGE_BYTES', DEFAULT_LIMITS.languageMaxBytes, 1),
    timezoneMaxS: int(env, 'PM_LIMIT_TIMEZONE_S', DEFAULT_LIMITS.timezoneMaxS, 0),
    profileTruncateBytes: int(env, 'PM_PROFILE_TRUNCATE_BYTES', DEFAULT_LIMITS.profileTruncateBytes, 1),
    rcptMaxChars: int(env, 'PM_LIMIT_RCPT_CHARS', DEFAULT_LIMITS.rcptMaxChars, 1),
    receiptWindowDays: int(env, 'PM_RECEIPT_WINDOW_DAYS', DEFAULT_LIMITS.receiptWindowDays, 1),
    defaultRatePerMin: int(env, 'PM_DEFAULT_RATE_POR_MIN', DEFAULT_LIMITS.defaultRatePerMin, 1),
    inappCapTotalDefault: int(env, 'PM_INAPP_CAP_TOTAL_DEFAULT', DEFAULT_LIMITS.inappCapTotalDefault, 0),
    inappCooldownHDefault: int(env, 'PM_INAPP_COOLDOWN_H_DEFAULT', DEFAULT_LIMITS.inappCooldownHDefault, 0),
    inappPriorityDefault: int(env, 'PM_INAPP_PRIORIDADE_DEFAULT', DEFAULT_LIMITS.inappPriorityDefault, 0),
    inappDelayMsDefault: int(env, 'PM_INAPP_ATRASO_MS_DEFAULT', DEFAULT_LIMITS.inappDelayMsDefault, 0),
    inappDelayMsMax: int(env, 'PM_INAPP_ATRASO_MS_MAX', DEFAULT_LIMITS.inappDelayMsMax, 0),
    inappCloseAfterMsMax: int(env, 'PM_INAPP_FECHAR_APOS_MS_MAX', DEFAULT_LIMITS.inappCloseAfterMsMax, 1),
    inappTitleMaxChars: int(env, 'PM_INAPP_TITULO_CHARS', DEFAULT_LIMITS.inappTitleMaxChars, 1),
    inappBodyMaxChars: int(env, 'PM_INAPP_CORPO_CHARS', DEFAULT_LIMITS.inappBodyMaxChars, 1),
    inappButtonMaxChars: int(env, 'PM_INAPP_BOTAO_CHARS', DEFAULT_LIMITS.inappButtonMaxChars, 1),
    inappBlocksMax: int(env, 'PM_INAPP_BLOCKS_MAX', DEFAULT_LIMITS.inappBlocksMax, 1),
    inappOccurrenceMax: int(env, 'PM_INAPP_OCORRENCIA_MAX', DEFAULT_LIMITS.inappOccurrenceMax, 1),
    inappCapHoursMax: int(env, 'PM_INAPP_CAP_HORAS_MAX', DEFAULT_LIMITS.inappCapHoursMax, 0),
    inappCapHoursDefault: int(env, 'PM_INAPP_CAP_HORAS_DEFAULT', DEFAULT_LIMITS.inappCapHoursDefault, 0),
    ...overrides.limits,
  })
  // The database keeps apps.inapp_cap_horas between 0 and 168 (migration 0001): a larger bound would let values past
  // validation that Postgres then refuses.
  if (limits.inappCapHoursMax > INAPP_CAP_HOURS_DB_MAX) {
    throw new ConfigError(
      `PM_INAPP_CAP_HORAS_MAX: ${limits.inappCapHoursMax} is above ${INAPP_CAP_HOURS_DB_MAX}, the most the database stores`,
    )
  }
  if (limits.inappCapHoursDefault > limits.inappCapHoursMax) {
    throw new ConfigError(
      `PM_INAPP_CAP_HORAS_DEFAULT: ${limits.inappCapHoursDefault} is above PM_INAPP_CAP_HORAS_MAX (${limits.inappCapHoursMax})`,
    )
  }
  const plan = env.PM_DEFAULT_PLAN || 'free'
  if (plan !== 'free' && plan !== 'pro') throw new ConfigError(`PM_DEFAULT_PLAN: expected free or pro, got "${plan}"`)
  const cfg: Config = {
    port,
    dashboardPort: int(env, 'PM_DASHBOARD_PORT', 8081),
    grpcPort: int(env, 'PM_GRPC_PORT', 8082) || null,
    grpcTls: grpcTls(env.PM_GRPC_TLS_CERT, env.PM_GRPC_TLS_KEY),
    opsPort: int(env, 'PM_OPS_PORT', 9464) || null,
    accessLog: accessLog(env.PM_ACCESS_LOG),
    drainTimeoutMs: int(env, 'PM_DRAIN_TIMEOUT_MS', 30_000, 1),
    serveWorkers: atMost('PM_SERVE_WORKERS', int(env, 'PM_SERVE_WORKERS', 1), 64),
    nodeOptions: env.NODE_OPTIONS ?? '',
    host,
    databaseUrl: postgresUrl('DATABASE_URL', env.DATABASE_URL || DEFAULT_DATABASE_URL),
    databaseDirectUrl: postgresUrl(
      env.PM_DATABASE_DIRECT_URL ? 'PM_DATABASE_DIRECT_URL' : 'DATABASE_URL',
      env.PM_DATABASE_DIRECT_URL || env.DATABASE_URL || DEFAULT_DATABASE_URL,
    ),
    pgBouncer: pgBouncer(env.PM_PGBOUNCER),
    statementTimeoutMs: int(env, 'PM_STATEMENT_TIMEOUT_MS', STATEMENT_TIMEOUT_MS, 0),
    pgConnLifetimeS: int(env, 'PM_PG_CONN_LIFETIME_S', PG_CONN_LIFETIME_S, 0),
    opsCheckTimeoutMs: int(env, 'PM_OPS_CHECK_TIMEOUT_MS', 1_000, 1),
    opsToken: opsToken(env.PM_OPS_TOKEN),
    opsMetricsCacheMs: int(env, 'PM_OPS_METRICS_CACHE_MS', 5_000, 0),
    migrateOnStart: flag(env, 'PM_MIGRATE_ON_START', true),
    redisUrl: env.REDIS_URL || DEFAULT_REDIS_URL,
    redisClusterNodes: clusterNodes(env.REDIS_CLUSTER_NODES),
    redisPrefix: env.PM_REDIS_PREFIX || 'pm',
    dbSchema: env.PM_DB_SCHEMA || 'public',
    platformKey: env.PM_PLATFORM_KEY || null,
    vaultKey: vaultKey(env.PM_VAULT_KEY),
    publicBaseUrl: (env.PM_PUBLIC_BASE_URL || `http://${host}:${port}`).replace(/\/+$/, ''),
    fcmBaseUrl: env.PM_FCM_BASE_URL || 'https://fcm.googleapis.com',
    apnsBaseUrl: env.PM_APNS_BASE_URL || null,
    webhookAllowPrivate: env.PM_WEBHOOK_ALLOW_PRIVATE === '1',
    allowSimulators: flag(env, 'PM_ALLOW_SIMULATORS', false),
    // Unset: the default directory; set to the empty string: exports are off (503).
    exportDir: env.PM_EXPORT_DIR ?? './.data/exports',
    eraseBatch: int(env, 'PM_ERASE_BATCH', 10_000, 1),
    trustProxy: trustProxy(env.PM_TRUST_PROXY),
    defaultPlan: plan,
    partitions: int(env, 'PM_PARTITIONS', 64, 1),
    jobs: Object.freeze({
      ...DEFAULT_JOBS,
      handoffGraceMs: int(env, 'PM_HANDOFF_GRACE_MS', DEFAULT_JOBS.handoffGraceMs, 1),
      handoffCarryDevices: int(env, 'PM_HANDOFF_CARRY_DEVICES', DEFAULT_JOBS.handoffCarryDevices, 0),
      mauEveryMs: int(env, 'PM_MAU_EVERY_S', DEFAULT_JOBS.mauEveryMs / 1000, 1) * 1000,
      receiptArchiveDays: int(env, 'PM_RECEIPT_ARCHIVE_DAYS', DEFAULT_JOBS.receiptArchiveDays, 1),
      deliveriesRetentionDays: int(env, 'PM_DELIVERIES_RETENTION_DAYS', DEFAULT_JOBS.deliveriesRetentionDays, 0),
      webhookAttemptsRetentionDays: int(env, 'PM_WEBHOOK_ATTEMPTS_RETENTION_DAYS', DEFAULT_JOBS.webhookAttemptsRetentionDays, 0),
      eventsRetentionDays: int(env, 'PM_EVENTS_RETENTION_DAYS', DEFAULT_JOBS.eventsRetentionDays, 0),
      sendsRetentionDays: int(env, 'PM_SENDS_RETENTION_DAYS', DEFAULT_JOBS.sendsRetentionDays, 1),
      inappEventsRetentionDays: int(env, 'PM_INAPP_EVENTS_RETENTION_DAYS', DEFAULT_JOBS.inappEventsRetentionDays, 1),
      inappServedRetentionDays: int(env, 'PM_INAPP_SERVED_RETENTION_DAYS', DEFAULT_JOBS.inappServedRetentionDays, 1),
      inappReactivationsRetentionDays: int(
        env,
        'PM_INAPP_REACTIVATIONS_RETENTION_DAYS',
        DEFAULT_JOBS.inappReactivationsRetentionDays,
        1,
      ),
      webhookAbandonedRetentionDays: int(
        env,
        'PM_WEBHOOK_ABANDONED_RETENTION_DAYS',
        DEFAULT_JOBS.webhookAbandonedRetentionDays,
        1,
      ),
      invitesRetentionDays: int(env, 'PM_INVITES_RETENTION_DAYS', DEFAULT_JOBS.invitesRetentionDays, 1),
      deadDevicesRetentionDays: int(env, 'PM_DEAD_DEVICES_RETENTION_DAYS', DEFAULT_JOBS.deadDevicesRetentionDays, 1),
      streamKeepDays: int(env, 'PM_STREAM_KEEP_DAYS', DEFAULT_JOBS.streamKeepDays, 1),
      streamWarnH: int(env, 'PM_STREAM_WARN_H', DEFAULT_JOBS.streamWarnH, 0),
      retentionBatch: int(env, 'PM_RETENTION_BATCH', DEFAULT_JOBS.retentionBatch, 1),
      retentionPause: int(env, 'PM_RETENTION_PAUSE', DEFAULT_JOBS.retentionPause, 0),
      auditRetentionDays: int(env, 'PM_AUDIT_RETENTION_DAYS', DEFAULT_JOBS.auditRetentionDays, 0),
      sweepEveryMs: int(env, 'PM_SWEEP_EVERY_MS', DEFAULT_JOBS.sweepEveryMs, 1),
      receiptArchiveEveryMs: int(env, 'PM_RECEIPT_ARCHIVE_EVERY_MS', DEFAULT_JOBS.receiptArchiveEveryMs, 1),
      retentionEveryMs: int(env, 'PM_RETENTION_EVERY_MS', DEFAULT_JOBS.retentionEveryMs, 1),
      streamMaxLen: int(env, 'PM_STREAM_MAX_LEN', DEFAULT_JOBS.streamMaxLen, 1),
    }),
    proPrice: env.PM_PRO_PRICE || 'R$ 99,00 por mês',
    delivery: Object.freeze({
      ...DEFAULT_DELIVERY,
      leaseMs: int(env, 'PM_LEASE_MS', DEFAULT_DELIVERY.leaseMs, 100),
      heartbeatMs: int(env, 'PM_HEARTBEAT_MS', DEFAULT_DELIVERY.heartbeatMs, 100),
      inflightPerApp: int(env, 'PM_INFLIGHT_PER_APP', DEFAULT_DELIVERY.inflightPerApp, 1),
      pageSize: int(env, 'PM_DELIVERY_PAGE', DEFAULT_DELIVERY.pageSize, 1),
      maxAttempts: int(env, 'PM_DELIVERY_MAX_ATTEMPTS', DEFAULT_DELIVERY.maxAttempts, 1),
      retryDelaysMs: msList(env, 'PM_DELIVERY_RETRY_MS', DEFAULT_DELIVERY.retryDelaysMs),
      readCount: int(env, 'PM_STREAM_READ_COUNT', DEFAULT_DELIVERY.readCount, 1),
      maxHeldSends: int(env, 'PM_WORKER_MAX_SENDS', DEFAULT_DELIVERY.maxHeldSends, 1),
      outcomeBatchMax: int(env, 'PM_OUTCOME_BATCH_MAX', DEFAULT_DELIVERY.outcomeBatchMax, 1),
      outcomeWriters: int(env, 'PM_OUTCOME_WRITERS', DEFAULT_DELIVERY.outcomeWriters, 1),
      sendLoadBatchMax: int(env, 'PM_SEND_LOAD_BATCH_MAX', DEFAULT_DELIVERY.sendLoadBatchMax, 1),
      sendLoadWriters: int(env, 'PM_SEND_LOAD_WRITERS', DEFAULT_DELIVERY.sendLoadWriters, 1),
      outcomeQueueMax: int(env, 'PM_OUTCOME_QUEUE_MAX', DEFAULT_DELIVERY.outcomeQueueMax, 1),
      sendLoadQueueMax: int(env, 'PM_SEND_LOAD_QUEUE_MAX', DEFAULT_DELIVERY.sendLoadQueueMax, 1),
      sliceDevices: int(env, 'PM_SLICE_DEVICES', DEFAULT_DELIVERY.sliceDevices, 1),
      slicesPerWorker: int(env, 'PM_SLICES_PER_WORKER', DEFAULT_DELIVERY.slicesPerWorker, 1),
      maxSlices: int(env, 'PM_MAX_SLICES', DEFAULT_DELIVERY.maxSlices, 1),
      apnsSuspectPercent: int(env, 'PM_APNS_SUSPECT_PERCENT', DEFAULT_DELIVERY.apnsSuspectPercent, 1),
      slicePollMs: int(env, 'PM_SLICE_POLL_MS', DEFAULT_DELIVERY.slicePollMs, 1),
      sliceIdlePollMs: int(env, 'PM_SLICE_IDLE_POLL_MS', DEFAULT_DELIVERY.sliceIdlePollMs, 1),
      sliceWatchMs: int(env, 'PM_SLICE_WATCH_MS', DEFAULT_DELIVERY.sliceWatchMs, 1),
      credentialCacheMs: int(env, 'PM_CREDENTIAL_CACHE_MS', DEFAULT_DELIVERY.credentialCacheMs, 0),
    }),
    webhook: Object.freeze({
      ...DEFAULT_WEBHOOK,
      timeoutMs: int(env, 'PM_WEBHOOK_TIMEOUT_MS', DEFAULT_WEBHOOK.timeoutMs, 1),
      retryDelaysMs: msList(env, 'PM_WEBHOOK_RETRY_MS', DEFAULT_WEBHOOK.retryDelaysMs),
      pollMs: int(env, 'PM_WEBHOOK_POLL_MS', DEFAULT_WEBHOOK.pollMs, 1),
      concurrency: int(env, 'PM_WEBHOOK_CONCURRENCY', DEFAULT_WEBHOOK.concurrency, 1),
      maxAttempts: int(env, 'PM_WEBHOOK_MAX_ATTEMPTS', DEFAULT_WEBHOOK.maxAttempts, 1),
      disableAfter: int(env, 'PM_WEBHOOK_DISABLE_AFTER', DEFAULT_WEBHOOK.disableAfter, 1),
      batch: int(env, 'PM_WEBHOOK_BATCH', DEFAULT_WEBHOOK.batch, 1),
      batchMaxMs: int(env, 'PM_WEBHOOK_BATCH_MAX_MS', DEFAULT_WEBHOOK.batchMaxMs, 1),
      leaseMs: int(env, 'PM_WEBHOOK_LEASE_MS', DEFAULT_WEBHOOK.leaseMs, 100),
      slowMs: int(env, 'PM_WEBHOOK_SLOW_MS', DEFAULT_WEBHOOK.slowMs, 1),
    }),
    stream: Object.freeze({
      heartbeatMs: int(env, 'PM_GRPC_HEARTBEAT_MS', DEFAULT_STREAM.heartbeatMs, 1),
      ttlMs: int(env, 'PM_GRPC_STREAM_TTL_MS', DEFAULT_STREAM.ttlMs, 1),
      positionEveryMs: int(env, 'PM_GRPC_POSITION_EVERY_MS', DEFAULT_STREAM.positionEveryMs, 0),
      maxPerApp: int(env, 'PM_GRPC_STREAMS_PER_APP', DEFAULT_STREAM.maxPerApp, 1),
      recheckMs: int(env, 'PM_GRPC_RECHECK_MS', DEFAULT_STREAM.recheckMs, 1),
      pollMs: int(env, 'PM_GRPC_POLL_MS', DEFAULT_STREAM.pollMs, 1),
      page: int(env, 'PM_GRPC_PAGE', DEFAULT_STREAM.page, 1),
    }),
    providerHttp2: providerHttp2(env),
    exports: Object.freeze({
      initialRowsPerSec: int(env, 'PM_EXPORT_ROWS_PER_SEC', DEFAULT_EXPORTS.initialRowsPerSec, 1),
      maxBuilds: int(env, 'PM_EXPORT_BUILDS', DEFAULT_EXPORTS.maxBuilds, 1),
      maxQueued: int(env, 'PM_EXPORT_QUEUE_MAX', DEFAULT_EXPORTS.maxQueued, 1),
      sweepEveryMs: int(env, 'PM_EXPORT_SWEEP_EVERY_MS', DEFAULT_EXPORTS.sweepEveryMs, 1),
      claimEveryMs: int(env, 'PM_EXPORT_CLAIM_EVERY_MS', DEFAULT_EXPORTS.claimEveryMs, 1),
      claimStaleMs: int(env, 'PM_EXPORT_CLAIM_STALE_MS', DEFAULT_EXPORTS.claimStaleMs, 1),
      recoverBatch: int(env, 'PM_EXPORT_RECOVER_BATCH', DEFAULT_EXPORTS.recoverBatch, 1),
    }),
    dashboard: Object.freeze({
      url: (env.PM_DASHBOARD_URL || `http://${host}:${int(env, 'PM_DASHBOARD_PORT', 8081)}`).replace(/\/+$/, ''),
      secret: hexKey('PM_DASHBOARD_SECRET', env.PM_DASHBOARD_SECRET),
      sessionTtlMs: int(env, 'PM_DASHBOARD_SESSION_H', 12, 1) * 3_600_000,
      idleTtlMs: int(env, 'PM_DASHBOARD_IDLE_MIN', 30, 1) * 60_000,
      signinPerAccount: int(env, 'PM_DASHBOARD_SIGNIN_PER_ACCOUNT', 5),
      signinPerIp: int(env, 'PM_DASHBOARD_SIGNIN_PER_IP', 60),
      signinWindowMs: 15 * 60_000,
      signinDelayMaxMs: int(env, 'PM_DASHBOARD_SIGNIN_DELAY_MAX_S', 900, 1) * 1000,
      signinAccountWaitMaxMs: int(env, 'PM_DASHBOARD_SIGNIN_ACCOUNT_WAIT_S', 60, 1) * 1000,
      inviteTtlMs: int(env, 'PM_DASHBOARD_INVITE_H', 72, 1) * 3_600_000,
      scryptN: scryptN(env.PM_DASHBOARD_SCRYPT_N),
    }),
    gitCommit: env.PM_GIT_COMMIT || '',
    logLevel: env.PM_LOG_LEVEL || 'info',
    logFormat: logFormat(env.PM_LOG_FORMAT),
    logColor: !env.NO_COLOR,
    ...overrides,
    limits,
  }
  if (cfg.exports.claimStaleMs <= cfg.exports.claimEveryMs) {
    throw new ConfigError(
      `PM_EXPORT_CLAIM_STALE_MS: ${cfg.exports.claimStaleMs} must exceed PM_EXPORT_CLAIM_EVERY_MS (${cfg.exports.claimEveryMs})`,
    )
  }
  // A receipt is counted on its send: a send deleted inside the acceptance window would turn valid receipts away.
  if (cfg.jobs.sendsRetentionDays < cfg.limits.receiptWindowDays) {
    throw new ConfigError(
      `PM_SENDS_RETENTION_DAYS: ${cfg.jobs.sendsRetentionDays} is below PM_RECEIPT_WINDOW_DAYS (${cfg.limits.receiptWindowDays})`,
    )
  }
  if (cfg.stream.ttlMs <= cfg.stream.heartbeatMs) {
    throw new ConfigError(
      `PM_GRPC_STREAM_TTL_MS: ${cfg.stream.ttlMs} must exceed PM_GRPC_HEARTBEAT_MS (${cfg.stream.heartbeatMs})`,
    )
  }
  if (!/^[a-z_][a-z0-9_]*$/.test(cfg.dbSchema)) throw new ConfigError(`PM_DB_SCHEMA: "${cfg.dbSchema}" is not a plain identifier`)
  return Object.freeze(cfg)
}

/** The config as it may appear in a start-up log line: no secrets, no passwords. */
export function redacted(cfg: Config): Record<string, unknown> {
  return {
    ...cfg,
    databaseUrl: redactUrl(cfg.databaseUrl),
    databaseDirectUrl: redactUrl(cfg.databaseDirectUrl),
    redisUrl: redactUrl(cfg.redisUrl),
    platformKey: cfg.platformKey ? 'set' : 'unset',
    opsToken: cfg.opsToken ? 'set' : 'unset',
    vaultKey: cfg.vaultKey ? 'set' : 'unset',
    dashboard: { ...cfg.dashboard, secret: cfg.dashboard.secret ? 'set' : 'unset' },
  }
}
