// What must hold of every send after every command, read through the real route (GET /api/v1/notifications/{id})
// and the fake FCM's accepted messages, and what must hold once the run has settled:
//   - a send is never delivered, nor closed, before it is due; a send due in minutes stays open and undelivered;
//   - closed: successful + failed + errored = recipients and remaining = 0, with the counts the model expects, and
//     the read never changes afterwards (closed once);
//   - no device gets a send twice unless a worker was stopped or Redis emptied while the send was open, or a worker
//     lost a partition lease (the process stalled past it) after the send was made (judged at the end);
//   - no device outside the send's audience gets it; `successful` never exceeds the devices the provider accepted;
//   - at the end (a bounded wait), every due send is closed, each device has one final delivery row, and no stream
//     entry is left unacknowledged.
import type { Model, ModelSend } from './sends-model'
import type { Delivered, Device, World } from './world'

/** How long after the last send falls due the run waits for every due send to close. */
const SETTLE_MS = 20_000

interface ReadShape {
  successful: number
  failed: number
  errored: number
  remaining: number
  completed_at: number | null
}

function tag(s: ModelSend): string {
  const target = s.list ? `${s.list.length} listed` : `"${s.segment}"`
  return `send #${s.n} ${s.id} (app ${s.app}, ${target}, ${s.when})`
}

function recipientsOf(x: Record<string, unknown>): number {
  return Number(x.successful) + Number(x.failed) + Number(x.errored) + Number(x.remaining)
}

function checkSend(s: ModelSend, status: number, x: ReadShape & Record<string, unknown>, got: Delivered[], w: World): string[] {
  const out: string[] = []
  const say = (msg: string) => out.push(`${tag(s)}: ${msg}`)
  if (status !== 200) return [`${tag(s)}: the read answered ${status}`]
  const early = got.filter((g) => g.at < s.dueMs)
  if (early.length > 0)
    say(`${early.length} deliveries before it was due (the first ${s.dueMs - (early[0] as Delivered).at} ms early)`)
  const perToken = new Map<string, number>()
  for (const g of got) perToken.set(g.token, (perToken.get(g.token) ?? 0) + 1)
  const twice = [...perToken].filter(([, n]) => n > 1)
  if (twice.length > 0 && !s.crashed && !s.twice) {
    const at = (k: string) => got.filter((g) => g.token === k).map((g) => g.at - s.dueMs)
    s.twice = twice.map(([k, n]) => `${k} ×${n} (${at(k).join(', ')} ms after due)`).join(', ')
    w.note(`  send #${s.n}: delivered twice (${s.twice}); judged at the end`)
  }
  const audience = s.list ?? (w.devices[s.app] as Device[])
  const allowed = new Set(audience.map((d) => d.token))
  const stray = [...perToken.keys()].filter((k) => !allowed.has(k))
  if (stray.length > 0) say(`delivered outside its audience: ${stray.join(', ')}`)
  if (x.successful > perToken.size) say(`successful ${x.successful} > ${perToken.size} devices the provider accepted`)

  if (s.when === 'later') {
    const counted = x.successful + x.failed + x.errored
    if (x.completed_at !== null || got.length > 0 || counted > 0) {
      say(`due in minutes, yet closed (${x.completed_at}), delivered (${got.length}) or counted (${counted})`)
    }
    return out
  }
  if (x.completed_at === null) {
    if (s.closed) say('seen closed before, open now')
    if (s.list && recipientsOf(x) !== s.list.length)
      say(`open with successful + failed + errored + remaining = ${recipientsOf(x)}, not ${s.list.length}`)
    return out
  }
  const now: typeof s.closed = {
    completedAt: x.completed_at,
    successful: x.successful,
    failed: x.failed,
    errored: x.errored,
    recipients: x.successful + x.failed + x.errored + x.remaining,
  }
  if (s.closed && JSON.stringify(s.closed) !== JSON.stringify(now))
    say(`changed after it closed: ${JSON.stringify(s.closed)} → ${JSON.stringify(now)}`)
  s.closed ??= now
  if (x.completed_at < Math.floor(s.dueMs / 1000)) say(`closed at ${x.completed_at}, before it was due (${s.dueMs / 1000})`)
  if (x.remaining !== 0) say(`closed with remaining ${x.remaining}`)
  const ok = [...perToken.keys()]
  if (s.list) {
    const failing = s.list.filter((d) => d.behaviour === 'failing').length
    const want = { successful: s.list.length - failing, failed: 0, errored: failing }
    const have = { successful: x.successful, failed: x.failed, errored: x.errored }
    if (JSON.stringify(have) !== JSON.stringify(want))
      say(`closed with ${JSON.stringify(have)}, expected ${JSON.stringify(want)}`)
  } else {
    // The audience of a segment is fixed as the worker expands it: at least the devices of the send's acceptance.
    const all = w.devices[s.app] as Device[]
    if (now.recipients < s.before.length || now.recipients > all.length)
      say(`closed with ${now.recipients} recipients, not within [${s.before.length}, ${all.length}]`)
    if (x.failed !== 0 || x.successful + x.errored !== now.recipients) say(`closed with ${JSON.stringify(now)}`)
    const missed = s.before.filter((d) => d.behaviour !== 'failing' && !perToken.has(d.token))
    if (missed.length > 0) say(`closed without delivering to ${missed.map((d) => d.token).join(', ')}`)
  }
  if (x.successful !== ok.length) say(`closed with successful ${x.successful}, but the provider accepted ${ok.length} devices`)
  return out
}

