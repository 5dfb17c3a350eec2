// The app page's "Credenciais" section: upload (validated by the CLI's own validators, sealed with the vault key),
// only the public part shown back, a real connection test per stored credential, deletion (that platform's
// deliveries stop at once), and the APNs environment switch. Also the credential problem met by real sends.
import { byPerson, record } from '../../audit/record'
import { type Db, query } from '../../db/pool'
import type { Router } from '../../http/router'
import { credentialMeta } from '../../credentials/store'
import { type ApnsMeta, type FcmMeta, parseApns, parseApnsEnv, parseFcmUpload, parsePlatform } from '../../credentials/validate'
import type { Form } from '../form'
import { html, type Html, when } from '../html'
import { DashError } from '../web'
import { type AppPageDeps, type AppView, appAction, button, csrfField } from './context'

/** Service accounts and google-services.json files are a few KB; .p8 keys a few hundred bytes. */
const UPLOAD_LIMIT = 512 * 1024
const DASH_APNS_LABELS = { p8: 'Chave .p8', keyId: 'Key ID', teamId: 'Team ID', bundleId: 'Bundle ID', env: 'Ambiente' }

function fileText(form: Form, name: string, label: string, required: boolean): string | undefined {
  const f = form.file(name)
  if (!f) {
    if (required) throw new DashError(400, `${label}: escolha o arquivo.`)
    return undefined
  }
  return f.data.toString('utf8')
}

/**
 * Why recent sends of the app stopped short (`pm_problema`), if one did: looked for among the newest sends only,
 * so the page stays fast with 100,000 sends.
 */
export async function recentProblem(db: Db, appId: string): Promise<{ problem: string; at: Date } | null> {
  const r = await query<{ problem: string; queued_at: Date }>(
    db,
    `SELECT problem, queued_at FROM (SELECT problem, queued_at FROM sends WHERE app_id = $1 ORDER BY queued_at DESC, id DESC LIMIT 50) s
      WHERE problem IS NOT NULL ORDER BY queued_at DESC LIMIT 1`,
    [appId],
  )
  const row = r.rows[0]
  return row ? { problem: row.problem, at: row.queued_at } : null
}

export async function credentialsSection(d: AppPageDeps, { app, v }: AppView): Promise<Html> {
  const [fcm, apns] = await Promise.all([credentialMeta(d.db, app.id, 'fcm'), credentialMeta(d.db, app.id, 'apns')])
  const base = `/apps/${app.id}/credenciais`
  const actions = (p: string, label: string) =>
    html`${button(v, `${base}/${p}/testar`, 'Testar conexão')} ${button(v, `${base}/${p}/excluir`, 'Excluir', {
      confirm: `Excluir a credencial ${label}? As entregas ${label} param na hora.`,
    })}`
  return html`<section aria-labelledby="sec-credenciais" id="credenciais">
<h2 id="sec-credenciais">Credenciais</h2>
<div class="duas">
<div class="cartao" role="group" aria-labelledby="cred-fcm">
<h3 id="cred-fcm">Android e web push (FCM)</h3>
${
  fcm
    ? html`<dl><dt>Projeto</dt><dd>${(fcm as FcmMeta).project_id}</dd><dt>Conta de serviço</dt><dd>${(fcm as FcmMeta).client_email}</dd></dl>
<p>${actions('fcm', 'FCM')}</p>`
    : html`<p>Nenhuma credencial FCM: as entregas Android e web não saem.</p>`
}
<form method="post" action="${base}/fcm" enctype="multipart/form-data">${csrfField(v)}
<label for="fcm-conta">Conta de serviço (JSON)</label><input id="fcm-conta" name="conta" type="file" accept=".json,application/json">
<label for="fcm-config">Configuração do app (google-services.json)</label><input id="fcm-config" name="config" type="file" accept=".json,application/json">
<label for="fcm-pacote">Pacote Android (se o projeto tiver vários apps)</label><input id="fcm-pacote" name="pacote">
<button type="submit">Salvar credencial FCM</button></form>
</div>
<div class="cartao" role="group" aria-labelledby="cred-apns">
<h3 id="cred-apns">iOS (APNs)</h3>
${
  apns
    ? html`<dl><dt>Key ID</dt><dd>${(apns as ApnsMeta).key_id}</dd><dt>Team ID</dt><dd>${(apns as ApnsMeta).team_id}</dd><dt>Bundle ID</dt><dd>${(apns as ApnsMeta).bundle_id}</dd><dt>Ambiente</dt><dd>${(apns as ApnsMeta).env}</dd></dl>
<p>${actions('apns', 'APNs')}</p>
<form method="post" action="${base}/apns/ambiente" class="linha">${csrfField(v)}
<label for="apns-env-salvo">Servidor APNs da credencial salva</label><select id="apns-env-salvo" name="ambiente">
<option value="sandbox"${(apns as ApnsMeta).env === 'sandbox' ? html` selected` : ''}>sandbox</option>
<option value="production"${(apns as ApnsMeta).env === 'production' ? html` selected` : ''}>production</option></select>
<button type="submit">Trocar ambiente</button></form>`
    : html`<p>Nenhuma credencial APNs: as entregas iOS não saem.</p>`
}
<form method="post" action="${base}/apns" enctype="multipart/form-data">${csrfField(v)}
<label for="apns-p8">Chave .p8</label><input id="apns-p8" name="p8" type="file" accept=".p8">
<label for="apns-key">Key ID</label><input id="apns-key" name="key_id" maxlength="10">
<label for="apns-team">Team ID</label><input id="apns-team" name="team_id" maxlength="10">
<label for="apns-bundle">Bundle ID</label><input id="apns-bundle" name="bundle_id" placeholder="com.exemplo.app">
<label for="apns-env">Ambiente</label><select id="apns-env" name="ambiente"><option value="production">production</option><option value="sandbox">sandbox</option></select>
<button type="submit">Salvar credencial APNs</button></form>
</div>
</div>
</section>`
}

