// The in-app editor's routes: a new campaign (/apps/{app_id}/inapp/nova), a campaign's page and its edits
// (/apps/{app_id}/inapp/{id}), and the live preview. Saving and every state change go through CampaignService, the
// code of the API's routes: the same validator (every problem, beside its field), the same state machine (an
// operation from a wrong state is its 409, shown at the top).
import { byPerson } from '../../audit/record'
import type { AppRecord } from '../../apps/store'
import type { Config } from '../../core/config'
import { ApiError, type FieldProblem } from '../../core/errors'
import { guardBody } from '../../core/json-guard'
import type { Clock } from '../../core/time'
import type { Db } from '../../db/pool'
import type { Reply } from '../../http/reply'
import { isUuid, type Router } from '../../http/router'
import { type CampaignService, type CampaignShape, TRANSITIONS } from '../../inapp/service'
import { parseCampaign } from '../../inapp/validate'
import { appFor } from '../access'
import type { Form } from '../form'
import { page } from '../layout'
import type { Sessions, Viewer } from '../session'
import { htmlReply, jsonReply, notFound, pollPage, redirect, viewerAction, viewerPage, type Web } from '../web'
import {
  campaignBody,
  type EditorState,
  editorOf,
  emptyEditor,
  emptyLanguage,
  fieldIdFor,
  MAX_LANGUAGES,
  readEditor,
} from './form'
import { editorBody, editorPreview, type EditorView, reachPart } from './page'

export interface InappEditorDeps extends Web {
  cfg: Config
  db: Db
  clock: Clock
  sessions: Sessions
  campaigns: CampaignService
}

const EDITOR_BODY_LIMIT = 128 * 1024

/** What the validator says of a body, without storing anything (the preview's list). */
function problemsOf(body: Record<string, unknown>, cfg: Config): FieldProblem[] {
  const unstorable = guardBody(body, cfg.limits.jsonMaxDepth)
  if (unstorable) return [unstorable]
  try {
    parseCampaign(body, undefined, cfg.limits)
    return []
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    if (err.key === 'INAPP_CAMPAIGN_INVALID') return [...(err.params as unknown as { problemas: FieldProblem[] }).problemas]
    const t = err.texts()
    return [{ campo: typeof t.extra?.campo === 'string' ? t.extra.campo : '', motivo: t.erro }]
  }
}

/** An error of the service as messages beside fields (validation) or at the top (state, anything else). */
function errorsOf(err: ApiError, s: EditorState): Map<string, string> {
  const out = new Map<string, string>()
  if (err.key === 'INAPP_CAMPAIGN_INVALID') {
    for (const p of (err.params as unknown as { problemas: FieldProblem[] }).problemas) {
      const id = fieldIdFor(p.campo, s)
      const prior = out.get(id)
      const line = `${p.campo}: ${p.motivo}`
      out.set(id, prior ? `${prior}; ${line}` : line)
    }
    if (!out.has('geral')) out.set('geral', err.texts().erro)
    return out
  }
  const t = err.texts()
  const field = typeof t.extra?.campo === 'string' ? fieldIdFor(t.extra.campo, s) : 'geral'
  out.set(field, field === 'geral' ? `${t.erro} ${t.causa}` : t.erro)
  if (field !== 'geral') out.set('geral', t.erro)
  return out
}

