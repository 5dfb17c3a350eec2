// The dashboard's only script (every page works without it; it adds convenience). Two parts, each acting only on
// the elements of its pages: first the sending and in-app pages (the composer's live preview, device search,
// audience-size confirmation and test result; a send's live page and its charts; the in-app editor's live preview:
// every number and preview comes from the server, rendered by the same code as the page, so this draws nothing of
// its own); then every page (confirmations before destructive buttons, live send counters, the export's progress,
// and the charts, with chart.js served by Pombo).
;(() => {
  'use strict'

  const post = (url, form) =>
    fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(new FormData(form)),
    })

  const debounce = (f, ms) => {
    let t
    return () => {
      clearTimeout(t)
      t = setTimeout(f, ms)
    }
  }

  const hidden = (form, name, value) => {
    let i = form.querySelector(`input[type=hidden][name="${name}"]`)
    if (!i) {
      i = document.createElement('input')
      i.type = 'hidden'
      i.name = name
      form.appendChild(i)
    }
    i.value = value
  }

  // Colours and sizes of a preview travel as data-css (the page's Content-Security-Policy forbids inline styles);
  // set through the CSSOM, which the policy allows. The server sends only values that passed their checks.
  const applyCss = (root) => {
    for (const el of root.querySelectorAll('[data-css]')) {
      try {
        for (const [k, v] of Object.entries(JSON.parse(el.dataset.css))) el.style.setProperty(k, String(v))
      } catch {}
    }
  }

  // A live preview region refreshed from the server as the person types.
  const livePreview = (form, url, target) => {
    applyCss(target)
    let seq = 0
    const refresh = async () => {
      const mine = ++seq
      try {
        const res = await post(url, form)
        if (!res.ok || mine !== seq) return
        const out = await res.json()
        if (mine === seq) {
          target.innerHTML = out.html
          applyCss(target)
        }
      } catch {
        // the next keystroke tries again
      }
    }
    const later = debounce(refresh, 250)
    form.addEventListener('input', later)
    form.addEventListener('change', later)
    return refresh
  }

  // ---- the push composer ----
  const composer = document.getElementById('compositor')
  if (composer) {
    const refresh = livePreview(composer, composer.dataset.previa, document.getElementById('previa-conteudo'))
    let leaving = false
    let asking = false
    composer.addEventListener('submit', async (ev) => {
      const action = ev.submitter ? ev.submitter.value : 'previa'
      if (leaving) {
        ev.preventDefault() // a second click while the first submission is under way
        return
      }
      if (action === 'previa') {
        ev.preventDefault()
        refresh()
        return
      }
      if (action !== 'enviar') {
        leaving = true
        return
      }
      ev.preventDefault()
      if (asking) return
      asking = true
      const button = ev.submitter
      button.setAttribute('aria-busy', 'true')
      try {
        const res = await post(composer.dataset.contar, composer)
        const out = res.ok ? await res.json() : { ok: false }
        if (out.ok && out.recipients === 0) {
          window.alert('Nenhum dispositivo alcançável neste público: nada seria enviado.')
          return
        }
        if (out.ok) {
          const n = `${out.exact ? '' : 'cerca de '}${out.recipients.toLocaleString('pt-BR')} dispositivo${out.recipients === 1 ? '' : 's'}`
          if (!window.confirm(`Enviar esta notificação para ${n}?`)) return
          hidden(composer, 'confirmar', '1')
        }
        // Errors (or no answer): the server's page shows them beside their fields, or asks itself.
        hidden(composer, 'acao', 'enviar')
        leaving = true
        composer.submit()
      } catch {
        hidden(composer, 'acao', 'enviar')
        leaving = true
        composer.submit()
      } finally {
        asking = false
        button.removeAttribute('aria-busy')
      }
    })

    // Test device search: suggestions while typing (player id or its start, external user id, token).
    const search = document.getElementById('teste_dispositivo')
    const list = document.getElementById('sugestoes-teste')
    if (search && list) {
      search.addEventListener(
        'input',
        debounce(async () => {
          const q = search.value.trim()
          if (q.length < 3) return
          try {
            const res = await fetch(`${composer.dataset.busca}?q=${encodeURIComponent(q)}`, { credentials: 'same-origin' })
            if (!res.ok) return
            const { devices } = await res.json()
            list.replaceChildren(
              ...devices.map((d) => {
                const o = document.createElement('option')
                o.value = d.id
                o.label = d.label
                o.textContent = d.label
                return o
              }),
            )
          } catch {}
        }, 300),
      )
    }

    // A test send's result: what the provider said, once it answered.
    const result = document.getElementById('resultado-teste')
    if (result?.dataset.estado) {
      const state = result.querySelector('.estado-teste')
      const started = Date.now()
      const poll = async () => {
        try {
          const res = await fetch(result.dataset.estado, { credentials: 'same-origin' })
          if (res.ok) {
            const out = await res.json()
            state.textContent = out.text
            if (out.state !== 'pending') {
              result.dataset.resultado = out.state
              return
            }
          }
        } catch {}
        if (Date.now() - started < 120_000) setTimeout(poll, 1000)
      }
      setTimeout(poll, 500)
    }
  }

  // ---- a send's page: charts, and live parts while the send is open ----
  const dataEl = document.getElementById('dados-envio')
  const live = document.getElementById('envio-vivo')
  if (dataEl && live) {
    const charts = {}
    const Chart = window.Chart
    const draw = (d) => {
      if (!Chart) return
      const funnel = [
        {
          label: 'aceitos pelo Pombo',
          data: d.labels.map(() => d.recipients),
          borderColor: '#8a949e',
          backgroundColor: '#8a949e',
          borderDash: [4, 4],
          pointRadius: 0,
        },
        { label: 'entregues ao provedor', data: d.accepted, borderColor: '#1b5fa8', backgroundColor: '#1b5fa8' },
        d.proven && { label: 'provados por recibo', data: d.proven, borderColor: '#1e7a3c', backgroundColor: '#1e7a3c' },
        { label: 'cliques', data: d.clicked, borderColor: '#e59a2f', backgroundColor: '#e59a2f' },
      ].filter(Boolean)
      const platforms = [
        { label: 'entregues ao provedor', data: d.platforms.map((p) => p.accepted), backgroundColor: '#1b5fa8' },
        { label: 'falhas', data: d.platforms.map((p) => p.failed), backgroundColor: '#b3261e' },
        d.proven && { label: 'provados por recibo', data: d.platforms.map((p) => p.proven), backgroundColor: '#1e7a3c' },
        { label: 'cliques', data: d.platforms.map((p) => p.clicked), backgroundColor: '#e59a2f' },
      ].filter(Boolean)
      const specs = [
        ['grafico-funil', 'line', d.labels, funnel],
        ['grafico-plataformas', 'bar', d.platforms.map((p) => p.label), platforms],
        [
          'grafico-tempo',
          'bar',
          d.histogramLabels,
          d.histogram ? [{ label: 'recibos', data: d.histogram, backgroundColor: '#1e7a3c' }] : [],
        ],
      ]
      for (const [id, type, labels, datasets] of specs) {
        const canvas = document.getElementById(id)
        if (!canvas) continue
        if (charts[id]) {
          charts[id].data.labels = labels
          charts[id].data.datasets = datasets
          charts[id].update('none')
        } else {
          charts[id] = new Chart(canvas, {
            type,
            data: { labels, datasets },
            options: { animation: false, responsive: true, maintainAspectRatio: false, scales: { y: { beginAtZero: true } } },
          })
        }
      }
    }
    draw(JSON.parse(dataEl.textContent))
    let open = live.dataset.aberto === '1'
    const tick = async () => {
      if (!document.hidden) {
        try {
          const res = await fetch(live.dataset.vivo, { credentials: 'same-origin' })
          if (res.ok) {
            const out = await res.json()
            for (const [k, v] of Object.entries(out.parts)) {
              const el = live.querySelector(`[data-parte="${k}"]`)
              if (el) el.innerHTML = v
            }
            for (const el of document.querySelectorAll('[data-contador="estado"]')) el.textContent = out.state
            draw(out.charts)
            open = out.open
          }
        } catch {}
      }
      // Receipts and clicks keep arriving after a send completes, only more slowly.
      setTimeout(tick, open ? 2000 : 5000)
    }
    setTimeout(tick, 2000)
  }

  // ---- a campaign's reach, counted after the page is shown ----
  const reach = document.getElementById('alcance-campanha')
  if (reach && !document.getElementById('alcance')) {
    fetch(reach.dataset.alcance, { credentials: 'same-origin' })
      .then((res) => (res.ok ? res.json() : null))
      .then((out) => {
        if (out) reach.innerHTML = out.html
      })
      .catch(() => {})
  }

  // ---- the in-app editor ----
  const editor = document.getElementById('editor-inapp')
  if (editor) {
    // Fields of another form or trigger type are hidden while they do not apply (without the script, all show).
    for (const el of editor.querySelectorAll('[data-mostrar-se]')) {
      const [id, value] = el.dataset.mostrarSe.split('=')
      const control = document.getElementById(id)
      if (!control) continue
      const update = () => {
        el.hidden = control.value !== value
      }
      control.addEventListener('change', update)
      update()
    }
    const refresh = livePreview(editor, editor.dataset.previa, document.getElementById('previa-conteudo'))
    let leaving = false
    editor.addEventListener('submit', (ev) => {
      if (leaving) {
        ev.preventDefault()
        return
      }
      if (!ev.submitter || ev.submitter.value === 'previa') {
        ev.preventDefault()
        refresh()
        return
      }
      const ask = ev.submitter.dataset.confirmar
      if (ask && !window.confirm(ask)) {
        ev.preventDefault()
        return
      }
      if (ask) hidden(editor, 'confirmar', '1')
      leaving = true
    })
  }
})()

