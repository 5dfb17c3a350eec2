// The dashboard's only script (the pages work without it; it adds convenience): confirmations before destructive
// buttons, live send counters, the export's progress, and the charts (chart.js, served by Pombo).
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
