// The `--report` drawing: the end-to-end latency distribution (send accepted → receipt counted, and its first leg,
// send accepted → provider accepted) on a logarithmic time axis with the percentiles marked, and the pushes and
// receipts per time slot over the run. Plain SVG, no script and no external asset; the HTML form wraps the same
// SVG with the summary table.
import type { Histogram, Timeline } from './histogram'

export interface ReportData {
  title: string
  sendToProvider: Histogram
  sendToReceipt: Histogram
  providerToReceipt: Histogram
  receipts: Timeline
  pushes: Timeline
  /** Label → value rows of the summary. */
  summary: Array<[string, string]>
}

const W = 960
const PAD = { l: 70, r: 20, t: 40, b: 70 }
const CHART_H = 260
const COLORS = { receipt: '#2f6fdf', provider: '#e07b24', pushes: '#9aa5b1' }

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const fmtMs = (ms: number) =>
  ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`

export function renderSvg(d: ReportData): string {
  const h = PAD.t + CHART_H + PAD.b + 40 + CHART_H + PAD.b
  const parts: string[] = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="system-ui, sans-serif" font-size="12">`,
  )
  parts.push(`<title>${esc(d.title)}</title>`)
  parts.push(`<rect width="${W}" height="${h}" fill="#fff"/>`)
  parts.push(latencyChart(d, PAD.t))
  parts.push(timelineChart(d, PAD.t + CHART_H + PAD.b + 40))
  parts.push('</svg>')
  return parts.join('\n')
}

function latencyChart(d: ReportData, top: number): string {
  const out: string[] = []
  const x0 = PAD.l
  const x1 = W - PAD.r
  const y1 = top + CHART_H
  out.push(
    `<text x="${x0}" y="${top - 14}" font-size="15" font-weight="600">End-to-end latency (send accepted → receipt counted)</text>`,
  )
  const series = [
    { h: d.sendToReceipt, color: COLORS.receipt, label: 'send accepted → receipt counted' },
    { h: d.sendToProvider, color: COLORS.provider, label: 'send accepted → provider accepted' },
  ]
  const all = series.flatMap((s) => coarse(s.h))
  if (all.length === 0) {
    out.push(
      `<text x="${(x0 + x1) / 2}" y="${top + CHART_H / 2}" text-anchor="middle" fill="#666">no latency recorded (no receipts for this run's sends)</text>`,
    )
    return out.join('\n')
  }
  const lo = Math.max(1, Math.min(...all.map((b) => b[0] || 1)))
  const hi = Math.max(lo * 2, ...all.map((b) => b[1]))
  const lx0 = Math.log10(lo)
  const lx1 = Math.log10(hi)
  const x = (ms: number) => x0 + ((Math.log10(Math.max(ms, lo)) - lx0) / (lx1 - lx0)) * (x1 - x0)
  // Density per unit of log-time, so wide and narrow bins compare fairly
  const dens = (h: Histogram) =>
    coarse(h).map(
      ([a, b, c]) => [a, b, c / h.count / Math.max(1e-9, Math.log10(Math.max(b, lo)) - Math.log10(Math.max(a, lo)))] as const,
    )
  const peak = Math.max(...series.flatMap((s) => dens(s.h).map((b) => b[2])), 1e-9)
  const y = (v: number) => y1 - (v / peak) * (CHART_H - 10)
  out.push(axes(x0, x1, top, y1))
  for (let e = Math.floor(lx0); e <= Math.ceil(lx1); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e
      if (v < lo || v > hi) continue
      const xx = x(v)
      out.push(`<line x1="${xx.toFixed(1)}" y1="${top}" x2="${xx.toFixed(1)}" y2="${y1}" stroke="#eee"/>`)
      out.push(`<text x="${xx.toFixed(1)}" y="${y1 + 16}" text-anchor="middle" fill="#444">${fmtMs(v)}</text>`)
    }
  }
  out.push(`<text x="${x1}" y="${y1 + 36}" text-anchor="end" fill="#444">latency (log scale); dashed: p50, dotted: p99</text>`)
  out.push(
    `<text x="${x0 - 50}" y="${top + CHART_H / 2}" transform="rotate(-90 ${x0 - 50} ${top + CHART_H / 2})" text-anchor="middle" fill="#444">share of pushes</text>`,
  )
  series.forEach((s, i) => {
    if (s.h.count === 0) return
    const pts: string[] = []
    let prevEnd = -1
    for (const [a, b, v] of dens(s.h)) {
      // An empty stretch between two bins drops to the axis instead of being bridged by a slope
      if (prevEnd >= 0 && a > prevEnd * 1.0001) pts.push(`${x(prevEnd).toFixed(1)},${y1}`, `${x(a).toFixed(1)},${y1}`)
      pts.push(`${x(a || lo).toFixed(1)},${y(v).toFixed(1)}`, `${x(b).toFixed(1)},${y(v).toFixed(1)}`)
      prevEnd = b
    }
    const first = dens(s.h)[0]
    const last = dens(s.h).at(-1)
    if (first && last) {
      const poly = `${x(first[0] || lo).toFixed(1)},${y1} ${pts.join(' ')} ${x(last[1]).toFixed(1)},${y1}`
      out.push(`<polygon points="${poly}" fill="${s.color}" fill-opacity="0.18" stroke="${s.color}" stroke-width="1.5"/>`)
    }
    for (const [q, dash] of [
      [0.5, '4 3'],
      [0.99, '1 3'],
    ] as const) {
      const v = s.h.quantile(q)
      const xx = x(v)
      const right = xx > x1 - 90 // near the right edge the label goes on the line's left
      out.push(
        `<line x1="${xx.toFixed(1)}" y1="${top}" x2="${xx.toFixed(1)}" y2="${y1}" stroke="${s.color}" stroke-dasharray="${dash}"/>`,
      )
      out.push(
        `<text x="${(right ? xx - 3 : xx + 3).toFixed(1)}" y="${top + 12 + (i + (q === 0.99 ? 2 : 0)) * 14}" text-anchor="${right ? 'end' : 'start'}" fill="${s.color}">p${q * 100} ${fmtMs(v)}</text>`,
      )
    }
    out.push(`<rect x="${x0 + i * 320}" y="${y1 + 44}" width="12" height="12" fill="${s.color}" fill-opacity="0.5"/>`)
    out.push(`<text x="${x0 + 18 + i * 320}" y="${y1 + 54}">${esc(s.label)} (${s.h.count})</text>`)
  })
  return out.join('\n')
}

