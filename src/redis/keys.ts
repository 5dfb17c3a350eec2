// Every Redis key and channel name, spelled once. Per-app keys carry the app id as a hash tag (`{<app_id>}`) so one
// app's keys share a Redis Cluster slot; a work partition's stream and lease carry `{p<N>}`, so partitions spread
// over the cluster's masters. Untagged keys are only used by single-key commands; channels are cluster-wide.
export class Keys {
  constructor(readonly prefix: string) {}

  /** Pub/sub channel: an app's cached state (keys, pause, plan) changed; every instance drops its cache entries. */
  invalidations(): string {
    return `${this.prefix}:ctl:invalidate`
  }

  /** Pub/sub channel: an app's in-app campaigns or in-app config changed; every instance drops its package cache. */
  inappChanges(): string {
    return `${this.prefix}:ctl:inapp`
  }

  /** Pub/sub channel: an app's delivery credential changed (`<app_id>:<platform>`); workers drop cached providers. */
  credentials(): string {
    return `${this.prefix}:ctl:credentials`
  }

  /** Registrations counted per app per hour, across instances (the spec, Limits). */
  registrations(appId: string, hour: number): string {
    return `${this.prefix}:{${appId}}:reg:${hour}`
  }

  /** Exports started per app per second (the spec, Limits). */
  exports(appId: string, second: number): string {
    return `${this.prefix}:{${appId}}:exp:${second}`
  }

  /** Sends created per app per second (the spec, Limits). */
  sends(appId: string, second: number): string {
    return `${this.prefix}:{${appId}}:snd:${second}`
  }

  /** A partition's work stream: accepted sends of the apps hashed to it (consumed by the delivery workers). */
  workStream(partition: number): string {
    return `${this.prefix}:{p${partition}}:work`
  }

  /** In-flight lock of an idempotency key: a concurrent call with the same key waits for the first. */
  idempotencyLock(appId: string, key: string): string {
    return `${this.prefix}:{${appId}}:idem:${key}`
  }

  /** Reads of sends counted per app per second (the spec, Limits). */
  reads(appId: string, second: number): string {
    return `${this.prefix}:{${appId}}:rd:${second}`
  }

  /** A periodic job's lock: one instance runs it at a time. */
  job(name: string): string {
    return `${this.prefix}:job:${name}`
  }

  /** A work partition's lease: the worker that owns it, for a few seconds at a time. */
  lease(partition: number): string {
    return `${this.prefix}:{p${partition}}:lease`
  }

  /** Live delivery workers and their last heartbeat (a sorted set): leases are shared out among them. */
  workers(): string {
    return `${this.prefix}:workers`
  }

  /** An app's recent APNs answers in one credential environment, by hour (src/delivery/bad-tokens.ts). */
  apnsAnswers(appId: string, env: string): string {
    return `${this.prefix}:{${appId}}:apns:${env}`
  }

  /** An app's delivery pace (a token bucket shared by every process delivering for it). */
  pace(appId: string): string {
    return `${this.prefix}:{${appId}}:pace`
  }

  /** Set while a process asks for the app's transactional tokens: marketing asks wait (the lanes, across processes). */
  paceLane(appId: string): string {
    return `${this.prefix}:{${appId}}:pace:tx`
  }

  /** An app's open confirmation streams on every instance (a sorted set: `<instance>:<stream>` → expiry ms). */
  grpcStreams(appId: string): string {
    return `${this.prefix}:{${appId}}:grpc:streams`
  }

  /** Dashboard sign-in attempts per network (an IPv4 address or an IPv6 /64) per window. */
  signinIp(net: string, window: number): string {
    return `${this.prefix}:dash:signin:ip:${net}:${window}`
  }

  // One account's sign-in counters share a slot (`{sa:<digest of the e-mail>}`): one script reads and writes them.

  /** Recent failed sign-ins of an account, from anywhere (a hash: f). */
  signinAccountFailures(account: string): string {
    return `${this.prefix}:{sa:${account}}:signin:f`
  }

  /** Failed sign-ins of an account from one source (`n:<network>` or `b:<known browser>`) and when its next may be
   *  judged (a hash: f, r). */
  signinSourceFailures(account: string, source: string): string {
    return `${this.prefix}:{sa:${account}}:signin:s:${source}`
  }

  /** A dashboard session's one-shot message (shown by the next page it opens). */
  dashboardFlash(session: string): string {
    return `${this.prefix}:dash:flash:${session}`
  }

  /** An erasure started in the dashboard: its state, progress and summary (a hash; src/dashboard/erasure-jobs.ts).
   *  Named by a random id only: nothing of the tenant being erased is kept in it. */
  erasureJob(job: string): string {
    return `${this.prefix}:dash:erasure:${job}`
  }

  /** Held while an erasure of one app or organisation runs in the dashboard (its value: the job's id). */
  erasureLock(tenant: string): string {
    return `${this.prefix}:dash:erasure-lock:${tenant}`
  }
}
