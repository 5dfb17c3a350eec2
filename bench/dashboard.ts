// `npm run bench -- dashboard`: the dashboard's sending and in-app pages on one app with 1,000,000 devices and
// 100,000 sends (issue 34 point 7), each page's answer time (request to the last byte, one person signed in) as the
// median of BENCH_ROUNDS rounds, beside `/apps` timed in the same rounds; and the composer's audience count (the
// API's dry run over a segment of the whole base). Targets: every page under 300 ms, the count under 1 s.
// The base is written by SQL (generate_series), not through the API: 1,000,000 devices (10% iOS, 10% web, the rest
// Android; half with an external user id; 2% with a dead token; active over the last 30 days), 100,000 list sends
// spread over 30 days, one send to every device (deliveries and receipts for all of them: 97% accepted, 2% dead
// tokens, 1% provider errors, 85% proven, 5% clicked, within minutes) and one to 5,000 devices. Filling takes about a
// minute here; the timed part a few seconds.
// Settings changed: PM_LIMIT_IP_PER_MIN=0 (one client asks many times), PM_DEFAULT_PLAN=pro (proof of arrival shown).
// BENCH_DASHBOARD_DEVICES and BENCH_DASHBOARD_SENDS change the size (defaults 1,000,000 and 100,000).
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { PeopleService } from '../src/people/service'
import { DashClient } from '../test/helpers/dashboard'
import { record } from './lib/figures'
import { medianOf } from './lib/report'
import { DATABASE_URL, startPombo } from './lib/pombo'

