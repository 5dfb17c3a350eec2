// The composer's preview: what Android, iOS and a web browser will show, the payload's size against the limit and
// the language the server will choose. Computed by the send's own code (src/message/payload.ts through parseSend,
// and the display block of src/providers/fcm-body.ts), so the preview and the real push cannot disagree: the size is
// the number the API compares with 3,891 bytes, the texts are the ones the providers' bodies carry.
import type { Limits } from '../../core/config'
import { ApiError } from '../../core/errors'
import { INJECTED_BYTES, pickText, pickTextIos } from '../../message/payload'
import type { TextMap } from '../../message/types'
import { DISPLAY_KEYS, displayBlock, type Rendering } from '../../providers/fcm-body'
import { parseSend } from '../../sends/validate'
import { html, type Html } from '../html'

export interface DeviceView {
  title?: string
  subtitle?: string
  body?: string
  image?: string
}

export interface PreviewModel {
  /** Bytes as the API counts them (the rendering plus the 96 the server injects); null when it cannot be rendered. */
  bytes: number | null
  limit: number
  /** The language whose text Android, web and iOS-through-FCM show; and the one of iOS on the direct APNs path. */
  language: { fcm: string | null; apns: string | null }
  android: DeviceView
  ios: DeviceView
  web: DeviceView
  /** Why the message cannot be rendered as it stands (other than its size). */
  problem: string | null
}

const TARGETS = ['include_player_ids', 'include_external_user_ids', 'included_segments']

/** The key a picker chooses: the picker run over a map whose texts are its keys. */
function chosenKey(pick: (m: TextMap | undefined) => string | undefined, map: TextMap | undefined): string | null {
  if (!map || Object.keys(map).length === 0) return null
  return pick(Object.fromEntries(Object.keys(map).map((k) => [k, k]))) ?? null
}

/** The preview of a send request body (the composer's, see compose.ts). */
export function previewOf(body: Record<string, unknown>, nowMs: number, limits: Limits): PreviewModel {
  // The audience and the schedule do not change what travels: a stand-in target, no send_after, so the preview
  // shows the message even before its audience is chosen.
  const b: Record<string, unknown> = { ...body }
  for (const k of TARGETS) delete b[k]
  delete b.send_after
  b.included_segments = ['Subscribed Users']
  const contents = b.contents as TextMap
  if (Object.keys(contents).length === 0) b.contents = { pt: '' }
  const out: PreviewModel = {
    bytes: null,
    limit: limits.payloadMaxBytes,
    language: { fcm: null, apns: null },
    android: {},
    ios: {},
    web: {},
    problem: null,
  }
  let message: Rendering
  try {
    const input = parseSend(b, {}, nowMs, limits)
    message = JSON.parse(input.message) as Rendering
    out.bytes = Buffer.byteLength(input.message) + INJECTED_BYTES
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    if (err.key !== 'PAYLOAD_TOO_LARGE') {
      out.problem = err.texts().erro
      return out
    }
    out.bytes = (err.params as { bytes: number }).bytes
    message = {
      contents: b.contents as TextMap,
      headings: b.headings as TextMap | undefined,
      data: {},
      big_picture: typeof b.big_picture === 'string' ? b.big_picture : undefined,
      content_available: false,
      mutable_content: false,
    }
  }
  out.language = { fcm: chosenKey(pickText, message.contents), apns: chosenKey(pickTextIos, message.contents) }
  // Android and web: the display block the SDK draws (fcm-body.ts); iOS: the alert APNs shows (apns.ts).
  const block = (deviceType: number): DeviceView => {
    const d = new Map(displayBlock(message, deviceType))
    return { title: d.get(DISPLAY_KEYS.title), body: d.get(DISPLAY_KEYS.body), image: d.get(DISPLAY_KEYS.image) }
  }
  out.android = block(1)
  out.web = block(5)
  out.ios = {
    title: pickTextIos(message.headings),
    subtitle: pickTextIos(message.subtitle),
    body: pickTextIos(message.contents),
    image: message.big_picture,
  }
  return out
}

const fmt = new Intl.NumberFormat('pt-BR')

function device(kind: string, label: string, appName: string, v: DeviceView, note?: string): Html {
  return html`<figure class="aparelho ${kind}">
<div class="notificacao"><p class="app-nome">${appName}<span class="agora"> · agora</span></p>
${v.title ? html`<p class="n-titulo">${v.title}</p>` : ''}${v.subtitle ? html`<p class="n-subtitulo">${v.subtitle}</p>` : ''}
<p class="n-corpo">${v.body || html`<span class="vazio">(mensagem vazia)</span>`}</p>
${v.image ? html`<p class="n-imagem">imagem: ${v.image}</p>` : ''}</div>
<figcaption>${label}${note ? html` · ${note}` : ''}</figcaption></figure>`
}

/** The preview region's inside (the page renders it, and the composer's script replaces it as the person types). */
export function previewHtml(p: PreviewModel, appName: string): Html {
  const over = p.bytes !== null && p.bytes > p.limit
  const iosNote =
    p.language.apns && p.language.apns !== p.language.fcm
      ? `idioma ${p.language.apns} (APNs direto); via FCM, ${p.language.fcm}`
      : p.language.apns
        ? `idioma ${p.language.apns}`
        : undefined
  return html`<div class="aparelhos">
${device('android', 'Android', appName, p.android, p.language.fcm ? `idioma ${p.language.fcm}` : undefined)}
${device('ios', 'iOS', appName, p.ios, iosNote)}
${device('web', 'Navegador (web push)', appName, p.web, p.language.fcm ? `idioma ${p.language.fcm}` : undefined)}
</div>
${p.problem ? html`<p class="erro">Sem prévia: ${p.problem}</p>` : ''}
<p class="tamanho"><label for="tamanho-payload">Tamanho do payload</label>
<meter id="tamanho-payload" min="0" max="${p.limit}" high="${Math.floor(p.limit * 0.9)}" optimum="0" value="${Math.min(p.bytes ?? 0, p.limit)}">${p.bytes ?? 0}</meter>
<span id="tamanho-texto">${p.bytes === null ? '—' : fmt.format(p.bytes)} de ${fmt.format(p.limit)} bytes</span>
<small>(inclui ${INJECTED_BYTES} bytes que o servidor injeta: pm_msg_id e pm_rcpt)</small></p>
${over ? html`<p class="erro" role="alert">Acima do limite de ${fmt.format(p.limit)} bytes: a API recusaria este envio. Encurte os textos ou use menos idiomas.</p>` : ''}
<p>Idioma que o servidor escolhe: <b id="idioma-escolhido">${p.language.fcm ?? '—'}</b>${
    p.language.apns && p.language.apns !== p.language.fcm ? html` (iOS pelo APNs direto: <b>${p.language.apns}</b>)` : ''
  }. <small>Regra: en, senão o primeiro em ordem alfabética; no iOS direto, en, depois pt. Todos os idiomas viajam no push.</small></p>`
}
