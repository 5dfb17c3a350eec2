// The composer's test send: the device picked by search (a player id or the start of one, an external user id, a
// push token), and the result of the send to it, in the provider's words once it answered (deliveries.reason).
import { type Db, query } from '../../db/pool'
import { isUuid } from '../../http/router'
import { failureCategory, FAILURE_LABELS } from './failures'

export interface TestDevice {
  id: string
  device_type: number
  external_user_id: string | null
  transporte: string
  invalid_identifier: boolean
  sandbox: boolean
}

const TYPES: Record<number, string> = { 0: 'iOS', 1: 'Android', 5: 'Chrome', 7: 'Safari', 8: 'Firefox' }
const COLUMNS = 'id, device_type, external_user_id, transporte, invalid_identifier, sandbox'
const LIMIT = 10

export function deviceLabel(x: TestDevice): string {
  return `${x.id} · ${TYPES[x.device_type] ?? x.device_type}${x.external_user_id ? ` · ${x.external_user_id}` : ''}${
    x.invalid_identifier ? ' · token inválido' : ''
  }`
}

/** A player id's start (4 to 36 characters of it) as the range of ids that begin with it. */
function idRange(q: string): [string, string] | null {
  const hex = q.toLowerCase().replace(/-/g, '')
  if (!/^[0-9a-f]{4,32}$/.test(hex)) return null
  const pad = (c: string) => {
    const h = (hex + c.repeat(32)).slice(0, 32)
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
  return [pad('0'), pad('f')]
}

/** Every lookup is an index probe: the primary key's range, the external user id index, the token's unique index. */
export async function findTestDevices(db: Db, appId: string, q: string): Promise<TestDevice[]> {
  if (q === '') return []
  const out = new Map<string, TestDevice>()
  const range = idRange(q)
  if (range) {
    const r = await query<TestDevice>(
      db,
      `SELECT ${COLUMNS} FROM devices WHERE app_id = $1 AND id BETWEEN $2 AND $3 ORDER BY id LIMIT ${LIMIT}`,
      [appId, ...range],
    )
    for (const x of r.rows) out.set(x.id, x)
  }
  const r = await query<TestDevice>(
    db,
    `(SELECT ${COLUMNS} FROM devices WHERE app_id = $1 AND external_user_id = $2 ORDER BY last_active DESC LIMIT ${LIMIT})
     UNION ALL (SELECT ${COLUMNS} FROM devices WHERE app_id = $1 AND identifier = $2)`,
    [appId, q],
  )
  for (const x of r.rows) out.set(x.id, x)
  return [...out.values()].slice(0, LIMIT)
}

/** The one device a test goes to: a player id, or a text that names exactly one device. */
export async function resolveTestDevice(
  db: Db,
  appId: string,
  text: string,
): Promise<{ device: TestDevice } | { problem: string }> {
  if (text === '') return { problem: 'Escolha o dispositivo de teste: player id, external user id ou token.' }
  if (isUuid(text)) {
    const r = await query<TestDevice>(db, `SELECT ${COLUMNS} FROM devices WHERE app_id = $1 AND id = $2`, [
      appId,
      text.toLowerCase(),
    ])
    const one = r.rows[0]
    if (one) return { device: one }
  }
  const found = await findTestDevices(db, appId, text)
  if (found.length === 1) return { device: found[0] as TestDevice }
  if (found.length === 0) return { problem: `Nenhum dispositivo deste app corresponde a “${text}”.` }
  return { problem: `“${text}” corresponde a ${found.length} dispositivos; escolha um pelo player id.` }
}

export interface TestResult {
  /** pending, accepted, failed, errored */
  state: string
  text: string
  reason: string | null
}

/** What happened to the test: the delivery's final state and, when it failed, the provider's words. */
export async function testResult(db: Db, appId: string, sendId: string, deviceId: string): Promise<TestResult> {
  const r = await query<{ status: number; reason: string | null; transporte: string | null; problem: string | null }>(
    db,
    `SELECT d.status, d.reason, dv.transporte, s.problem
       FROM sends s
       LEFT JOIN deliveries d ON d.send_id = s.id AND d.device_id = $3 AND d.app_id = s.app_id
       LEFT JOIN devices dv ON dv.app_id = s.app_id AND dv.id = $3
      WHERE s.app_id = $1 AND s.id = $2`,
    [appId, sendId, deviceId],
  )
  const row = r.rows[0]
  const provider = row?.transporte === 'apns' ? 'APNs' : 'FCM'
  if (!row || row.status === null || row.status === 0) return { state: 'pending', text: 'Aguardando o provedor…', reason: null }
  if (row.status === 1) return { state: 'accepted', text: `${provider} aceitou a mensagem (successful).`, reason: null }
  const reason = row.reason ?? row.problem
  const category = failureCategory(row.status, reason)
  const words = reason?.includes(':') ? reason.slice(reason.indexOf(':') + 1) : reason
  return {
    state: row.status === 2 ? 'failed' : 'errored',
    text: `${provider} não entregou: ${FAILURE_LABELS[category]}${words ? ` — o provedor disse: ${words}` : ''}.`,
    reason,
  }
}
