// The composer's routes: the page, its post (add a language, refresh the preview, confirm, send, test send), the
// live preview and the audience count the script asks for, the test device search and a test send's result. A send
// is made by acceptSend (src/sends/accept.ts), the very steps of POST /api/v1/notifications: a form the API would
// refuse is refused with the API's error, shown beside the field that caused it.
import type { AppRecord } from '../../apps/store'
import type { Config } from '../../core/config'
import { ApiError, fieldError } from '../../core/errors'
import { guardBody } from '../../core/json-guard'
import type { Clock } from '../../core/time'
import { type Db, query } from '../../db/pool'
import type { Reply } from '../../http/reply'
import { isUuid, type Router } from '../../http/router'
import { acceptSend } from '../../sends/accept'
import type { Metrics } from '../../ops/metrics'
import type { SendService } from '../../sends/service'
import { appFor } from '../access'
import type { Form } from '../form'
import { page } from '../layout'
import type { Sessions, Viewer } from '../session'
import { htmlReply, jsonReply, notFound, pollPage, redirect, viewerAction, viewerPage, type Web } from '../web'
import { type ComposerState, composeBody, emptyState, fieldIdFor, MAX_LANGUAGES, newKey, readState, testBody } from './compose'
import { composerBody, confirmBody, type ComposerView } from './composer-page'
import { previewHtml, previewOf } from './preview'
import { deviceLabel, findTestDevices, resolveTestDevice, testResult } from './test-send'

export interface SendPagesDeps extends Web {
  cfg: Config
  db: Db
  clock: Clock
  sessions: Sessions
  sends: SendService
  metrics?: Metrics
}

/** The API's answer (the spec, Sends: the four 200 shapes). */
interface SendAnswerBody {
  id: string
  recipients: number
  errors?: string[] | Record<string, string[]>
}

/** The composer's form may carry 2,000 ids of each list and eight languages. */
const COMPOSER_BODY_LIMIT = 256 * 1024

/** Where an API error is shown: beside the field its `campo` names, else at the top. */
function placeError(err: ApiError, s: ComposerState): [string, string] {
  const t = err.texts()
  const field = typeof t.extra?.campo === 'string' ? t.extra.campo : undefined
  const id = err.key === 'PAYLOAD_TOO_LARGE' ? 'mensagem_0' : (fieldIdFor(field, s) ?? 'geral')
  return [id, id === 'geral' ? `${t.erro} ${t.como_corrigir}` : t.erro]
}

function composerPage(d: SendPagesDeps, c: Omit<ComposerView, 'preview'>, status = 200): Reply {
  const { body } = composeBody(c.app.id, c.state)
  const view: ComposerView = { ...c, preview: previewOf(body, d.clock(), d.cfg.limits) }
  return htmlReply(status, page({ title: 'Nova notificação', viewer: c.v }, composerBody(view)))
}

