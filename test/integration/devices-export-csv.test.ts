// The device export's CSV is standard (RFC 4180) escaping and nothing else (the spec, Export; docs/design/devices.md):
// read back with an RFC 4180 parser, every external_user_id equals the stored value, formula-looking ones included,
// and a field is quoted exactly when it holds a comma, a quote, CR or LF.
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { basic, startService, type TestService } from '../helpers/service'

interface Field {
  value: string
  quoted: boolean
}

/**
 * RFC 4180, strictly: records end with CRLF or LF outside quotes; a quoted field may hold commas, CR, LF and doubled
 * quotes; a quote anywhere else, or text after a closing quote, is an error (so a sloppy writer fails the test).
 */
function parseRfc4180(text: string): Field[][] {
  const records: Field[][] = []
  let record: Field[] = []
  let i = 0
  const endOfField = (): boolean => i >= text.length || text[i] === ',' || text[i] === '\n' || text.startsWith('\r\n', i)
  while (i < text.length) {
    let value = ''
    let quoted = false
    if (text[i] === '"') {
      quoted = true
      i++
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field')
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            value += '"'
            i += 2
            continue
          }
          i++
          break
        }
        value += text[i]
        i++
      }
      if (!endOfField()) throw new Error(`text after a closing quote at ${i}`)
    } else {
      while (!endOfField()) {
        const c = text[i] as string
        if (c === '"' || c === '\r') throw new Error(`bare ${JSON.stringify(c)} in an unquoted field at ${i}`)
        value += c
        i++
      }
    }
    record.push({ value, quoted })
    if (text[i] === ',') {
      i++
      continue
    }
    i += text[i] === '\r' ? 2 : 1 // CRLF or LF, or past the end
    records.push(record)
    record = []
  }
  return records
}

t.test('the RFC 4180 parser of this test', async (t) => {
  t.same(parseRfc4180('a,"b,c"\r\n"d""e","f\ng"\n,\n'), [
    [
      { value: 'a', quoted: false },
      { value: 'b,c', quoted: true },
    ],
    [
      { value: 'd"e', quoted: true },
      { value: 'f\ng', quoted: true },
    ],
    [
      { value: '', quoted: false },
      { value: '', quoted: false },
    ],
  ])
  t.throws(() => parseRfc4180('a"b\n'))
  t.throws(() => parseRfc4180('"ab"c\n'))
  t.throws(() => parseRfc4180('"ab\n'))
})

async function exported(s: TestService, app: { id: string; api_key: string }): Promise<string> {
  const r = await s.call('POST', `/api/v1/players/csv_export?app_id=${app.id}`, { headers: basic(app.api_key) })
  if (r.status !== 200) throw new Error(`export: ${r.status} ${r.text}`)
  const path = new URL(r.json.csv_file_url).pathname
  for (let i = 0; i < 400; i++) {
    const res = await fetch(s.url + path)
    if (res.status === 200) return gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8')
    if (res.status !== 404) throw new Error(`export file: ${res.status}`)
    await new Promise((done) => setTimeout(done, 25))
  }
  throw new Error('export never became ready')
}

t.test('every external_user_id comes back exactly as stored, quoted only when it must be', async (t) => {
  const s = await startService(t)
  const app = await s.createApp()
  const values = [
    'maria',
    'a,b',
    'diz "oi"',
    '"',
    'linha1\nlinha2',
    'cr\r\nlf',
    'só\rcr',
    '=1+1',
    '=HYPERLINK("http://x","y")',
    '+5511987654321',
    '-2+3',
    '@SUM(A1)',
    '\tcomeça com tab',
    ' espaços nas pontas ',
    'normal=ok',
    'ação, "coração"\n',
    '日本語 😀 עברית',
    '\\.',
    "'já com apóstrofo",
  ]
  const sent = new Map<string, string | null>()
  for (const [i, v] of values.entries()) {
    const r = await s.call('POST', '/api/v1/players', {
      body: { app_id: app.id, device_type: 1, identifier: `csv-${i}`, external_user_id: v },
    })
    t.equal(r.status, 200, `registered ${JSON.stringify(v)}`)
    sent.set(r.json.id, v)
  }
  const anonymous = await s.call('POST', '/api/v1/players', {
    body: { app_id: app.id, device_type: 1, identifier: 'csv-nobody' },
  })
  sent.set(anonymous.json.id, null)

  const stored = new Map(
    (
      await s.sql<{ id: string; external_user_id: string | null }>('SELECT id, external_user_id FROM devices WHERE app_id = $1', [
        app.id,
      ])
    ).map((r) => [r.id, r.external_user_id]),
  )
  for (const [id, v] of sent) t.equal(stored.get(id), v, `stored as sent: ${JSON.stringify(v)}`)

  const records = parseRfc4180(await exported(s, app))
  t.same(
    records[0]?.map((f) => f.value),
    ['id', 'external_user_id', 'notification_types', 'invalid_identifier', 'last_active'],
  )
  const rows = records.slice(1)
  t.equal(rows.length, sent.size, 'one record per device: line breaks inside values split nothing')
  for (const row of rows) {
    t.equal(row.length, 5, 'five fields')
    const id = row[0]?.value as string
    t.ok(stored.has(id), `a device of this app: ${id}`)
    const want = stored.get(id) ?? ''
    const field = row[1] as Field
    t.equal(field.value, want, `exactly as stored: ${JSON.stringify(want)}`)
    t.equal(field.quoted, /[,"\r\n]/.test(want), `quoted only when it holds a comma, quote, CR or LF: ${JSON.stringify(want)}`)
  }
})
