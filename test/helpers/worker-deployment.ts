// A deployment of worker processes for the crash and slice tests: an in-process API, the fake providers, one app
// with an FCM credential and `devices` Android devices written straight to Postgres, and `pombo serve --roles worker`
// children on the same schema and Redis prefix, each logging to a temporary file (PM_KEEP_WORKER_LOGS=1 keeps them).
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { type Pombo, startPombo } from '../../bench/lib/pombo'
import { CredentialService } from '../../src/credentials/service'
import { parseServiceAccount } from '../../src/credentials/validate'
import { startFakeProviders } from '../fakes'
import { startService } from './service'

export interface WorkerDeploymentOptions {
  /** Names the device tokens, the service account and the log files. */
  label: string
  devices: number
  partitions: number
  /** The app's rate_por_min (default: high enough never to pace). */
  rate?: number
  /** The workers' settings; the fakes' addresses and trust are added. */
  workerEnv: Record<string, string>
}

export async function workerDeployment(t: Test, o: WorkerDeploymentOptions) {
  const fakes = await startFakeProviders(t)
  const s = await startService(t, {
    roles: ['api'],
    env: {
      PM_PARTITIONS: String(o.partitions),
      PM_DEFAULT_PLAN: 'pro',
      PM_FCM_BASE_URL: fakes.fcm.url,
      PM_APNS_BASE_URL: fakes.apns.url,
    },
  })
  const app = await s.createApp({ rate_por_min: o.rate ?? 10_000_000 })
  const { credential, meta } = parseServiceAccount(JSON.stringify(fakes.fcm.serviceAccount(`pombo-${o.label}`)))
  await new CredentialService({ ...s.svc.deps, now: s.svc.deps.clock }).save(app.id, 'fcm', credential, meta)
  // Registration's columns, written straight (the API would take longer than the test is worth).
  const ids = (
    await s.sql<{ id: string }>(
      `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, language, notification_types,
                            invalid_identifier, last_active, created_at, updated_at)
       SELECT $1, gen_random_uuid(), $3 || '-' || i, 1, false, 'fcm', 'en', 1, false, now(), now(), now()
         FROM generate_series(1, $2::int) AS i
       RETURNING id`,
      [app.id, o.devices, o.label],
    )
  ).map((r) => r.id)
  await s.sql('ANALYZE devices')

  const workers: Pombo[] = []
  const logs: string[] = []
  t.teardown(async () => {
    await Promise.all(workers.map((w) => w.stop()))
    if (!process.env.PM_KEEP_WORKER_LOGS) for (const f of logs) rmSync(f, { force: true })
  })
  const env = { ...fakes.env, ...o.workerEnv }

  /** Worker log lines (JSON) at warn or worse, and the sweeper's and the partitions' news, for the diagnosis when an
   *  assertion fails. */
  const troubles = (): string[] =>
    logs.flatMap((f) => {
      try {
        return readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => /"level":(40|50|60)/.test(l) || /"msg":"(sweeper|partition)/.test(l))
          .map((l) => `${f}: ${l}`)
      } catch {
        return []
      }
    })

  return {
    s,
    fakes,
    fcm: fakes.fcm,
    app,
    ids,
    workers,
    /** Starts one more worker process of the deployment. */
    async worker(): Promise<Pombo> {
      const log = join(tmpdir(), `pombo-${o.label}-${s.cfg.redisPrefix}-${workers.length}.log`)
      logs.push(log)
      const fd = openSync(log, 'w')
      try {
        const w = await startPombo(0, env, 'worker', [], {
          shared: { schema: s.cfg.dbSchema, prefix: s.cfg.redisPrefix },
          stdout: fd,
        })
        workers.push(w)
        return w
      } finally {
        closeSync(fd)
      }
    },
    troubles,
    /**
     * The sends' rows once every one is closed. It waits while delivery makes progress and fails once the provider
     * has received no request for `stallMs` (a send left behind by every worker), not after a fixed time, which a
     * loaded machine's slower deliveries would overrun. The failure names the open sends, their slices and delivery
     * rows, the fake's counts and the workers' troubles.
     */
    async closed(sendIds: string[], stallMs = 20_000): Promise<Array<Record<string, unknown>>> {
      let seen = -1
      let until = 0
      for (;;) {
        const rows = await s.sql('SELECT * FROM sends WHERE id = ANY($1::uuid[])', [sendIds])
        if (rows.length === sendIds.length && rows.every((r) => r.remaining === 0 && r.completed_at)) return rows
        const requests = fakes.fcm.stats().requests
        if (requests !== seen) {
          seen = requests
          until = Date.now() + stallMs
        }
        if (Date.now() > until) {
          const open = rows
            .filter((r) => !(r.remaining === 0 && r.completed_at))
            .map((r) => {
              const { id, recipients, successful, failed, errored, remaining, expansion_done, completed_at } = r
              const { queued_at, picked_at, enqueued_at } = r
              return {
                id,
                recipients,
                successful,
                failed,
                errored,
                remaining,
                expansion_done,
                completed_at,
                queued_at,
                picked_at,
                enqueued_at,
              }
            })
          const counts = await s.sql(
            'SELECT send_id, status, count(*)::int AS n FROM deliveries WHERE send_id = ANY($1::uuid[]) GROUP BY 1, 2 ORDER BY 1, 2',
            [sendIds],
          )
          const slices = await s.sql(
            'SELECT send_id, slice, owner, leases, expansion_done, done_at FROM send_slices WHERE send_id = ANY($1::uuid[]) ORDER BY 1, 2',
            [sendIds],
          )
          throw new Error(
            `sends did not close: ${JSON.stringify(open)}\ndeliveries: ${JSON.stringify(counts)}\nslices: ${JSON.stringify(slices)}\n` +
              `fake: ${JSON.stringify(fakes.fcm.stats())}\nnow: ${new Date().toISOString()}\n${troubles().slice(-60).join('\n')}`,
          )
        }
        await new Promise((r) => setTimeout(r, 100))
      }
    },
    /** Resolves once the fake has accepted `n` messages (duplicates included). */
    async delivered(n: number, timeoutMs = 30_000): Promise<void> {
      const until = Date.now() + timeoutMs
      while (fakes.fcm.stats().delivered < n) {
        if (Date.now() > until) throw new Error(`only ${fakes.fcm.stats().delivered} of ${n} delivered`)
        await new Promise((r) => setTimeout(r, 5))
      }
    },
  }
}
