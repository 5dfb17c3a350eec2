// Sign-in limits through the real route, with sources named by X-Forwarded-For behind a trusted proxy: per IPv4
// address or IPv6 /64, growing delays per account that say how long to wait (the same for an unknown e-mail), and
// no way for others' failures to keep a person out: a known browser is never held back, and another network waits
// a bounded time. Counted in Redis: two instances share the counts.
import t from 'tap'
import { DashClient, makeOrg, makePerson } from '../helpers/dashboard'
import { FakeClock, startService, type TestService } from '../helpers/service'

const SENHA = 'uma-senha-bem-longa'
const WRONG = 'senha-errada-123'

// scrypt at N=2^17 for each judged attempt, on a busy machine.
t.setTimeout(600_000)

/** A browser at `ip` (the proxy at 127.0.0.1 says so in X-Forwarded-For). */
function from(s: TestService, ip: string): DashClient {
  const c = new DashClient(s.dashboardUrl)
  c.headers['x-forwarded-for'] = ip
  return c
}

const PROXY = { PM_TRUST_PROXY: '127.0.0.1,::1,::ffff:127.0.0.1' }

t.test('per network: an IPv6 /64 counts as one source, an IPv4-mapped address as its IPv4', async (t) => {
  const s = await startService(t, { roles: ['api', 'dashboard'], env: { ...PROXY, PM_DASHBOARD_SIGNIN_PER_IP: '4' } })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  // Four addresses of one /64, each trying a different account: one host choosing among its 2^64 addresses.
  for (let i = 1; i <= 4; i++) {
    t.equal((await from(s, `2001:db8:1:2::${i}`).signIn(`x${i}@example.com`, WRONG)).status, 401, `address ${i}`)
  }
  const fifth = await from(s, '2001:db8:1:2:ffff:ffff:ffff:fffe').signIn('ana@example.com', SENHA)
  t.equal(fifth.status, 429, 'a fifth address of the same /64 is the same source')
  t.match(fifth.text, /Muitas tentativas de entrar a partir deste endereço/)
  t.ok(Number(fifth.headers.get('retry-after')) > 0, 'Retry-After says when')
  t.equal((await from(s, '2001:db8:1:3::1').signIn('ana@example.com', SENHA)).status, 303, 'the next /64 is another source')

  for (let i = 0; i < 4; i++) t.equal((await from(s, '198.51.100.7').signIn(`y${i}@example.com`, WRONG)).status, 401)
  t.equal((await from(s, '::ffff:198.51.100.7').signIn('ana@example.com', SENHA)).status, 429, 'IPv4-mapped: the IPv4')
  t.equal((await from(s, '198.51.100.8').signIn('ana@example.com', SENHA)).status, 303, 'IPv4: per address')
})

t.test('per account: delays that grow and say how long, the same for an unknown e-mail, shared by instances', async (t) => {
  const clock = new FakeClock()
  const env = { ...PROXY, PM_DASHBOARD_SIGNIN_PER_ACCOUNT: '3', PM_DASHBOARD_SIGNIN_PER_IP: '0' }
  const a = await startService(t, { roles: ['api', 'dashboard'], clock, env })
  const b = await startService(t, { roles: ['dashboard'], clock, env, shareWith: a })
  const org = await makeOrg(a, 'Org')
  await makePerson(a, 'ana@example.com', SENHA, org)

  /** What one attacker at 203.0.113.5 sees, trying `email` on alternate instances. */
  async function attack(email: string): Promise<Array<string>> {
    const seen: string[] = []
    const at = (i: number): DashClient => from(i % 2 === 0 ? a : b, '203.0.113.5')
    let i = 0
    const step = async (): Promise<void> => {
      const r = await at(i++).signIn(email, WRONG)
      seen.push(r.status === 429 ? `429 ${/Tente de novo em ([^.<]+)/.exec(r.text)?.[1]}` : String(r.status))
    }
    for (let k = 0; k < 3; k++) await step() // the free failures
    for (const waitS of [1, 2, 4, 8]) {
      await step() // too early: told how long
      clock.advance(waitS * 1000 - 1)
      await step() // still too early by a millisecond
      clock.advance(1)
      await step() // judged (and wrong)
    }
    return seen
  }
  const known = await attack('ana@example.com')
  t.same(known, [
    '401',
    '401',
    '401',
    '429 1 s',
    '429 1 s',
    '401',
    '429 2 s',
    '429 1 s',
    '401',
    '429 4 s',
    '429 1 s',
    '401',
    '429 8 s',
    '429 1 s',
    '401',
  ])
  t.same(await attack('ninguem@example.com'), known, 'an e-mail nobody has answers exactly the same')
})