export function composerRoutes(r: Router, d: SendPagesDeps): void {
  // Counted per lane in pombo_sends_accepted_total, as the API route counts its sends.
  const accepted = d.metrics ? [d.metrics.sendsAccepted.labels('0'), d.metrics.sendsAccepted.labels('1')] : null
  const accept = { cfg: d.cfg, sends: d.sends, clock: d.clock, accepted }

  type Outcome = { errors: Map<string, string> } | { answer: SendAnswerBody; exact: boolean }

  /** The send (or its dry run) the form stands for; form problems come first, then the API's own checks. */
  async function submit(app: AppRecord, s: ComposerState, dryRun: boolean): Promise<Outcome> {
    const { body, problems } = composeBody(app.id, s)
    if (problems.size > 0) return { errors: problems }
    // What the API's door refuses before reading a body (U+0000, lone surrogates), refused here alike.
    const unstorable = guardBody(body, d.cfg.limits.jsonMaxDepth)
    if (unstorable) return { errors: new Map([placeError(fieldError(unstorable.campo, unstorable.motivo), s)]) }
    try {
      const answer = await acceptSend(accept, {
        app,
        body,
        raw: Buffer.from(JSON.stringify(body)),
        idempotencyHeader: dryRun ? undefined : s.key,
        dryRun,
      })
      return { answer: JSON.parse(answer.body) as SendAnswerBody, exact: answer.exact }
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      return { errors: new Map([placeError(err, s)]) }
    }
  }

  viewerPage(d, r.get.bind(r), '/apps/:id/envios/novo', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    return composerPage(d, { app, v, state: emptyState(), errors: new Map() })
  })

  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/envios/novo',
    async (req, v, form) => {
      const app = await appFor(d.db, v, req.params[0])
      const s = readState(form)
      const action = form.text('acao')
      if (action === 'idioma') {
        if (s.languages.length < MAX_LANGUAGES) s.languages.push({ code: '', title: '', message: '' })
        return composerPage(d, { app, v, state: s, errors: new Map() })
      }
      if (action === 'teste') return testSend(app, v, s)
      if (action !== 'enviar') return composerPage(d, { app, v, state: s, errors: new Map() }) // preview, edit
      // Without the script's dialog, the confirmation with the audience's size is a page of its own.
      if (form.text('confirmar') !== '1') {
        const counted = await submit(app, s, true)
        if ('errors' in counted) return composerPage(d, { app, v, state: s, errors: counted.errors }, 422)
        const view: ComposerView = {
          app,
          v,
          state: s,
          errors: new Map(),
          preview: previewOf(composeBody(app.id, s).body, d.clock(), d.cfg.limits),
        }
        return htmlReply(
          200,
          page({ title: 'Confirmar o envio', viewer: v }, confirmBody(view, counted.answer.recipients, counted.exact)),
        )
      }
      const sent = await submit(app, s, false)
      if ('errors' in sent) return composerPage(d, { app, v, state: { ...s, key: newKey() }, errors: sent.errors }, 422)
      if (sent.answer.id === '') {
        // Nobody reachable (the spec's third 200 shape): nothing was created; a new key lets the person fix it.
        const why = Array.isArray(sent.answer.errors) ? String(sent.answer.errors[0]) : 'Nenhum destinatário alcançável.'
        return composerPage(d, { app, v, state: { ...s, key: newKey() }, errors: new Map([['publico', why]]) }, 422)
      }
      const dropped = sent.answer.errors && !Array.isArray(sent.answer.errors) ? Object.values(sent.answer.errors).flat() : []
      await d.sessions.setFlash(v, {
        kind: 'ok',
        text: `Envio criado para ${sent.answer.recipients} dispositivo${sent.answer.recipients === 1 ? '' : 's'}${
          dropped.length > 0
            ? `; ${dropped.length} id(s) descartado(s) por não alcançáveis: ${dropped.slice(0, 20).join(', ')}`
            : ''
        }.`,
      })
      return redirect(`/apps/${app.id}/envios/${sent.answer.id}`)
    },
    COMPOSER_BODY_LIMIT,
  )

  async function testSend(app: AppRecord, v: Viewer, s: ComposerState): Promise<Reply> {
    const found = await resolveTestDevice(d.db, app.id, s.testDevice)
    if ('problem' in found)
      return composerPage(d, { app, v, state: s, errors: new Map([['teste_dispositivo', found.problem]]) }, 422)
    const { body, problems } = composeBody(app.id, s)
    if (problems.size > 0) return composerPage(d, { app, v, state: s, errors: problems }, 422)
    const one = testBody(body, found.device.id)
    const unstorable = guardBody(one, d.cfg.limits.jsonMaxDepth)
    if (unstorable)
      return composerPage(
        d,
        { app, v, state: s, errors: new Map([placeError(fieldError(unstorable.campo, unstorable.motivo), s)]) },
        422,
      )
    try {
      const answer = await acceptSend(accept, {
        app,
        body: one,
        raw: Buffer.from(JSON.stringify(one)),
        idempotencyHeader: `${s.key}:teste:${found.device.id}`,
        dryRun: false,
      })
      const out = JSON.parse(answer.body) as { id: string; errors?: unknown }
      if (out.id === '') {
        const why = `O dispositivo ${deviceLabel(found.device)} não é alcançável (token inválido, de teste ou de plataforma excluída).`
        return composerPage(d, { app, v, state: s, errors: new Map([['teste_dispositivo', why]]) }, 422)
      }
      const test = {
        sendId: out.id,
        deviceId: found.device.id,
        text: `Teste enviado para ${deviceLabel(found.device)}:`,
      }
      return composerPage(d, { app, v, state: { ...s, key: newKey() }, errors: new Map(), test })
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      return composerPage(d, { app, v, state: s, errors: new Map([placeError(err, s)]) }, 422)
    }
  }

  // The live preview, as the person types: the region's inside, rendered by the page's own code.
  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/envios/previa',
    async (req, v, form: Form) => {
      const app = await appFor(d.db, v, req.params[0])
      const { body } = composeBody(app.id, readState(form))
      return jsonReply({ html: previewHtml(previewOf(body, d.clock(), d.cfg.limits), app.name).text })
    },
    COMPOSER_BODY_LIMIT,
  )

  // The audience's size for the confirmation dialog: the API's own dry run (X-Dry-Run: true).
  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/envios/contar',
    async (req, v, form: Form) => {
      const app = await appFor(d.db, v, req.params[0])
      const counted = await submit(app, readState(form), true)
      if ('errors' in counted) return jsonReply({ ok: false, errors: Object.fromEntries(counted.errors) })
      return jsonReply({ ok: true, recipients: counted.answer.recipients, exact: counted.exact })
    },
    COMPOSER_BODY_LIMIT,
  )

  // Test devices matching what was typed (player id or its start, external user id, token): at most 10.
  viewerPage(d, r.get.bind(r), '/apps/:id/envios/dispositivos.json', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const q = (req.query.get('q') ?? '').trim().slice(0, 256)
    const rows = await findTestDevices(d.db, app.id, q)
    return jsonReply({ devices: rows.map((x) => ({ id: x.id, label: deviceLabel(x) })) })
  })

  // A test send's result for its device: what the provider said, once it answered.
  pollPage(d, r.get.bind(r), '/apps/:id/envios/:sid/teste.json', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const sid = req.params[1]
    const device = req.query.get('dispositivo')
    if (!isUuid(sid) || !isUuid(device)) throw notFound()
    const sent = await query(d.db, 'SELECT 1 FROM sends WHERE app_id = $1 AND id = $2', [app.id, sid.toLowerCase()])
    if (sent.rowCount === 0) throw notFound()
    return jsonReply(await testResult(d.db, app.id, sid.toLowerCase(), device.toLowerCase()))
  })
}
