// The dashboard's small parts: HTML escaping of every interpolated value, form bodies (urlencoded and multipart,
// hostile ones included), passwords (scrypt, length), cookies, and the connection test's explanations.
import t from 'tap'
import { explainReason } from '../../src/credentials/connection-test'
import { parseForm } from '../../src/dashboard/form'
import { esc, html, jsonData, raw } from '../../src/dashboard/html'
import { cookies } from '../../src/dashboard/session'
import { scryptSync } from 'node:crypto'
import {
  HASH_CONCURRENCY,
  HASH_QUEUE,
  hashingLoad,
  hashPassword,
  needsRehash,
  PasswordBusyError,
  passwordProblem,
  verifyPassword,
} from '../../src/people/password'
import { parseEmail } from '../../src/people/service'

t.test('html escapes every value; only html and raw pass through', async (t) => {
  const evil = `<script>alert("x")</script>'&\``
  t.equal(esc(evil), '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;&#96;')
  t.equal(html`<p title="${evil}">${evil}</p>`.text, `<p title="${esc(evil)}">${esc(evil)}</p>`)
  t.equal(html`<ul>${['<a>', html`<li>${'<b>'}</li>`]}</ul>`.text, '<ul>&lt;a&gt;<li>&lt;b&gt;</li></ul>')
  t.equal(html`${null}${undefined}${false}${0}`.text, '0')
  t.equal(html`${raw('<br>')}`.text, '<br>')
  t.equal(jsonData({ a: '</script><script>x' }).text, '{"a":"\\u003c/script>\\u003cscript>x"}')
})