t.test("others' failures cannot keep a person out: a known browser goes in, another network waits a bounded time", async (t) => {
  const clock = new FakeClock()
  const s = await startService(t, {
    roles: ['api', 'dashboard'],
    clock,
    env: { ...PROXY, PM_DASHBOARD_SIGNIN_PER_ACCOUNT: '3', PM_DASHBOARD_SIGNIN_ACCOUNT_WAIT_S: '30' },
  })
  const org = await makeOrg(s, 'Org')
  await makePerson(s, 'ana@example.com', SENHA, org)
  // Ana signed in from her laptop before: it holds the known-browser cookie.
  const laptop = from(s, '192.0.2.10')
  const first = await laptop.signIn('ana@example.com', SENHA)
  t.equal(first.status, 303)
  const known = first.headers.getSetCookie().find((c) => c.startsWith('pm_conhecido='))
  t.match(known, /HttpOnly/)
  t.match(known, /SameSite=Strict/)
  await laptop.post('/sair', { _csrf: DashClient.token(await laptop.get('/apps')) })

  // Attackers on six networks keep failing on her account, each as often as its turn comes.
  const attackers = [1, 2, 3, 4, 5, 6].map((i) => `2001:db8:${i}::1`)
  let k = 0
  let judged = 0
  const attackRound = async (): Promise<void> => {
    for (const net of attackers) {
      if ((await from(s, net).signIn('ana@example.com', `${WRONG}-${k++}`)).status === 401) judged++
    }
  }
  for (let r = 0; r < 3; r++) {
    await attackRound()
    clock.advance(31_000)
  }
  t.ok(judged >= 12, `the attack is on (${judged} wrong passwords judged)`)

  // Her laptop: straight in, with the attack going on (and from a network the attackers also use).
  laptop.headers['x-forwarded-for'] = '2001:db8:1::77'
  t.equal((await laptop.signIn('ana@example.com', SENHA)).status, 303, 'a known browser is never held back by others')

  // Her phone, on a network of its own and without the cookie: told to wait, at most the account's bound.
  const phone = from(s, '198.51.100.77')
  const wait = await phone.signIn('ana@example.com', SENHA)
  t.equal(wait.status, 429)
  const waitS = Number(wait.headers.get('retry-after'))
  t.ok(waitS > 0 && waitS <= 30, `waits at most PM_DASHBOARD_SIGNIN_ACCOUNT_WAIT_S (${waitS} s)`)
  t.match(wait.text, new RegExp(`Tente de novo em ${waitS} s`))
  t.ok(waitS >= 16, `the account is under attack: the bound is reached (${waitS} s)`)
  // The attack goes on meanwhile; her turn is not pushed back by it.
  const before = judged
  for (let r = 0; r < 3; r++) {
    clock.advance(Math.floor((waitS * 1000) / 4))
    await attackRound()
    const early = await phone.signIn('ana@example.com', SENHA)
    t.equal(early.status, 429, 'before her turn: still waiting')
    t.ok(Number(early.headers.get('retry-after')) <= waitS, 'and never longer than first said')
  }
  t.ok(judged > before, `attackers' turns came and failed meanwhile (${judged - before})`)
  clock.advance(waitS * 1000)
  const inside = await phone.signIn('ana@example.com', SENHA)
  t.equal(inside.status, 303, 'her turn came: the right password signs her in')
  t.equal((await phone.get('/apps')).status, 200)
  // The phone is known now too.
  await attackRound()
  await phone.post('/sair', { _csrf: DashClient.token(await phone.get('/apps')) })
  t.equal((await phone.signIn('ana@example.com', SENHA)).status, 303, 'and from now on it is a known browser')

  // A known-browser cookie of another account, or a forged one, is just a stranger.
  const forged = from(s, '198.51.100.99')
  forged.jar.set('pm_conhecido', `${'A'.repeat(22)}.${'B'.repeat(43)}`)
  t.equal((await forged.signIn('ana@example.com', SENHA)).status, 429, 'a forged cookie waits like anyone')
})
