import t from 'tap'
import { ApiError } from '../../src/core/errors'
import { parseReceipt } from '../../src/receipts/validate'

const ID = '0b0e5c4e-6f8e-4c57-9d2a-3c1e1f0a9b11'
const good = { app_id: ID, notification_id: ID.toUpperCase(), player_id: ID, rcpt: 'abc' }

t.test('a receipt: UUIDs lower-cased, evento defaults to recebido', async (t) => {
  t.same(parseReceipt(good), { appId: ID, sendId: ID, deviceId: ID, rcpt: 'abc', event: 'recebido' })
  t.equal(parseReceipt({ ...good, evento: 'clique' }).event, 'clique')
  t.equal(parseReceipt({ ...good, rcpt: 'é'.repeat(64) }).rcpt.length, 64, '64 characters, not bytes')
})

t.test('each malformed field is a 400 naming it', async (t) => {
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ ...good, app_id: undefined }, 'app_id'],
    [{ ...good, notification_id: 'x' }, 'notification_id'],
    [{ ...good, player_id: null }, 'player_id'],
    [{ ...good, rcpt: '' }, 'rcpt'],
    [{ ...good, rcpt: '😀'.repeat(65) }, 'rcpt'],
    [{ ...good, rcpt: ['a'] }, 'rcpt'],
    [{ ...good, evento: 'Clique' }, 'evento'],
  ]
  for (const [body, campo] of bad) {
    try {
      parseReceipt(body)
      t.fail(`${campo} accepted`)
    } catch (err) {
      t.ok(err instanceof ApiError && err.status === 400, campo)
      t.equal((err as ApiError<'INVALID_FIELD'>).params.campo, campo)
    }
  }
})
