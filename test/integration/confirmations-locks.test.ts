// Lock order of PUT /api/v1/confirmacoes: the webhook queue's advisory lock first, then the app's row (FOR NO KEY
// UPDATE), with lock_timeout as a guard. A URL change waiting for a dispatcher's slow batch must never stall the
// app's sends, whose foreign keys take KEY SHARE on the same row.
import pg from 'pg'
import t from 'tap'
import { QUEUE_LOCK_CLASS, QUEUE_LOCK_KEY } from '../../src/confirmations/store'
import { basic, DATABASE_URL, startService, type TestService } from '../helpers/service'
import { until } from '../helpers/until'

/** Holds the app's webhook-queue lock, as a dispatcher posting to a slow destination does. */
async function holdQueueLock(
  s: TestService,
  appId: string,
): Promise<{ release: () => Promise<void>; waiters: () => Promise<number> }> {
  const c = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${s.cfg.dbSchema}` })
  await c.connect()
  await c.query(`SELECT pg_advisory_lock($1, ${QUEUE_LOCK_KEY})`, [QUEUE_LOCK_CLASS, appId])
  return {
    release: async () => {
      await c.query(`SELECT pg_advisory_unlock($1, ${QUEUE_LOCK_KEY})`, [QUEUE_LOCK_CLASS, appId])
      await c.end()
    },
    /** Sessions waiting for the lock this one holds. */
    waiters: async () =>
      (
        await c.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks w JOIN pg_locks h USING (locktype, database, classid, objid, objsubid)
            WHERE w.locktype = 'advisory' AND NOT w.granted AND h.granted AND h.pid = pg_backend_pid()`,
        )
      ).rows[0]?.n ?? 0,
  }
}

t.test('a URL change waiting for the queue lock does not stall the app sends', async (t) => {
  const s = await startService(t, { limits: { ipPerMin: 0 } })
  const app = await s.createApp()
  const reg = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: 'tok-1' } })
  t.equal(reg.status, 200)
  const lock = await holdQueueLock(s, app.id)
  const put = s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: 'https://example.com/hook' },
    headers: basic(app.api_key),
  })
  await until('the PUT waits for the queue lock', async () => (await lock.waiters()) === 1)
  const started = Date.now()
  const send = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, include_player_ids: [reg.json.id], contents: { en: 'oi' } },
    headers: basic(app.api_key),
  })
  const tookMs = Date.now() - started
  t.equal(send.status, 200, send.text)
  t.equal(send.json.recipients, 1)
  t.ok(tookMs < 2_000, `the send did not wait for the URL change (${tookMs} ms)`)
  await lock.release()
  const r = await put
  t.equal(r.status, 200, 'the URL change completes once the batch in flight is done')
  t.match(r.json.segredo, /^pm_whsec_/)
})

t.test('lock_timeout guards the wait: past it the PUT answers 503 and writes nothing', async (t) => {
  const s = await startService(t, { limits: { configLockTimeoutMs: 400 } })
  const app = await s.createApp()
  const lock = await holdQueueLock(s, app.id)
  t.teardown(lock.release)
  const started = Date.now()
  const r = await s.call('PUT', '/api/v1/confirmacoes', {
    body: { app_id: app.id, url: 'https://example.com/hook', modo: 'webhook' },
    headers: basic(app.api_key),
  })
  t.equal(r.status, 503, r.text)
  t.equal(r.json.explain.dependencia, 'postgres', 'named')
  t.ok(Date.now() - started < 5_000, 'answered soon after the timeout')
  t.same(await s.sql('SELECT id FROM webhook_destinations'), [], 'no destination written')
  t.same(await s.sql('SELECT confirm_mode FROM apps WHERE id = $1', [app.id]), [{ confirm_mode: 'consulta' }], 'mode unchanged')
})
