// The people of the dashboard, through the real routes and commands: scrypt's cost and the rehash of older hashes
// on sign-in, removing a person and ending sessions (on every instance), invitations listed and cancelled, the idle
// timeout, and sign-in limits that slow a guesser without letting anyone lock a person out.
import { scryptSync } from 'node:crypto'
import t from 'tap'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { startService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'

/** A hash as the previous release stored it: scrypt N=2^14, r=8, p=1. */
function legacyHash(password: string): string {
  const salt = Buffer.from('fedcba9876543210')
  const key = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 })
  return `scrypt$16384$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`
}

t.test('scrypt at N=2^17; a hash of N=2^14 still signs in and is replaced on that sign-in', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'] })
  const org = await makeOrg(s, 'Org')
  const id = await makePerson(s, 'ana@example.com', SENHA, org)
  const [fresh] = await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id])
  t.match(fresh?.password_hash, /^scrypt\$131072\$8\$1\$/, 'new hashes: N=2^17')

  const old = legacyHash(SENHA)
  await s.sql('UPDATE dashboard_users SET password_hash = $2 WHERE id = $1', [id, old])
  const wrong = await new DashClient(s.dashboardUrl).signIn('ana@example.com', 'outra-senha-longa')
  t.equal(wrong.status, 401)
  t.equal(
    (await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id]))[0]?.password_hash,
    old,
    'a failure changes nothing',
  )
  const c = new DashClient(s.dashboardUrl)
  t.equal((await c.signIn('ana@example.com', SENHA)).status, 303, 'the old hash verifies')
  const [after] = await s.sql('SELECT password_hash FROM dashboard_users WHERE id = $1', [id])
  t.match(after?.password_hash, /^scrypt\$131072\$8\$1\$/, 'upgraded on the successful sign-in')
  t.equal((await new DashClient(s.dashboardUrl).signIn('ana@example.com', SENHA)).status, 303, 'and the new one verifies')
})