t.test('forms: urlencoded and multipart; malformed or non-UTF-8 bodies refused', async (t) => {
  const f = parseForm('application/x-www-form-urlencoded', Buffer.from('a=1&b=%C3%A9&a=2'))
  t.equal(f.text('a'), '1', 'first value wins')
  t.equal(f.text('b'), 'é')
  t.equal(f.text('nada'), '')
  t.throws(() => parseForm('application/x-www-form-urlencoded', Buffer.from([0x61, 0x3d, 0xff])), { name: 'FormError' })
  t.throws(() => parseForm('application/json', Buffer.from('{}')), { name: 'FormError' })
  t.throws(() => parseForm(undefined, Buffer.from('a=1')), { name: 'FormError' })

  const b = 'XyZ123'
  const body = Buffer.concat([
    Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\ntok\r\n`),
    Buffer.from(
      `--${b}\r\nContent-Disposition: form-data; name="conta"; filename="c.json"\r\nContent-Type: application/json\r\n\r\n`,
    ),
    Buffer.from([0x7b, 0x0d, 0x0a, 0xff, 0x7d]),
    Buffer.from(`\r\n--${b}\r\nContent-Disposition: form-data; name="vazio"; filename=""\r\n\r\n\r\n--${b}--\r\n`),
  ])
  const m = parseForm(`multipart/form-data; boundary=${b}`, body)
  t.equal(m.text('_csrf'), 'tok')
  t.same(m.file('conta')?.data, Buffer.from([0x7b, 0x0d, 0x0a, 0xff, 0x7d]), 'file bytes exactly, CRLF inside kept')
  t.equal(m.file('conta')?.filename, 'c.json')
  t.equal(m.file('vazio'), null, 'an empty file input is no file')
  for (const bad of [
    'sem boundary',
    `--${b}\r\nContent-Disposition: form-data; name="x"\r\n\r\nnever closed`,
    `--${b}\r\nno blank line`,
    `--${b}garbage`,
  ]) {
    t.throws(() => parseForm(`multipart/form-data; boundary=${b}`, Buffer.from(bad)), { name: 'FormError' }, bad)
  }
  t.throws(() => parseForm('multipart/form-data', Buffer.from('')), { name: 'FormError' }, 'no boundary')
})

t.test('passwords: scrypt, at least 12 characters, constant-time check', async (t) => {
  t.match(passwordProblem('curta-11chr'), /12 caracteres/)
  t.equal(passwordProblem('exatamente12'), null)
  t.equal(passwordProblem('🐦'.repeat(12)), null, 'characters, not bytes')
  t.match(passwordProblem('x'.repeat(1025)), /no máximo/)
  const h = await hashPassword('uma-senha-bem-longa')
  t.match(h, /^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/, 'N=2^17 (128 MiB: maxmem is set)')
  t.notOk(needsRehash(h))
  t.not(await hashPassword('uma-senha-bem-longa'), h, 'salted')
  t.ok(await verifyPassword('uma-senha-bem-longa', h))
  t.notOk(await verifyPassword('uma-senha-bem-longA', h))
  t.notOk(await verifyPassword('uma-senha-bem-longa', 'bcrypt$whatever'))
  t.notOk(await verifyPassword('\ud800', h), 'malformed text is never a match')
  // A hash of the previous release (N=2^14) still verifies under its own parameters, and asks to be replaced.
  const old = legacyHash('uma-senha-bem-longa')
  t.ok(await verifyPassword('uma-senha-bem-longa', old))
  t.notOk(await verifyPassword('outra-senha-longa', old))
  t.ok(needsRehash(old))
  // Parameters out of bounds are refused, never run: a stored row cannot make one check cost gigabytes.
  const [, , r, p, salt, key] = old.split('$')
  for (const N of ['2097152', '1000', '0', '1e9', '-16384']) {
    t.notOk(await verifyPassword('uma-senha-bem-longa', ['scrypt', N, r, p, salt, key].join('$')), N)
  }
  t.notOk(await verifyPassword('uma-senha-bem-longa', ['scrypt', '16384', '8', '1', salt, 'AAAA'].join('$')))
})

/** A hash as the previous release stored it: scrypt N=2^14, r=8, p=1. */
function legacyHash(password: string): string {
  const salt = Buffer.from('0123456789abcdef')
  const key = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 })
  return `scrypt$16384$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`
}

t.test('password hashing: a bounded number at once, a bounded queue, refusal past it', async (t) => {
  const h = legacyHash('uma-senha-bem-longa')
  const n = HASH_CONCURRENCY + HASH_QUEUE + 3
  const out = await Promise.allSettled(Array.from({ length: n }, () => verifyPassword('uma-senha-bem-longa', h)))
  const busy = out.filter((o) => o.status === 'rejected')
  t.ok(busy.length >= 3, `past the queue: refused (${busy.length})`)
  for (const b of busy) t.type((b as PromiseRejectedResult).reason, PasswordBusyError)
  t.ok(
    out.every((o) => o.status === 'rejected' || o.value === true),
    'the others verified',
  )
  t.ok(hashingLoad().peak <= HASH_CONCURRENCY, `never more than ${HASH_CONCURRENCY} at once (peak ${hashingLoad().peak})`)
  t.same([hashingLoad().running, hashingLoad().waiting], [0, 0], 'nothing left behind')
})

t.test('e-mails, cookies, provider reasons in words', async (t) => {
  t.equal(parseEmail('  Ana@Example.COM '), 'ana@example.com')
  for (const bad of ['', 'ana', 'ana@', '@x.com', 'a b@x.com', 'a@x', '<a>@x.com', 42])
    t.throws(() => parseEmail(bad), { name: 'PeopleError' }, String(bad))
  t.same(
    [...cookies('a=1; b=2=3; a=4; ;c')],
    [
      ['a', '1'],
      ['b', '2=3'],
    ],
  )
  t.match(explainReason('BadEnvironmentKeyIdInToken'), /^BadEnvironmentKeyIdInToken — a chave não vale no ambiente/)
  t.match(explainReason('oauth invalid_grant: Invalid grant: account not found'), /o Google recusou a conta de serviço/)
  t.equal(explainReason('SomethingNew'), 'SomethingNew', 'unknown reasons are shown as the provider gave them')
})
