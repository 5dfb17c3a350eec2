// Erasing an app or an organisation from the dashboard (issue 32, point 2), through the real routes with people
// signed in: only an operator may (a person of the organisation gets 403 and nothing goes), the name must be typed as
// shown (anything else: 400, nothing goes), and then the CLI's erasure runs in the background while a status page
// shows its progress and then what it removed. Afterwards nothing of the app (or organisation) is in any table or
// Redis key, its key is refused at once by another instance that had it cached, and the organisation's people are
// signed out (their accounts are gone).
import t from 'tap'
import { DashClient, makeApp, makeOrg, makePerson, type Page } from '../helpers/dashboard'
import { KEPT_AFTER_ERASURE, keyCount, keysNaming, rowsNaming } from '../helpers/erasure'
import { basic, startService, type TestService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

// scrypt at N=2^17 for each sign-in, on a busy machine.
t.setTimeout(600_000)

async function signedIn(s: TestService, email: string): Promise<DashClient> {
  const c = new DashClient(s.dashboardUrl)
  const r = await c.signIn(email, SENHA)
  if (r.status !== 303) throw new Error(`sign-in ${email}: ${r.status}`)
  return c
}

/** Follows an erasure's status page until it says it is done (or failed); answers that page. */
async function finished(c: DashClient, location: string): Promise<Page> {
  const until = Date.now() + 60_000
  for (;;) {
    const p = await c.get(location)
    if (p.status !== 200) throw new Error(`${location}: ${p.status} ${p.text.slice(0, 300)}`)
    if (!/Em andamento/.test(p.text)) return p
    if (Date.now() > until) throw new Error(`${location} still running: ${p.text}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** A device and a send of the app, through the API (the send waits in the work stream: no worker runs here). */
async function use(s: TestService, app: { id: string; api_key: string }, tag: string): Promise<string[]> {
  const dev = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: `tok-${tag}` } })
  if (dev.status !== 200) throw new Error(`register: ${dev.status} ${dev.text}`)
  const send = await s.call('POST', '/api/v1/notifications', {
    body: { app_id: app.id, contents: { en: 'Oi' }, include_player_ids: [dev.json.id] },
    headers: basic(app.api_key),
  })
  if (send.status !== 200) throw new Error(`send: ${send.status} ${send.text}`)
  const [k] = await s.sql<{ kid: string }>('SELECT kid FROM app_keys WHERE app_id = $1', [app.id])
  return [app.id, dev.json.id, send.json.id, k?.kid as string, `tok-${tag}`]
}

async function count(s: TestService, table: string, where: string, id: string): Promise<number> {
  return (await s.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, [id]))[0]?.n ?? 0
}

t.test(
  'app: a person is refused, a wrong name is refused, the right name erases it; its key stops on another instance',
  async (t) => {
    const s = await startService(t, { roles: ['api', 'dashboard'] })
    const b = await startService(t, { roles: ['api'], shareWith: s })
    const org = await makeOrg(s, 'Loja Azul')
    const app = await makeApp(s, 'Loja Azul Android', org)
    const twin = await makeApp(s, 'Loja Azul iOS', org)
    const ids = await use(s, app, 'dash-a')
    const twinIds = await use(s, twin, 'dash-b')
    await makePerson(s, 'ana@lojaazul.example', SENHA, org)
    await makePerson(s, 'ops@pombo.example', SENHA, null)
    // Instance B has both keys in its cache.
    const read = (inst: TestService, a: { id: string; api_key: string }) =>
      inst.call('GET', `/api/v1/notifications?app_id=${a.id}`, { headers: basic(a.api_key) })
    t.equal((await read(b, app)).status, 200, 'the key works on B (and B caches it)')
    t.equal((await read(b, twin)).status, 200)
    const twinBefore = await rowsNaming(s, twinIds)

    const ana = await signedIn(s, 'ana@lojaazul.example')
    const page = await ana.get(`/apps/${app.id}`)
    t.equal(page.status, 200)
    t.match(page.text, /<h2 id="sec-excluir-app">Excluir app<\/h2>/, 'the danger zone is on the app page')
    t.notMatch(page.text, /name="nome_confirmacao"/, 'a person is shown no form')
    t.match(page.text, /Só um operador pode excluir o app/)
    const refused = await ana.post(`/apps/${app.id}/excluir`, {
      _csrf: DashClient.token(page),
      nome_confirmacao: 'Loja Azul Android',
    })
    t.equal(refused.status, 403, 'a person of the organisation may not erase its app')
    t.match(refused.text, /Só operadores excluem apps e organizações/)
    t.equal(await count(s, 'apps', 'id = $1', app.id), 1, 'the app is still there')
    t.equal((await read(b, app)).status, 200, 'and its key still works')

    const ops = await signedIn(s, 'ops@pombo.example')
    const opsPage = await ops.get(`/apps/${app.id}`)
    t.match(opsPage.text, /<label for="confirmar-app">Digite o nome do app para confirmar<\/label>/, 'the text box, by its name')
    t.match(opsPage.text, /<button type="submit" class="perigo">Excluir app<\/button>/)
    for (const wrong of ['loja azul android', 'Loja Azul', '', 'Loja Azul iOS']) {
      const r = await ops.post(`/apps/${app.id}/excluir`, { _csrf: DashClient.token(opsPage), nome_confirmacao: wrong })
      t.equal(r.status, 400, `"${wrong}" is not the name`)
      t.match(r.text, /role="alert"[^>]*>O nome digitado não confere com o nome do app. Nada foi excluído./)
    }
    t.equal(await count(s, 'devices', 'app_id = $1', app.id), 1, 'a wrong name deleted nothing')
    t.equal(await count(s, 'app_keys', 'app_id = $1 AND revoked_at IS NULL', app.id), 1, 'nor revoked its key')
    t.equal((await read(b, app)).status, 200)

    // Someone else's status page, or one that does not exist: 404.
    t.equal((await ops.get(`/exclusoes/${'0'.repeat(32)}`)).status, 404)

    const go = await ops.post(`/apps/${app.id}/excluir`, {
      _csrf: DashClient.token(opsPage),
      nome_confirmacao: '  Loja Azul Android ',
    })
    t.equal(go.status, 303, 'the right name (spaces around it aside) starts the erasure')
    const location = go.headers.get('location') as string
    t.match(location, /^\/exclusoes\/[0-9a-f]{32}$/, 'and answers with its status page')
    t.equal((await ana.get(location)).status, 404, "a person who is no operator cannot see the erasure's page")
    const done = await finished(ops, location)
    t.match(done.text, /Exclusão concluída em \d+ s/, done.text)
    t.match(done.text, /<caption>Removido<\/caption>/)
    t.match(done.text, /linhas de <code>devices<\/code><\/td><td>1</, 'what was removed, table by table')
    t.match(done.text, /linhas de <code>apps<\/code><\/td><td>1</)
    t.match(done.text, /linhas de <code>sends<\/code><\/td><td>1</)
    t.match(done.text, /entradas nas filas de trabalho<\/td><td>1</, 'the send waiting in the work stream')
    t.match(done.text, new RegExp(`<a href="/organizacoes/${org}">Voltar aos apps</a>`), "back to the organisation's apps")
    t.notMatch(done.text, /http-equiv="refresh"/, 'a finished erasure no longer reloads')

    t.equal((await read(b, app)).status, 401, 'B refuses the key it had cached')
    t.equal((await read(s, app)).status, 401, 'and so does A')
    t.equal((await read(b, twin)).status, 200, "the twin's key still works on B")
    t.same(await rowsNaming(s, ids, KEPT_AFTER_ERASURE), {}, 'no row of any table names the app, its device, send, key or token')
    t.same(
      await rowsNaming(s, ids.slice(1, 3).concat(ids[4] as string)),
      {},
      'not even the audit log names its device, send or token',
    )
    t.ok((await keyCount(s)) > 0, 'Redis holds keys of this deployment (the search looks at something)')
    t.same(await keysNaming(s, ids), [], 'no Redis key names it, the erasure job and its lock included')
    t.same(await rowsNaming(s, twinIds), twinBefore, 'the twin app is as it was')
    t.equal((await ops.get(`/apps/${app.id}`)).status, 404, 'its page is gone')
    const orgPage = await ops.get(`/organizacoes/${org}`)
    t.equal(orgPage.status, 200)
    // Its apps section (the audit section below keeps the erased app's name in its app.excluido record, on purpose).
    const appsSection = /<section aria-labelledby="sec-org-apps"[\s\S]*?<\/section>/.exec(orgPage.text)?.[0] ?? ''
    t.match(appsSection, /Loja Azul iOS/)
    t.notMatch(appsSection, /Loja Azul Android/, 'the erased app is no longer among its apps')
    t.match(orgPage.text, new RegExp(`<a href="/apps/${twin.id}">Loja Azul iOS</a>`), 'the organisation lists its other app')
  },
)

t.test(
  'organisation: a person of it is refused, a wrong name is refused, the right one erases it and signs its people out',
  async (t) => {
    const s = await startService(t, { roles: ['api', 'dashboard'] })
    const org = await makeOrg(s, 'Sai Daqui Ltda')
    const apps = [await makeApp(s, 'Sai um', org), await makeApp(s, 'Sai dois', org)]
    const other = await makeOrg(s, 'Fica Ltda')
    const stays = await makeApp(s, 'Fica', other)
    const used = [await use(s, apps[0] as (typeof apps)[0], 'org-a'), await use(s, apps[1] as (typeof apps)[0], 'org-b')]
    const ids = [org, ...used.flat()]
    const endUsers = used.flatMap((u) => [u[1], u[2], u[4]] as string[])
    const stayIds = await use(s, stays, 'org-c')
    const bia = await makePerson(s, 'bia@saidaqui.example', SENHA, org)
    await makePerson(s, 'caio@fica.example', SENHA, other)
    await makePerson(s, 'ops@pombo.example', SENHA, null)
    ids.push(bia, 'saidaqui.example')
    // The audit log is left out of the comparison: the other organisation's person signs in below (sessao.entrou).
    const staysBefore = await rowsNaming(s, [other, ...stayIds], KEPT_AFTER_ERASURE)

    const caio = await signedIn(s, 'caio@fica.example')
    t.equal((await caio.get(`/organizacoes/${org}`)).status, 404, "another organisation's page does not exist for a person")
    const biaC = await signedIn(s, 'bia@saidaqui.example')
    const own = await biaC.get(`/organizacoes/${org}`)
    t.equal(own.status, 200, 'a person sees their own organisation')
    t.match(own.text, /<h2 id="sec-excluir-org">Excluir organização<\/h2>/)
    t.notMatch(own.text, /name="nome_confirmacao"/)
    const refused = await biaC.post(`/organizacoes/${org}/excluir`, {
      _csrf: DashClient.token(own),
      nome_confirmacao: 'Sai Daqui Ltda',
    })
    t.equal(refused.status, 403, 'a person of the organisation may not erase it')
    t.equal(await count(s, 'orgs', 'id = $1', org), 1)

    const ops = await signedIn(s, 'ops@pombo.example')
    t.match(
      (await ops.get(`/apps/${stays.id}`)).text,
      new RegExp(`<a href="/organizacoes/${other}">organização</a>`),
      "an app's page links its organisation",
    )
    t.match(own.text, new RegExp(`<a href="/organizacoes/${org}">Organização</a>`), "a person's menu links their organisation")
    const p = await ops.get(`/organizacoes/${org}`)
    t.match(p.text, /<label for="confirmar-org">Digite o nome da organização para confirmar<\/label>/)
    t.match(p.text, /<button type="submit" class="perigo">Excluir organização<\/button>/)
    const wrong = await ops.post(`/organizacoes/${org}/excluir`, { _csrf: DashClient.token(p), nome_confirmacao: 'Sai um' })
    t.equal(wrong.status, 400)
    t.match(wrong.text, /O nome digitado não confere com o nome da organização. Nada foi excluído./)
    t.equal(await count(s, 'apps', 'org_id = $1', org), 2, 'nothing deleted')
    t.equal((await biaC.get('/apps')).status, 200, 'and its people are still signed in')

    const go = await ops.post(`/organizacoes/${org}/excluir`, { _csrf: DashClient.token(p), nome_confirmacao: 'Sai Daqui Ltda' })
    t.equal(go.status, 303)
    const done = await finished(ops, go.headers.get('location') as string)
    t.match(done.text, /Exclusão concluída/, done.text)
    t.match(done.text, /<td>apps<\/td><td>2</, 'its two apps')
    t.match(done.text, /linhas de <code>dashboard_users<\/code><\/td><td>1</, 'its person')
    t.match(done.text, /linhas de <code>orgs<\/code><\/td><td>1</)
    t.match(done.text, /<a href="\/apps">Voltar aos apps<\/a>/)

    const out = await biaC.get('/apps')
    t.equal(out.status, 303, 'its person is signed out: the account is gone')
    t.equal(out.headers.get('location'), '/entrar')
    t.equal((await caio.get('/apps')).status, 200, "another organisation's person is not")
    t.equal((await ops.get(`/organizacoes/${org}`)).status, 404)
    t.same(
      await rowsNaming(s, ids, KEPT_AFTER_ERASURE),
      {},
      'nothing names the organisation, its apps, devices, sends, keys or person',
    )
    t.same(await rowsNaming(s, endUsers), {}, 'not even the audit log names their devices, sends or tokens')
    t.same(await keysNaming(s, ids), [])
    t.same(await rowsNaming(s, [other, ...stayIds], KEPT_AFTER_ERASURE), staysBefore, 'the other organisation is as it was')
    t.equal(
      (await s.call('GET', `/api/v1/notifications?app_id=${stays.id}`, { headers: basic(stays.api_key) })).status,
      200,
      "the other organisation's key works",
    )
  },
)

t.test('a large app: the status page shows progress while it runs; a second submission lands on the same erasure', async (t) => {
  // 2,001 devices erased 50 at a time. One of them, past the first batch, is held by a transaction of the test's (FOR
  // UPDATE), so the erasure waits there and the page is caught while it runs, however quick the machine; then it is
  // let go.
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { PM_ERASE_BATCH: '50' } })
  const org = await makeOrg(s, 'Grande')
  const app = await makeApp(s, 'Grande', org)
  const [, device] = await use(s, app, 'big')
  for (let from = 1; from <= 2_000; from += 1_000)
    await s.sql(
      `INSERT INTO devices SELECT (jsonb_populate_record(NULL::devices, to_jsonb(d)
          || jsonb_build_object('id', gen_random_uuid(), 'identifier', d.identifier || '-' || g))).*
         FROM devices d, generate_series($2::int, $2::int + 999) g WHERE d.id = $1`,
      [device, from],
    )
  await makePerson(s, 'ops@pombo.example', SENHA, null)
  await makePerson(s, 'ops2@pombo.example', SENHA, null)
  const holder = await s.svc.deps.db.connect()
  // Let go however the test ends (teardowns run last added first: before the service's stop, which waits for its
  // pool's connections).
  let held = true
  const letGo = async () => {
    if (!held) return
    held = false
    await holder.query('ROLLBACK').catch(() => {})
    holder.release()
  }
  t.teardown(letGo)
  await holder.query('BEGIN')
  // Not one of the rows the erasure's first batch takes (the same query, src/erasure/erase.ts): that batch is done and
  // shown before the erasure waits.
  const firstBatch = await s.sql<{ c: string }>(
    `SELECT ctid::text AS c FROM devices WHERE app_id = $1 AND ctid > '(0,0)'::tid LIMIT 50`,
    [app.id],
  )
  const locked = await holder.query(
    'SELECT 1 FROM devices WHERE app_id = $1 AND NOT (ctid::text = ANY($2::text[])) LIMIT 1 FOR UPDATE',
    [app.id, firstBatch.map((r) => r.c)],
  )
  t.equal(locked.rowCount, 1, 'a device past the first batch is held')
  const ops = await signedIn(s, 'ops@pombo.example')
  const p = await ops.get(`/apps/${app.id}`)
  const ops2 = await signedIn(s, 'ops2@pombo.example')
  const p2 = await ops2.get(`/apps/${app.id}`)
  const first = await ops.post(`/apps/${app.id}/excluir`, { _csrf: DashClient.token(p), nome_confirmacao: 'Grande' })
  t.equal(first.status, 303)
  const location = first.headers.get('location') as string
  const second = await ops.post(`/apps/${app.id}/excluir`, { _csrf: DashClient.token(p), nome_confirmacao: 'Grande' })
  t.equal(second.headers.get('location'), location, 'the second submission shows the running erasure')
  const third = await ops2.post(`/apps/${app.id}/excluir`, { _csrf: DashClient.token(p2), nome_confirmacao: 'Grande' })
  t.equal(third.headers.get('location'), location, "another operator's submission too")
  t.equal((await ops2.get(location)).status, 200, 'and they see its page')
  let running: Page | null = null
  for (let i = 0; i < 200 && !running; i++) {
    const x = await ops.get(location)
    if (/devices: [\d,]+ \/ 2,001/.test(x.text)) running = x
    else await new Promise((r) => setTimeout(r, 25))
  }
  t.ok(running, 'progress shown while it runs: rows done of the total')
  t.match(running?.text, /<meta http-equiv="refresh" content="2">/, 'the page reloads itself meanwhile')
  t.match(running?.text, /role="status" id="exclusao-estado">Em andamento/)
  await letGo()
  const done = await finished(ops, location)
  t.match(done.text, /linhas de <code>devices<\/code><\/td><td>2\.001</, done.text)
  t.equal(await count(s, 'devices', 'app_id = $1', app.id), 0)
})

t.test('an erasure whose process stopped: its page says so, and typing the name again continues it', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Parada')
  const app = await makeApp(s, 'Parada', org)
  for (let i = 0; i < 6; i++) {
    const r = await s.call('POST', '/api/v1/players', { body: { app_id: app.id, device_type: 1, identifier: `tok-stop-${i}` } })
    t.equal(r.status, 200)
  }
  const ops = await makePerson(s, 'ops@pombo.example', SENHA, null)
  const c = await signedIn(s, 'ops@pombo.example')
  // Where a dashboard process left the erasure when it stopped: the app paused, its keys revoked, half its devices
  // gone; its job's last heartbeat a minute ago, and its lock not yet expired (as another instance's clock may see it).
  await s.sql('UPDATE app_keys SET revoked_at = now() WHERE app_id = $1', [app.id])
  await s.sql('UPDATE apps SET paused = true WHERE id = $1', [app.id])
  await s.sql(`DELETE FROM devices WHERE app_id = $1 AND identifier IN ('tok-stop-0', 'tok-stop-1', 'tok-stop-2')`, [app.id])
  const { redis, keys } = s.svc.deps
  const dead = 'd'.repeat(32)
  const minuteAgo = Date.now() - 60_000
  await redis.hset(keys.erasureJob(dead), {
    kind: 'app',
    user: ops,
    back: `/organizacoes/${org}`,
    state: 'andamento',
    progress: 'devices: 3 / 6',
    started: minuteAgo - 1000,
    beat: minuteAgo,
  })
  await redis.set(keys.erasureLock(app.id), dead, 'PX', 20_000)

  const stopped = await c.get(`/exclusoes/${dead}`)
  t.equal(stopped.status, 200)
  t.match(stopped.text, /role="alert"[^>]*>A exclusão foi interrompida/, 'the page says the erasure stopped')
  t.match(stopped.text, /digite o nome de novo/)
  t.notMatch(stopped.text, /http-equiv="refresh"/, 'and no longer reloads')

  const p = await c.get(`/apps/${app.id}`)
  t.equal(p.status, 200, 'the half-erased app still has its page, with the form')
  const again = await c.post(`/apps/${app.id}/excluir`, { _csrf: DashClient.token(p), nome_confirmacao: 'Parada' })
  t.equal(again.status, 303)
  const location = again.headers.get('location') as string
  t.not(location, `/exclusoes/${dead}`, 'a new erasure takes over from the stopped one')
  const done = await finished(c, location)
  t.match(done.text, /Exclusão concluída/, done.text)
  t.match(done.text, /linhas de <code>devices<\/code><\/td><td>3</, 'it removes what the first left')
  t.same(await rowsNaming(s, [app.id, 'tok-stop-'], KEPT_AFTER_ERASURE), {}, 'and nothing of the app is left')
  t.same(await keysNaming(s, [app.id]), [], 'the lock included')
})