export function inappEditorRoutes(r: Router, d: InappEditorDeps): void {
  /** What the API's door refuses before reading a body (U+0000, lone surrogates, deep nesting): beside its field. */
  const unstorableOf = (body: Record<string, unknown>, s: EditorState): Map<string, string> | null => {
    const u = guardBody(body, d.cfg.limits.jsonMaxDepth)
    if (!u) return null
    return new Map([
      [fieldIdFor(u.campo, s), `${u.campo}: ${u.motivo}`],
      ['geral', 'A campanha tem um valor que não pode ser armazenado; nada foi gravado.'],
    ])
  }

  function render(
    app: AppRecord,
    v: Viewer,
    state: EditorState,
    campaign: CampaignShape | null,
    errors: Map<string, string>,
    status = 200,
    reach: Record<string, unknown> | null = null,
  ): Reply {
    const { body, problems: formProblems } = campaignBody(state, false)
    for (const [k, m] of formProblems) if (!errors.has(k)) errors.set(k, m)
    const view: EditorView = { app, v, state, campaign, body, errors, problems: problemsOf(body, d.cfg), reach }
    const title = campaign ? campaign.nome : 'Nova campanha in-app'
    return htmlReply(status, page({ title, viewer: v }, editorBody(view)))
  }

  async function campaignOf(app: AppRecord, id: string | undefined): Promise<CampaignShape> {
    if (!isUuid(id)) throw notFound()
    try {
      return await d.campaigns.get(app.id, id.toLowerCase())
    } catch (err) {
      if (err instanceof ApiError && err.key === 'INAPP_CAMPAIGN_NOT_FOUND') throw notFound()
      throw err
    }
  }

  const done = async (v: Viewer, app: AppRecord, c: CampaignShape, text: string): Promise<Reply> => {
    await d.sessions.setFlash(v, { kind: 'ok', text })
    return redirect(`/apps/${app.id}/inapp/${c.id}`)
  }

  viewerPage(d, r.get.bind(r), '/apps/:id/inapp/nova', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    return render(app, v, emptyEditor(), null, new Map())
  })

  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/inapp/nova',
    async (req, v, form) => {
      const app = await appFor(d.db, v, req.params[0])
      const s = readEditor(form)
      const action = form.text('acao')
      if (action === 'idioma') {
        if (s.languages.length < MAX_LANGUAGES) s.languages.push(emptyLanguage())
        return render(app, v, s, null, new Map())
      }
      if (action !== 'salvar' && action !== 'publicar') return render(app, v, s, null, new Map())
      const { body, problems } = campaignBody(s, false)
      if (problems.size > 0) return render(app, v, s, null, problems, 422)
      const unstorable = unstorableOf(body, s)
      if (unstorable) return render(app, v, s, null, unstorable, 422)
      let created: CampaignShape
      try {
        created = await d.campaigns.create(app.id, body)
      } catch (err) {
        if (!(err instanceof ApiError)) throw err
        return render(app, v, s, null, errorsOf(err, s), 422)
      }
      if (action === 'salvar') return done(v, app, created, `Rascunho salvo: ${created.nome}.`)
      const published = await d.campaigns.apply(app.id, created.id, 'publicar', byPerson(v.email))
      return done(v, app, published, `Campanha publicada: ${published.nome} (${published.estado}).`)
    },
    EDITOR_BODY_LIMIT,
  )

  viewerPage(d, r.get.bind(r), '/apps/:id/inapp/:cid', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const c = await campaignOf(app, req.params[1])
    const reach: Record<string, unknown> | null =
      req.query.get('alcance') === '1' ? { ...(await d.campaigns.reach(app.id, c.id)) } : null
    const flash = await d.sessions.takeFlash(v)
    const state = editorOf(c)
    const { body } = campaignBody(state, false)
    const view: EditorView = { app, v, state, campaign: c, body, errors: new Map(), problems: problemsOf(body, d.cfg), reach }
    return htmlReply(200, page({ title: c.nome, viewer: v, flash }, editorBody(view)))
  })

  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/inapp/:cid',
    async (req, v, form) => {
      const app = await appFor(d.db, v, req.params[0])
      const c = await campaignOf(app, req.params[1])
      const action = form.text('acao')
      try {
        if (action === 'pausar' || action === 'encerrar') {
          // Without the script's dialog, ending asks on the page's own terms: the button carries confirmar.
          const out = await d.campaigns.apply(app.id, c.id, action, byPerson(v.email))
          return done(v, app, out, `Campanha ${out.nome}: ${out.estado}.`)
        }
        if (action === 'duplicar') {
          const copy = await d.campaigns.duplicate(app.id, c.id)
          return done(v, app, copy, `Cópia criada como rascunho: ${copy.nome}.`)
        }
      } catch (err) {
        if (!(err instanceof ApiError)) throw err
        return render(app, v, editorOf(c), c, errorsOf(err, editorOf(c)), err.status)
      }
      const s = readEditor(form)
      if (action === 'idioma') {
        if (s.languages.length < MAX_LANGUAGES) s.languages.push(emptyLanguage())
        return render(app, v, s, c, new Map())
      }
      if (action !== 'salvar' && action !== 'publicar') return render(app, v, s, c, new Map())
      const { body, problems } = campaignBody(s, true)
      if (problems.size > 0) return render(app, v, s, c, problems, 422)
      const unstorable = unstorableOf(body, s)
      if (unstorable) return render(app, v, s, c, unstorable, 422)
      try {
        const saved = await d.campaigns.patch(app.id, c.id, body)
        if (action === 'salvar') return done(v, app, saved, `Alterações salvas (${saved.estado}).`)
        if (!TRANSITIONS.publicar.from.includes(saved.estado))
          return done(v, app, saved, `Alterações salvas; a campanha já está ${saved.estado}.`)
        const published = await d.campaigns.apply(app.id, c.id, 'publicar', byPerson(v.email))
        return done(v, app, published, `Campanha publicada: ${published.nome} (${published.estado}).`)
      } catch (err) {
        if (!(err instanceof ApiError)) throw err
        return render(app, v, s, c, errorsOf(err, s), 422)
      }
    },
    EDITOR_BODY_LIMIT,
  )

  // The campaign's reach, asked for by its page's script once the page is shown (a count over the app's devices).
  pollPage(d, r.get.bind(r), '/apps/:id/inapp/:cid/alcance.json', async (req, v) => {
    const app = await appFor(d.db, v, req.params[0])
    const c = await campaignOf(app, req.params[1])
    const reach = { ...(await d.campaigns.reach(app.id, c.id)) }
    return jsonReply({ html: reachPart(c, reach, `/apps/${app.id}`).text })
  })

  // The live preview and the validator's verdict, as the person types.
  viewerAction(
    d,
    r.post.bind(r),
    '/apps/:id/inapp/previa',
    async (req, v, form: Form) => {
      await appFor(d.db, v, req.params[0])
      const s = readEditor(form)
      const { body } = campaignBody(s, false)
      return jsonReply({ html: editorPreview(body, s, problemsOf(body, d.cfg)).text })
    },
    EDITOR_BODY_LIMIT,
  )
}
