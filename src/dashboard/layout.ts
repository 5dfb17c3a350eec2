// The frame of every page: head, navigation with sign-out, flash message, and the dashboard's own assets.
import { html, type Html } from './html'
import type { Viewer } from './session'

export interface Frame {
  title: string
  viewer?: Viewer | null
  flash?: Flash | null
  /** Extra scripts served by the dashboard (e.g. chart.js). */
  scripts?: string[]
  /** Reload the page after this many seconds (a job's status page, with or without the script). */
  refreshS?: number
}

export interface Flash {
  kind: 'ok' | 'erro'
  text: string
}

export function page(f: Frame, body: Html): string {
  const v = f.viewer
  return html`<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${f.title} · Pombo</title>
${f.refreshS ? html`<meta http-equiv="refresh" content="${f.refreshS}">` : ''}
<link rel="stylesheet" href="/assets/painel.css">
</head>
<body>
<header class="topo">
<a class="marca" href="${v ? '/apps' : '/'}">Pombo</a>
${
  v
    ? html`<nav aria-label="Conta"><a href="/apps">Apps</a>
${v.operator ? html`<a href="/pessoas">Pessoas</a> <a href="/convites">Convites</a>` : v.orgId ? html`<a href="/organizacoes/${v.orgId}">Organização</a>` : ''}
<a href="/conta">Conta</a>
<span class="quem">${v.email}${v.operator ? ' (operador)' : ''}</span>
<form method="post" action="/sair" class="inline"><input type="hidden" name="_csrf" value="${v.csrf}"><button type="submit">Sair</button></form></nav>`
    : ''
}
</header>
<main>
${f.flash ? html`<p role="${f.flash.kind === 'erro' ? 'alert' : 'status'}" class="aviso ${f.flash.kind}">${f.flash.text}</p>` : ''}
${body}
</main>
${(f.scripts ?? []).map((s) => html`<script src="${s}"></script>`)}
<script src="/assets/painel.js"></script>
</body>
</html>`.text
}
