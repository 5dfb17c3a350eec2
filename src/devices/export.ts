// The device CSV export (the spec, Export): answered at once, built in the background. Postgres streams the rows
// (COPY … TO STDOUT, CSV) through gzip into a temporary file that is renamed when complete, so memory stays flat
// whatever the device count and a half-written file is never served. The URL carries 32 random bytes; only their
// sha256 is stored and names the file. Files live 72 hours on the service clock, then a sweep removes them.
import { type Actor, BY_CODE, record } from '../audit/record'
import { createHash, randomBytes } from 'node:crypto'
import { constants, createWriteStream, type WriteStream } from 'node:fs'
import { access, type FileHandle, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import type { Logger } from 'pino'
import { to as copyTo } from 'pg-copy-streams'
import { DEFAULT_EXPORTS, type Exports } from '../core/config'
import { type Db, query, type Tx, tx } from '../db/pool'
import { ApiError } from '../core/errors'
import type { Clock } from '../core/time'

// Tuning (builds at once, their queue, the first estimate, claims and takeover): Exports in src/core/config.ts. The rows
// per second estimate starts at `initialRowsPerSec`; each export of 50,000+ rows then moves it toward the rate this
// process achieves. The queue is bounded because each app may ask once a second and it must not grow without bound.
const FILE_RE = /^([0-9a-f]{64})\.csv\.gz$/
/** `.<hash>.<random>.tmp` (two instances building one export never share a file); `.<hash>.tmp` from older builds. */
const TMP_RE = /^\.[0-9a-f]{64}(\.[0-9a-f]{8})?\.tmp$/

export interface ExportAnswer {
  csv_file_url: string
  pm_pronto_em_s_estimado: number
  pm_validade_h: number
}

export interface ExportFile {
  handle: FileHandle
  size: number
}

interface Job {
  appId: string
  hash: string
  rows: number
  /** `incluir_invalidos=true`: dead devices too. */
  includeDead: boolean
}

const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex')

/**
 * The file's rows (the spec, Export: "standard CSV escaping"): Postgres's CSV output is RFC 4180 quoting, so every
 * value comes back exactly as stored. A field is quoted only when it holds a comma, a quote, CR or LF (inner quotes
 * doubled); NULL is an empty field. Nothing is rewritten to defuse spreadsheet formulas: `+5511…` and `=1+1` are data
 * (docs/decisions.md; docs/design/devices.md says how to open the file safely).
 */
export function copySql(appId: string, includeDead = false): string {
  // COPY takes no parameters; appId is a validated, lower-case UUID (the key's own app).
  if (!/^[0-9a-f-]{36}$/.test(appId)) throw new Error('copySql: app id is not a UUID')
  return `COPY (
    SELECT id, external_user_id, notification_types,
           CASE WHEN invalid_identifier THEN 'true' ELSE 'false' END AS invalid_identifier,
           floor(extract(epoch FROM last_active))::bigint AS last_active
      FROM devices WHERE app_id = '${appId}' AND NOT sandbox${includeDead ? '' : ' AND NOT invalid_identifier'}
  ) TO STDOUT WITH (FORMAT csv, HEADER)`
}

export class Exporter {
  #rowsPerSec: number
  #queue: Job[] = []
  #running = new Map<Job, Promise<void>>()
  #rowsAhead = 0
  #abort = new AbortController()
  #timer: NodeJS.Timeout | null = null
  #claimTimer: NodeJS.Timeout | null = null

  constructor(
    private readonly db: Db,
    private readonly dir: string,
    private readonly publicBaseUrl: string,
    private readonly validityH: number,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly o: Exports = DEFAULT_EXPORTS,
  ) {
    this.#rowsPerSec = o.initialRowsPerSec
  }

  startSweeping(): void {
    if (this.dir === '' || this.#timer) return
    this.#timer = setInterval(() => {
      this.sweep().catch((err) => this.log.warn({ err: String(err) }, 'export sweep failed'))
    }, this.o.sweepEveryMs)
    this.#timer.unref()
    const claims = (): void => {
      this.#refreshClaims()
        .then(() => this.recover())
        .catch((err) => this.log.warn({ err: String(err) }, 'export claims: refresh or takeover failed'))
    }
    claims()
    this.#claimTimer = setInterval(claims, this.o.claimEveryMs)
    this.#claimTimer.unref()
  }

  /**
   * Takes over builds whose instance is gone (claim older than `claimStaleMs`, or never claimed): claims them
   * atomically (SKIP LOCKED, so two instances never take the same one) and queues them here. Answers how many.
   */
  async recover(): Promise<number> {
    if (this.dir === '' || this.#abort.signal.aborted) return 0
    const now = this.clock()
    const r = await query<{ token_hash: string; app_id: string; include_dead: boolean }>(
      this.db,
      `UPDATE exports SET claimed_at = $1
        WHERE (app_id, token_hash) IN (
          SELECT app_id, token_hash FROM exports
           WHERE status = 'building' AND expires_at > $1 AND COALESCE(claimed_at, created_at) < $2
           ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING token_hash, app_id, include_dead`,
      [new Date(now), new Date(now - this.o.claimStaleMs), this.o.recoverBatch],
    )
    for (const x of r.rows) {
      if (this.#owned().includes(x.token_hash)) continue // ours, only slow to refresh
      this.log.info({ app_id: x.app_id }, 'export build taken over from an instance that went away')
      this.#enqueue({ appId: x.app_id, hash: x.token_hash, rows: 0, includeDead: x.include_dead })
    }
    return r.rows.length
  }

  #owned(): string[] {
    return [...this.#queue, ...this.#running.keys()].map((j) => j.hash)
  }

  /** One statement keeps every build this instance holds (queued or running) claimed. */
  async #refreshClaims(): Promise<void> {
    const mine = this.#owned()
    if (mine.length === 0) return
    await query(this.db, `UPDATE exports SET claimed_at = $2 WHERE token_hash = ANY($1::text[]) AND status = 'building'`, [
      mine,
      new Date(this.clock()),
    ])
  }

  /** 503 unless the export directory is configured and writable. */
  async requireStorage(): Promise<void> {
    if (this.dir === '') throw new ApiError('EXPORT_STORAGE_UNSET')
    try {
      await mkdir(this.dir, { recursive: true })
      await access(this.dir, constants.W_OK)
    } catch (err) {
      this.log.warn({ dir: this.dir, err: String(err) }, 'export directory not writable')
      throw new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'armazenamento' })
    }
  }

  /** Records the export and queues its build; the estimate counts the rows of builds still ahead of it. */
  /** `by`: who asked (the audit log); the export's row and its record commit together. */
  async start(appId: string, by: Actor = BY_CODE, includeDead = false): Promise<ExportAnswer> {
    if (this.#queue.length >= this.o.maxQueued) throw new ApiError('DEPENDENCY_UNAVAILABLE', { dependencia: 'armazenamento' })
    const count = await query<{ n: string }>(
      this.db,
      'SELECT count(*) AS n FROM devices WHERE app_id = $1 AND NOT sandbox AND ($2 OR NOT invalid_identifier)',
      [appId, includeDead],
    )
    const rows = Number(count.rows[0]?.n ?? 0)
    const token = randomBytes(32).toString('hex')
    const hash = sha256hex(token)
    const now = this.clock()
    await tx(this.db, async (c) => {
      await query(
        c,
        `INSERT INTO exports (token_hash, app_id, status, created_at, expires_at, claimed_at, include_dead)
         VALUES ($1, $2, 'building', $3, $4, $3, $5)`,
        [hash, appId, new Date(now), new Date(now + this.validityH * 3_600_000), includeDead],
      )
      // The file's address is its own credential: the record says how many devices, never where.
      await record(
        c,
        { by, action: 'exportacao.pedida', appId, details: { devices: rows, valid_hours: this.validityH } },
        new Date(now),
      )
    })
    const estimate = Math.max(1, Math.ceil((this.#rowsAhead + rows) / this.#rowsPerSec))
    this.#enqueue({ appId, hash, rows, includeDead })
    return {
      csv_file_url: `${this.publicBaseUrl}/api/v1/exports/${token}.csv.gz`,
      pm_pronto_em_s_estimado: estimate,
      pm_validade_h: this.validityH,
    }
  }

  /** The ready, unexpired file named by a URL's last segment, opened; null otherwise (the route answers 404). */
  async file(name: string): Promise<ExportFile | null> {
    const m = FILE_RE.exec(name)
    if (!m || this.dir === '') return null
    const hash = sha256hex(m[1] as string)
    const r = await query<{ status: string; expires_at: Date }>(
      this.db,
      'SELECT status, expires_at FROM exports WHERE token_hash = $1',
      [hash],
    )
    const row = r.rows[0]
    if (row?.status !== 'ready') return null
    if (row.expires_at.getTime() <= this.clock()) {
      await this.#remove(hash)
      return null
    }
    try {
      const handle = await open(this.#path(hash), 'r')
      const { size } = await handle.stat()
      return { handle, size }
    } catch {
      return null // built on another instance whose PM_EXPORT_DIR is not shared with this one
    }
  }

  /** Removes every expired export (file and row), and temporary files a crashed build left behind. */
  async sweep(): Promise<number> {
    const now = this.clock()
    const r = await query<{ token_hash: string }>(this.db, 'SELECT token_hash FROM exports WHERE expires_at <= $1', [
      new Date(now),
    ])
    for (const { token_hash } of r.rows) await this.#remove(token_hash)
    const names = await readdir(this.dir).catch(() => [] as string[])
    for (const name of names) {
      if (!TMP_RE.test(name)) continue
      const path = join(this.dir, name)
      const st = await stat(path).catch(() => null)
      if (st && now - st.mtimeMs > this.validityH * 3_600_000) await unlink(path).catch(() => {})
    }
    return r.rows.length
  }

  /**
   * Stops the sweep, abandons queued builds and aborts running ones (their temporary files are removed). Their rows
   * stay `building`; their claims go stale and another instance (or this one, restarted) takes them over.
   */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    if (this.#claimTimer) clearInterval(this.#claimTimer)
    this.#queue = []
    this.#abort.abort()
    await Promise.allSettled([...this.#running.values()])
  }

  #path(hash: string): string {
    return join(this.dir, `${hash}.csv.gz`)
  }

  async #remove(hash: string): Promise<void> {
    await unlink(this.#path(hash)).catch(() => {})
    await query(this.db, 'DELETE FROM exports WHERE token_hash = $1', [hash])
  }

  #enqueue(job: Job): void {
    this.#rowsAhead += job.rows
    this.#queue.push(job)
    this.#next()
  }

  #next(): void {
    while (this.#running.size < this.o.maxBuilds && this.#queue.length > 0 && !this.#abort.signal.aborted) {
      const job = this.#queue.shift() as Job
      const p = this.#build(job).finally(() => {
        this.#running.delete(job)
        this.#rowsAhead -= job.rows
        this.#next()
      })
      this.#running.set(job, p)
    }
  }

  async #build(job: Job): Promise<void> {
    const tmp = join(this.dir, `.${job.hash}.${randomBytes(4).toString('hex')}.tmp`)
    const started = performance.now()
    let client: Tx | null = null
    let out: WriteStream | null = null
    try {
      await mkdir(this.dir, { recursive: true }) // a taken-over build may be this instance's first export
      client = await this.db.connect()
      this.#abort.signal.throwIfAborted()
      const copy = client.query(copyTo(copySql(job.appId, job.includeDead)))
      out = createWriteStream(tmp)
      await pipeline(copy, createGzip({ level: 6 }), out, { signal: this.#abort.signal })
      await rename(tmp, this.#path(job.hash))
      const rows = copy.rowCount // from the COPY command tag: data rows, header excluded
      const seconds = (performance.now() - started) / 1000
      if (rows >= 50_000) this.#rowsPerSec = Math.round(0.5 * this.#rowsPerSec + 0.5 * (rows / seconds))
      await query(
        this.db,
        `UPDATE exports SET status = 'ready', rows = $2, bytes = $3, ready_at = $4
          WHERE app_id = $5 AND token_hash = $1 AND status = 'building'`,
        [job.hash, rows, out.bytesWritten, new Date(this.clock()), job.appId],
      )
      this.log.info({ app_id: job.appId, rows, bytes: out.bytesWritten, seconds: Number(seconds.toFixed(2)) }, 'export ready')
    } catch (err) {
      // The pipeline rejects as soon as it is aborted, while the file's open may still be pending: that open would
      // create the file after an unlink made now. The stream is closed (opened first, if it was opening) before.
      const stream = out
      if (stream && !stream.closed) await new Promise<void>((resolve) => stream.once('close', () => resolve()))
      await unlink(tmp).catch(() => {})
      if (this.#abort.signal.aborted) {
        // Stopping: the connection carrying an unfinished COPY is not reusable.
        client?.release(true)
        client = null
        return
      }
      this.log.error({ app_id: job.appId, err }, 'export failed')
      await query(this.db, `UPDATE exports SET status = 'failed' WHERE app_id = $2 AND token_hash = $1`, [
        job.hash,
        job.appId,
      ]).catch(() => {})
      client?.release(true)
      client = null
    } finally {
      client?.release()
    }
  }
}