/** Every invariant of every send the model knows; throws one error listing every broken one. */
export async function checkStep(m: Model, w: World): Promise<void> {
  // Reads first, then the provider's record: every outcome read was delivered before it was recorded.
  const reads = await Promise.all(m.sends.map((s) => w.read(s.app, s.id)))
  const delivered = w.delivered()
  const problems = m.sends.flatMap((s, i) => {
    const r = reads[i] as { status: number; json: Record<string, unknown> }
    return checkSend(s, r.status, r.json as ReadShape & Record<string, unknown>, delivered.get(s.id) ?? [], w)
  })
  if (problems.length > 0) throw new Error(problems.join('\n'))
}

/** After the commands: waits (bounded) for every due send to close, then checks everything once more. */
export async function settle(m: Model, w: World): Promise<void> {
  const due = m.sends.filter((s) => s.when !== 'later')
  const deadline = Math.max(Date.now(), ...due.map((s) => s.dueMs)) + SETTLE_MS
  const ids = due.map((s) => s.id)
  for (;;) {
    const open = await w.api.sql('SELECT id FROM sends WHERE id = ANY($1::uuid[]) AND completed_at IS NULL', [ids])
    if (open.length === 0 || Date.now() > deadline) break
    await new Promise((r) => setTimeout(r, 200))
  }
  w.note('settled')
  const stuck = await w.api.sql(
    `SELECT id, queued_at, send_after, enqueued_at, picked_at, recipients, remaining FROM sends
      WHERE id = ANY($1::uuid[]) AND completed_at IS NULL ORDER BY queued_at`,
    [ids],
  )
  if (stuck.length > 0) {
    const byId = new Map(m.sends.map((s) => [s.id, s]))
    const lines = stuck.map(
      (r) => `${tag(byId.get(r.id) as ModelSend)} still open ${SETTLE_MS} ms after the last send was due: ${JSON.stringify(r)}`,
    )
    throw new Error(lines.join('\n'))
  }
  await checkStep(m, w)
  // Twice with no crash: allowed only if a worker lost a partition lease while the send was open (a stall).
  const losses = w.leaseLosses()
  const twice = m.sends.filter((s) => s.twice && !losses.some((t) => t >= s.madeAt))
  if (twice.length > 0) {
    throw new Error(twice.map((s) => `${tag(s)}: delivered twice with no crash while it was open: ${s.twice}`).join('\n'))
  }
  // One final delivery row per recipient device, none pending.
  const rows = await w.api.sql<{ id: string; recipients: number; final: number; pending: number }>(
    `SELECT s.id, s.recipients,
            (SELECT count(*)::int FROM deliveries d WHERE d.send_id = s.id AND d.status <> 0) AS final,
            (SELECT count(*)::int FROM deliveries d WHERE d.send_id = s.id AND d.status = 0) AS pending
       FROM sends s WHERE s.id = ANY($1::uuid[])`,
    [ids],
  )
  const bad = rows.filter((r) => r.final !== r.recipients || r.pending !== 0)
  if (bad.length > 0) throw new Error(`delivery rows do not match recipients: ${JSON.stringify(bad)}`)
  // The actor acknowledges a send's entries just after it closes.
  let pending = await w.pendingEntries()
  for (let i = 0; i < 50 && pending.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100))
    pending = await w.pendingEntries()
  }
  if (pending.length > 0) throw new Error(`stream entries left unacknowledged after every send closed:\n${pending.join('\n')}`)
}