function timelineChart(d: ReportData, top: number): string {
  const out: string[] = []
  const x0 = PAD.l
  const x1 = W - PAD.r
  const y1 = top + CHART_H
  const slotS = d.receipts.slotMs / 1000
  out.push(
    `<text x="${x0}" y="${top - 14}" font-size="15" font-weight="600">Pushes received and receipts counted per ${slotS === 1 ? 'second' : `${slotS} s`}</text>`,
  )
  const slotMs = Math.max(d.receipts.slotMs, d.pushes.slotMs)
  const regroup = (t: Timeline) => {
    const f = slotMs / t.slotMs
    const out: number[] = []
    t.slots.forEach((c, i) => {
      const k = Math.floor(i / f)
      out[k] = (out[k] ?? 0) + c
    })
    return Array.from(out, (v) => v ?? 0)
  }
  const receipts = regroup(d.receipts)
  const pushes = regroup(d.pushes)
  const n = Math.max(receipts.length, pushes.length, 1)
  const peak = Math.max(1, ...receipts, ...pushes)
  const bw = (x1 - x0) / n
  const y = (v: number) => y1 - (v / peak) * (CHART_H - 10)
  out.push(axes(x0, x1, top, y1))
  for (let i = 0; i < n; i++) {
    const p = pushes[i] ?? 0
    const r = receipts[i] ?? 0
    if (p > 0)
      out.push(
        `<rect x="${(x0 + i * bw).toFixed(1)}" y="${y(p).toFixed(1)}" width="${Math.max(0.5, bw * 0.9).toFixed(1)}" height="${(y1 - y(p)).toFixed(1)}" fill="${COLORS.pushes}"/>`,
      )
    if (r > 0)
      out.push(
        `<rect x="${(x0 + i * bw + bw * 0.2).toFixed(1)}" y="${y(r).toFixed(1)}" width="${Math.max(0.5, bw * 0.5).toFixed(1)}" height="${(y1 - y(r)).toFixed(1)}" fill="${COLORS.receipt}"/>`,
      )
  }
  for (let k = 0; k <= 4; k++) {
    const v = (peak * k) / 4
    out.push(`<text x="${x0 - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#444">${Math.round(v)}</text>`)
  }
  const ticks = Math.min(n, 8)
  for (let k = 0; k <= ticks; k++) {
    const i = Math.round((n * k) / ticks)
    out.push(
      `<text x="${(x0 + i * bw).toFixed(1)}" y="${y1 + 16}" text-anchor="middle" fill="#444">${((i * slotMs) / 1000).toFixed(0)} s</text>`,
    )
  }
  out.push(`<text x="${x1}" y="${y1 + 36}" text-anchor="end" fill="#444">time since the start of the run</text>`)
  out.push(
    `<rect x="${x0}" y="${y1 + 44}" width="12" height="12" fill="${COLORS.pushes}"/><text x="${x0 + 18}" y="${y1 + 54}">pushes received by the devices</text>`,
  )
  out.push(
    `<rect x="${x0 + 320}" y="${y1 + 44}" width="12" height="12" fill="${COLORS.receipt}"/><text x="${x0 + 338}" y="${y1 + 54}">receipts counted</text>`,
  )
  return out.join('\n')
}

/** The histogram's buckets merged four to a bin (a quarter of a power of two): smooth enough to read as a shape. */
function coarse(h: Histogram): Array<[number, number, number]> {
  const bins = new Map<number, [number, number, number]>()
  for (const [a, b, c] of h.buckets()) {
    const k = a < 1 ? -1 : Math.floor(Math.log2(a) * 4 + 1e-9)
    const bin = bins.get(k)
    if (bin) {
      bin[1] = Math.max(bin[1], b)
      bin[2] += c
    } else bins.set(k, [a, b, c])
  }
  return [...bins.entries()].sort((x, y) => x[0] - y[0]).map((e) => e[1])
}

function axes(x0: number, x1: number, top: number, y1: number): string {
  return `<line x1="${x0}" y1="${y1}" x2="${x1}" y2="${y1}" stroke="#333"/><line x1="${x0}" y1="${top}" x2="${x0}" y2="${y1}" stroke="#333"/>`
}

export function renderHtml(d: ReportData): string {
  const rows = d.summary.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join('\n')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(d.title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:1rem 0}th,td{text-align:left;padding:.2rem .8rem;border-bottom:1px solid #eee}th{font-weight:500;color:#555}</style>
</head><body>
<h1>${esc(d.title)}</h1>
<table>${rows}</table>
${renderSvg(d)}
</body></html>
`
}
