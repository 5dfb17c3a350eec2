// The app page's "Dispositivos" section: search by player id or external user id, a keyset-paged list, a device's
// details, deletion with its delivery history (after a confirmation), and the CSV export with its progress.
import { byPerson } from '../../audit/record'
import { createHash } from 'node:crypto'
import { type Db, query } from '../../db/pool'
import { deleteDevice } from '../../devices/delete'
import { readShape } from '../../devices/service'
import { findDevice } from '../../devices/store'
import { isUuid, type Router } from '../../http/router'
import { appFor } from '../access'
import { html, type Html, when } from '../html'
import { page } from '../layout'
import { DashError, htmlReply, jsonReply, notFound, pollPage, viewerPage } from '../web'
import { type AppPageDeps, type AppView, appAction, button, csrfField } from './context'

const PAGE = 25
const TYPES: Record<number, string> = { 0: 'iOS', 1: 'Android', 5: 'Chrome (web)', 7: 'Safari (web)', 8: 'Firefox (web)' }

interface DeviceListRow {
  id: string
  identifier: string
  device_type: number
  external_user_id: string | null
  invalid_identifier: boolean
  last_active: Date
}

const LIST_COLUMNS = 'id, identifier, device_type, external_user_id, invalid_identifier, last_active'

async function findDevices(db: Db, appId: string, search: string, after: string | null): Promise<DeviceListRow[]> {
  if (search !== '') {
    // A player id, or every device of an external user id (at most the per-user cap).
    const byId = isUuid(search)
    const r = await query<DeviceListRow>(
      db,
      `SELECT ${LIST_COLUMNS} FROM devices WHERE app_id = $1 AND ${byId ? 'id = $2::uuid' : 'external_user_id = $2'} ORDER BY id LIMIT $3`,
      [appId, byId ? search.toLowerCase() : search, PAGE + 1],
    )
    if (r.rows.length > 0 || !byId) return r.rows
    const u = await query<DeviceListRow>(
      db,
      `SELECT ${LIST_COLUMNS} FROM devices WHERE app_id = $1 AND external_user_id = $2 ORDER BY id LIMIT $3`,
      [appId, search, PAGE + 1],
    )
    return u.rows
  }
  const r = await query<DeviceListRow>(
    db,
    `SELECT ${LIST_COLUMNS} FROM devices WHERE app_id = $1 ${after ? 'AND id > $3' : ''} ORDER BY id LIMIT $2`,
    after ? [appId, PAGE + 1, after] : [appId, PAGE + 1],
  )
  return r.rows
}

/** Push tokens are shown shortened: enough to recognise one, not to copy it. */
const shortToken = (t: string): string => (t.length > 20 ? `${t.slice(0, 10)}…${t.slice(-6)}` : t)

export async function devicesSection(d: AppPageDeps, { app, v, q }: AppView): Promise<Html> {
  const search = (q.get('busca') ?? '').trim().slice(0, 256)
  const after = q.get('disp_apos')
  const rows = await findDevices(d.db, app.id, search, isUuid(after) ? after : null)
  const shown = rows.slice(0, PAGE)
  const last = shown[shown.length - 1]
  const base = `/apps/${app.id}`
  return html`<section aria-labelledby="sec-dispositivos" id="dispositivos">
<h2 id="sec-dispositivos">Dispositivos</h2>
<form method="get" action="${base}#dispositivos" role="search" class="linha">
<label for="busca">Buscar dispositivo</label><input id="busca" name="busca" type="search" value="${search}" placeholder="player id ou external user id">
<button type="submit">Buscar</button>${search ? html` <a href="${base}#dispositivos">Limpar</a>` : ''}</form>
${
  shown.length === 0
    ? html`<p>${search ? 'Nenhum dispositivo encontrado.' : 'Nenhum dispositivo registrado.'}</p>`
    : html`<table><caption>Dispositivos</caption><thead><tr><th scope="col">player id</th><th scope="col">Tipo</th><th scope="col">external user id</th><th scope="col">Token</th><th scope="col">Último sinal</th><th scope="col">Ações</th></tr></thead>
<tbody>${shown.map(
        (
          x,
        ) => html`<tr><td><a href="${base}/dispositivos/${x.id}"><code>${x.id}</code></a></td><td>${TYPES[x.device_type] ?? x.device_type}</td><td>${x.external_user_id ?? '—'}</td>
<td><code>${shortToken(x.identifier)}</code>${x.invalid_identifier ? ' (inválido)' : ''}</td><td>${when(x.last_active)}</td>
<td>${button(v, `${base}/dispositivos/${x.id}/excluir`, 'Excluir', { confirm: 'Excluir o dispositivo e todo o histórico de entregas dele?' })}</td></tr>`,
      )}</tbody></table>`
}
${!search && rows.length > PAGE && last ? html`<p><a href="${base}?disp_apos=${last.id}#dispositivos">Próximos dispositivos</a></p>` : ''}
<form method="post" action="${base}/exportar">${csrfField(v)}<button type="submit">Exportar CSV</button></form>
</section>`
}