const DEVICES = Number(process.env.BENCH_DASHBOARD_DEVICES ?? 1_000_000)
const SENDS = Number(process.env.BENCH_DASHBOARD_SENDS ?? 100_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SENHA = 'uma-senha-de-benchmark'

export async function fill(db: pg.Pool, appId: string, big: string, medium: string): Promise<void> {
  const t0 = Date.now()
  await db.query(
    `INSERT INTO devices (app_id, id, identifier, device_type, sandbox, transporte, external_user_id, sdk_versao, language,
                          notification_types, invalid_identifier, invalid_reason, last_active, last_receipt_at, created_at, updated_at)
     SELECT $1, gen_random_uuid(), 'tok-' || i, CASE i % 10 WHEN 0 THEN 0 WHEN 1 THEN 5 ELSE 1 END, false,
            CASE i % 10 WHEN 0 THEN 'apns' ELSE 'fcm' END, CASE WHEN i % 2 = 0 THEN 'user-' || i END, '0.6.0', 'pt',
            1, i % 50 = 0, CASE WHEN i % 50 = 0 THEN 'UNREGISTERED' END, now() - (i % 30) * interval '1 day',
            CASE WHEN i % 3 = 0 THEN now() - (i % 10) * interval '1 day' END, now() - interval '40 days', now()
       FROM generate_series(1, $2::int) i`,
    [appId, DEVICES],
  )
  const t1 = Date.now()
  // List sends of 3 devices each, one every 30 days / SENDS, newest first by i.
  await db.query(
    `INSERT INTO sends (app_id, id, lane, target_kind, include_player_ids, platforms, message, name, contents, recipients,
                        recipients_exact, expansion_done, successful, failed, errored, remaining, converted, recebidos,
                        ttl_s, queued_at, completed_at)
     SELECT $1, gen_random_uuid(), i % 2, 'players', '["00000000-0000-4000-8000-000000000001"]',
            '{"ios": true, "android": true, "web": true}',
            jsonb_build_object('contents', jsonb_build_object('pt', 'Mensagem ' || i), 'data', '{}'::jsonb,
                               'content_available', false, 'mutable_content', false, 'ttl', 259200, 'priority', 10),
            'Campanha ' || i, jsonb_build_object('pt', 'Mensagem ' || i), 3, true, true, 3, 0, 0, 0, i % 2, 2, 259200,
            now() - (i * (2592000.0 / $2)) * interval '1 second', now() - (i * (2592000.0 / $2) - 5) * interval '1 second'
       FROM generate_series(1, $2::int) i`,
    [appId, SENDS],
  )
  const t2 = Date.now()
  // The big send (every device) and a medium one (5,000), each with its delivery rows and receipts.
  for (const [id, limit, name] of [
    [big, DEVICES, 'Todos os clientes'],
    [medium, 5_000, 'Clientes VIP'],
  ] as const) {
    await db.query(
      `INSERT INTO sends (app_id, id, lane, target_kind, included_segments, platforms, message, name, contents, recipients,
                          recipients_exact, expansion_done, remaining, ttl_s, queued_at, completed_at)
       VALUES ($1, $2, 1, 'segments', '["Subscribed Users"]', '{"ios": true, "android": true, "web": true}',
               '{"contents": {"pt": "Oferta"}, "data": {}, "content_available": false, "mutable_content": false, "ttl": 259200, "priority": 5}',
               $3, '{"pt": "Oferta"}', $4, false, true, 0, 259200, now() - interval '2 hours', now() - interval '110 minutes')`,
      [appId, id, name, limit],
    )
    await db.query(
      `INSERT INTO deliveries (send_id, device_id, app_id, device_type, status, attempts, updated_at, reason)
       SELECT $2, d.id, d.app_id, d.device_type, CASE WHEN d.h < 97 THEN 1 WHEN d.h < 99 THEN 2 ELSE 3 END, 1,
              now() - interval '2 hours' + (random() * 120) * interval '1 second',
              CASE WHEN d.h < 97 THEN NULL WHEN d.h < 99 THEN 'dead_token:UNREGISTERED' ELSE 'provider_error:Unavailable' END
         FROM (SELECT id, app_id, device_type, abs(hashtext(id::text)) % 100 AS h FROM devices WHERE app_id = $1 LIMIT $3) d`,
      [appId, id, limit],
    )
    await db.query(
      `INSERT INTO receipts (day, send_id, device_id, kind, app_id, at)
       SELECT ((now() - interval '2 hours') AT TIME ZONE 'UTC')::date, send_id, device_id, k, app_id,
              updated_at + (CASE k WHEN 0 THEN random() * 30 ELSE 30 + random() * 300 END) * interval '1 second'
         FROM deliveries CROSS JOIN (VALUES (0), (1)) AS x(k)
        WHERE send_id = $1 AND status = 1 AND abs(hashtext(device_id::text)) % 100 < CASE k WHEN 0 THEN 85 ELSE 5 END`,
      [id],
    )
    await db.query(
      `UPDATE sends s SET recipients = x.n, successful = x.ok, failed = x.fail, errored = x.err,
              android_successful = x.aok, ios_successful = x.iok, android_failed = x.afail, ios_failed = x.ifail,
              recebidos = (SELECT count(*) FROM receipts r WHERE r.send_id = s.id AND r.kind = 0),
              converted = (SELECT count(*) FROM receipts r WHERE r.send_id = s.id AND r.kind = 1)
         FROM (SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 1)::int AS ok, count(*) FILTER (WHERE status = 2)::int AS fail,
                      count(*) FILTER (WHERE status = 3)::int AS err,
                      count(*) FILTER (WHERE status = 1 AND device_type <> 0)::int AS aok, count(*) FILTER (WHERE status = 1 AND device_type = 0)::int AS iok,
                      count(*) FILTER (WHERE status = 2 AND device_type <> 0)::int AS afail, count(*) FILTER (WHERE status = 2 AND device_type = 0)::int AS ifail
                 FROM deliveries WHERE send_id = $2) x
        WHERE s.app_id = $1 AND s.id = $2`,
      [appId, id],
    )
  }
  const t3 = Date.now()
  await db.query('VACUUM ANALYZE devices')
  await db.query('VACUUM ANALYZE sends')
  await db.query('VACUUM ANALYZE deliveries')
  await db.query('VACUUM ANALYZE receipts')
  console.log(
    `filled: ${DEVICES} devices ${((t1 - t0) / 1000).toFixed(1)} s, ${SENDS} sends ${((t2 - t1) / 1000).toFixed(1)} s, ` +
      `two sends with deliveries and receipts ${((t3 - t2) / 1000).toFixed(1)} s, vacuum ${((Date.now() - t3) / 1000).toFixed(1)} s`,
  )
}

export async function dashboardBench(): Promise<void> {
  const api = await startPombo(9450, { PM_LIMIT_IP_PER_MIN: '0', PM_DEFAULT_PLAN: 'pro' }, 'api,dashboard')
  const db = new pg.Pool({ connectionString: DATABASE_URL, options: `-c search_path=${api.schema}`, max: 2 })
  try {
    const app = await api.createApp({ nome: 'Loja grande' })
    const org = (await db.query<{ org_id: string }>('SELECT org_id FROM apps WHERE id = $1', [app.id])).rows[0]?.org_id
    await new PeopleService(db, Date.now).create({
      email: 'ana@example.com',
      orgId: org ?? null,
      operator: false,
      password: SENHA,
    })
    const big = randomUUID()
    const medium = randomUUID()
    await fill(db, app.id, big, medium)
    const campaign = await fetch(`${api.url}/api/v1/in_app_messages`, {
      method: 'POST',
      headers: { authorization: `Basic ${app.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ app_id: app.id, nome: 'Boas-vindas', conteudo: { pt: { titulo: 'Olá', corpo: 'Bem-vindo' } } }),
    })
    const campaignId = ((await campaign.json()) as { id: string }).id

    const c = new DashClient(`http://127.0.0.1:${api.port + 1}`)
    if ((await c.signIn('ana@example.com', SENHA)).status !== 303) throw new Error('sign-in failed')
    const base = `/apps/${app.id}`
    // A cursor 90,000 sends down the list: keyset pages cost the same deep as at the top.
    const deep = (
      await db.query<{ queued_at: Date; id: string }>(
        'SELECT queued_at, id FROM sends WHERE app_id = $1 ORDER BY queued_at DESC, id DESC OFFSET $2 LIMIT 1',
        [app.id, Math.floor(SENDS * 0.9)],
      )
    ).rows[0]
    const deepCursor = deep ? `${deep.queued_at.getTime()}_${deep.id}` : ''
    const token = DashClient.token(await c.get(`${base}/envios/novo`))
    const pages: Array<[string, () => Promise<{ status: number }>]> = [
      ['/apps (same-run reference)', () => c.get('/apps')],
      ['app page /apps/{id} (reference)', () => c.get(base)],
      ['composer', () => c.get(`${base}/envios/novo`)],
      ['send page, 1,000,000 devices', () => c.get(`${base}/envios/${big}`)],
      ['send page live data, 1,000,000 devices', () => c.get(`${base}/envios/${big}/dados.json`)],
      ['send page, 5,000 devices', () => c.get(`${base}/envios/${medium}`)],
      ['sends list', () => c.get(`${base}/envios`)],
      ['sends list, 90,000 sends down', () => c.get(`${base}/envios?antes=${deepCursor}`)],
      ['sends list, one day', () => c.get(`${base}/envios?desde=2000-01-01&ate=2100-01-01&estado=concluido`)],
      ['sends list, text matching one send', () => c.get(`${base}/envios?q=Mensagem%2099999`)],
      ['sends list, text matching none', () => c.get(`${base}/envios?q=nada-disso`)],
      ['composer preview', () => c.post(`${base}/envios/previa`, { _csrf: token, idioma_0: 'pt', mensagem_0: 'Oi' })],
      ['in-app editor', () => c.get(`${base}/inapp/nova`)],
      ['campaign page', () => c.get(`${base}/inapp/${campaignId}`)],
      [
        'audience count, Subscribed Users (1,000,000)',
        () => c.post(`${base}/envios/contar`, { _csrf: token, idioma_0: 'pt', mensagem_0: 'Oi', segmento_0: '1' }),
      ],
      [
        'audience count, Active Users',
        () => c.post(`${base}/envios/contar`, { _csrf: token, idioma_0: 'pt', mensagem_0: 'Oi', segmento_2: '1' }),
      ],
      ['campaign reach (on request)', () => c.get(`${base}/inapp/${campaignId}?alcance=1`)],
    ]
    const times = new Map<string, number[]>(pages.map(([n]) => [n, []]))
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [name, get] of pages) {
        const t0 = process.hrtime.bigint()
        const r = await get()
        const ms = Number(process.hrtime.bigint() - t0) / 1e6
        if (r.status !== 200) throw new Error(`${name}: ${r.status}`)
        if (round > 0) times.get(name)?.push(ms) // round 0 warms the caches
      }
    }
    const reference = medianOf(times.get('/apps (same-run reference)') ?? [])
    console.log(`\n${'page'.padEnd(48)} median ms  (/apps ${reference.toFixed(1)} ms)`)
    for (const [name] of pages) {
      const m = medianOf(times.get(name) ?? [])
      const limit = name.startsWith('audience count') || name.startsWith('campaign reach') ? 1000 : 300
      console.log(`${name.padEnd(48)} ${m.toFixed(1).padStart(8)}  ${m < limit ? 'ok' : `OVER ${limit} ms`}`)
      if (name.startsWith('/apps')) continue
      record({
        name: `${name}, median of ${ROUNDS}`,
        pombo: m,
        unit: 'ms',
        baseline: '/apps in the same rounds',
        base: reference,
      })
    }
  } finally {
    await db.end()
    await api.stop()
  }
}