;(() => {
  'use strict'

  // Destructive buttons ask first; the answer travels as confirmar=1 (without this script the server asks instead).
  for (const form of document.querySelectorAll('form[data-confirmar]')) {
    form.addEventListener('submit', (ev) => {
      if (!window.confirm(form.dataset.confirmar)) {
        ev.preventDefault()
        return
      }
      if (!form.querySelector('input[name=confirmar]')) {
        const i = document.createElement('input')
        i.type = 'hidden'
        i.name = 'confirmar'
        i.value = '1'
        form.appendChild(i)
      }
    })
  }

  // Live counters: every 2 s while a shown send still has work remaining, every 5 s after (receipts and clicks keep
  // arriving after a send completes); only while the page is visible.
  const table = document.getElementById('tabela-envios')
  if (table) {
    const rows = [...table.querySelectorAll('tr[data-envio]')]
    const tick = async () => {
      if (document.hidden) {
        setTimeout(tick, 2000)
        return
      }
      const ids = rows.map((r) => r.dataset.envio)
      try {
        const res = await fetch(`${table.dataset.vivo}?ids=${ids.join(',')}`, { credentials: 'same-origin' })
        if (!res.ok) return
        const { envios } = await res.json()
        let open = false
        for (const row of rows) {
          const c = envios[row.dataset.envio]
          if (!c) continue
          for (const cell of row.querySelectorAll('td[data-campo]')) {
            const v = c[cell.dataset.campo]
            cell.textContent = v === null || v === undefined ? '—' : String(v)
          }
          for (const m of row.querySelectorAll('meter[data-campo]')) {
            const v = c[m.dataset.campo]
            m.max = Math.max(1, c.recipients)
            m.value = typeof v === 'number' ? v : 0
            m.textContent = String(v ?? 0)
          }
          if (c.remaining > 0 || c.estado !== 'concluído') open = true
        }
        if (!open) {
          setTimeout(tick, 5000)
          return
        }
      } catch {
        // the next tick tries again
      }
      setTimeout(tick, 2000)
    }
    setTimeout(tick, 2000)
  }

  // The export's progress until the file is ready.
  const bar = document.getElementById('export-progresso')
  if (bar) {
    const label = document.getElementById('export-estado')
    const poll = async () => {
      try {
        const res = await fetch(bar.dataset.estado, { credentials: 'same-origin' })
        const s = await res.json()
        if (s.estado === 'ready') {
          bar.value = 1
          label.textContent = `pronto: ${s.linhas} dispositivos`
          return
        }
        if (s.estado === 'failed') {
          label.textContent = 'falhou; tente de novo'
          return
        }
        label.textContent = 'preparando…'
      } catch {}
      setTimeout(poll, 1000)
    }
    poll()
  }

  // Charts of the window statistics.
  const data = document.getElementById('dados-graficos')
  if (data && window.Chart) {
    const d = JSON.parse(data.textContent)
    // A bar or point opens the sends list of its day (the same links are in the table under the charts).
    const toDay = (_ev, items) => {
      const day = items.length > 0 ? d.dias[items[0].index] : null
      if (day && d.url) window.location.assign(`${d.url}?desde=${day}&ate=${day}`)
    }
    const volume = document.getElementById('grafico-volume')
    const prova = document.getElementById('grafico-prova')
    if (volume) {
      new window.Chart(volume, {
        type: 'bar',
        data: {
          labels: d.dias,
          datasets: [
            { label: 'aceitos', data: d.enviados, backgroundColor: '#9ab8dc' },
            { label: 'entregues (recibo)', data: d.entregues, backgroundColor: '#1b5fa8' },
            { label: 'cliques', data: d.cliques, backgroundColor: '#e59a2f' },
          ].filter((x) => x.data), // without proof of arrival on the app's plan, the page sends no receipts' series
        },
        options: { animation: false, responsive: true, onClick: toDay, scales: { y: { beginAtZero: true } } },
      })
    }
    if (prova) {
      new window.Chart(prova, {
        type: 'line',
        data: {
          labels: d.dias,
          datasets: [{ label: '% provadas por recibo', data: d.provados, borderColor: '#1e7a3c', tension: 0.2 }],
        },
        options: { animation: false, responsive: true, onClick: toDay, scales: { y: { beginAtZero: true, max: 100 } } },
      })
    }
  }
})()