export function problemBanner(p: { problem: string; at: Date } | null): Html {
  return p
    ? html`<div role="alert" class="aviso erro problema"><b>Problema nas entregas</b> (envio de ${when(p.at)}): <span class="pm-problema">${p.problem}</span></div>`
    : html``
}

export function credentialsRoutes(r: Router, d: AppPageDeps): void {
  appAction(
    d,
    r,
    '/apps/:id/credenciais/fcm',
    async (app, form, v) => {
      const account = fileText(form, 'conta', 'Conta de serviço (JSON)', true) as string
      const config = fileText(form, 'config', 'Configuração do app (google-services.json)', false)
      const packageName = form.text('pacote').trim() || undefined
      const up = parseFcmUpload(
        { text: account, what: 'Conta de serviço (JSON)', fcmBaseUrl: d.cfg.fcmBaseUrl },
        config === undefined ? undefined : { text: config, what: 'google-services.json', packageName },
      )
      await d.credentials.save(app.id, 'fcm', up.credential, up.meta, up.params, byPerson(v.email))
      return { flash: { kind: 'ok', text: `Credencial FCM salva (projeto ${up.meta.project_id}).` }, anchor: 'credenciais' }
    },
    UPLOAD_LIMIT,
  )
  appAction(
    d,
    r,
    '/apps/:id/credenciais/apns',
    async (app, form, v) => {
      const { credential, meta } = parseApns(
        {
          p8: fileText(form, 'p8', 'Chave .p8', true) as string,
          keyId: form.text('key_id').trim(),
          teamId: form.text('team_id').trim(),
          bundleId: form.text('bundle_id').trim(),
          env: form.text('ambiente'),
        },
        DASH_APNS_LABELS,
      )
      await d.credentials.save(app.id, 'apns', credential, meta, undefined, byPerson(v.email))
      return { flash: { kind: 'ok', text: `Credencial APNs salva (${meta.bundle_id}, ${meta.env}).` }, anchor: 'credenciais' }
    },
    UPLOAD_LIMIT,
  )
  appAction(d, r, '/apps/:id/credenciais/apns/ambiente', async (app, form, v) => {
    const saved = await d.credentials.setApnsEnv(app.id, parseApnsEnv(form.text('ambiente'), 'Ambiente'), byPerson(v.email))
    return { flash: { kind: 'ok', text: `Ambiente APNs: ${saved.meta.env}.` }, anchor: 'credenciais' }
  })
  appAction(d, r, '/apps/:id/credenciais/:plataforma/testar', async (app, _form, v, req) => {
    const platform = parsePlatform(req.params[1])
    const result = await d.tester.test(app.id, platform)
    const label = platform === 'fcm' ? 'FCM' : 'APNs'
    if (!result) throw new DashError(404, `Nenhuma credencial ${label} para testar.`)
    // A test changes nothing, but who tried a credential, and what the provider said, explains what follows.
    await record(
      d.db,
      {
        by: byPerson(v.email),
        action: 'credencial.testada',
        orgId: app.orgId,
        appId: app.id,
        details: { platform, ok: result.ok, reason: result.ok ? null : result.motivo },
      },
      new Date(d.clock()),
    )
    return {
      flash: result.ok
        ? { kind: 'ok', text: `${label}: Conexão OK` }
        : { kind: 'erro', text: `${label}: Falhou: ${result.motivo}` },
      anchor: 'credenciais',
    }
  })
  appAction(d, r, '/apps/:id/credenciais/:plataforma/excluir', async (app, _form, v, req) => {
    const platform = parsePlatform(req.params[1])
    const removed = await d.credentials.delete(app.id, platform, byPerson(v.email))
    const label = platform === 'fcm' ? 'FCM' : 'APNs'
    return {
      flash: {
        kind: 'ok',
        text: removed ? `Credencial ${label} excluída: as entregas ${label} pararam.` : `Não havia credencial ${label}.`,
      },
      anchor: 'credenciais',
    }
  })
}