function confirmPage(appId: string, deviceId: string, v: AppView['v']): string {
  return page(
    { title: 'Excluir dispositivo', viewer: v },
    html`<h1>Excluir dispositivo</h1><p>O dispositivo <code>${deviceId}</code> e todo o histórico de entregas dele serão apagados. Ele se registra de novo no próximo uso do app.</p>
${button(v, `/apps/${appId}/dispositivos/${deviceId}/excluir`, 'Confirmar exclusão', { fields: { confirmar: '1' }, cls: 'perigo' })}
<p><a href="/apps/${appId}#dispositivos">Cancelar</a></p>`,
  )
}

export function devicesRoutes(r: Router, d: AppPageDeps): void {
  viewerPage(d, r.get.bind(r), '/apps/:id/dispositivos/:pid', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const pid = req.params[1]
    const row = isUuid(pid) ? await findDevice(d.db, app.id, pid.toLowerCase()) : null
    if (!row) throw notFound()
    const shape = readShape(row)
    const body = html`<h1>Dispositivo</h1><p><a href="/apps/${app.id}#dispositivos">${app.name}</a></p>
<dl class="detalhes">${Object.entries(shape).map(([k, val]) => html`<dt>${k}</dt><dd>${typeof val === 'object' && val !== null ? JSON.stringify(val) : String(val)}</dd>`)}</dl>
${button(v, `/apps/${app.id}/dispositivos/${row.id}/excluir`, 'Excluir', { confirm: 'Excluir o dispositivo e todo o histórico de entregas dele?' })}`
    return htmlReply(200, page({ title: 'Dispositivo', viewer: v }, body))
  })

  appAction(d, r, '/apps/:id/dispositivos/:pid/excluir', async (app, form, v, req) => {
    const pid = req.params[1]
    if (!isUuid(pid)) throw notFound()
    // Without the confirmation (no script ran to ask), the question is a page of its own.
    if (form.text('confirmar') !== '1') return htmlReply(200, confirmPage(app.id, pid.toLowerCase(), v))
    if (!(await deleteDevice(d.db, app.id, pid.toLowerCase(), byPerson(v.email))))
      throw new DashError(404, 'Dispositivo não encontrado (já excluído?).')
    return {
      flash: { kind: 'ok', text: `Dispositivo ${pid.toLowerCase()} excluído com o histórico de entregas.` },
      anchor: 'dispositivos',
    }
  })

  appAction(d, r, '/apps/:id/exportar', async (app, _form, v) => {
    await d.devices.exporter.requireStorage()
    await d.devices.quotas.takeExport(app.id)
    const out = await d.devices.exporter.start(app.id, byPerson(v.email))
    const token = /\/exports\/([0-9a-f]{64})\.csv\.gz$/.exec(out.csv_file_url)?.[1] ?? ''
    const body = html`<h1>Exportação de dispositivos</h1>
<p>Pronta em cerca de ${out.pm_pronto_em_s_estimado} s; o arquivo vale ${out.pm_validade_h} horas.</p>
<p><progress id="export-progresso" max="1" data-estado="/apps/${app.id}/exportacao/${token}"></progress> <span id="export-estado" role="status">preparando…</span></p>
<p><a href="${out.csv_file_url}">Baixar o CSV (gzip)</a></p>
<p><a href="/apps/${app.id}#dispositivos">Voltar ao app</a></p>`
    return htmlReply(200, page({ title: 'Exportação', viewer: v }, body))
  })

  // The export's progress, polled by the page: building, ready (with its row count) or failed.
  pollPage(d, r.get.bind(r), '/apps/:id/exportacao/:token', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const token = req.params[1] ?? ''
    if (!/^[0-9a-f]{64}$/.test(token)) throw notFound()
    const hash = createHash('sha256').update(token).digest('hex')
    const x = await query<{ status: string; rows: string | null }>(
      d.db,
      'SELECT status, rows FROM exports WHERE token_hash = $1 AND app_id = $2',
      [hash, app.id],
    )
    const row = x.rows[0]
    if (!row) throw notFound()
    return jsonReply({ estado: row.status, linhas: row.rows === null ? null : Number(row.rows) })
  })
}
