// docs/openapi.yaml is a valid OpenAPI 3.1 document (linted by a real validator), every schema in it compiles, and
// it describes every route of the pinned spec. That the service answers as it says is checked by
// test/integration/openapi-conformance.test.ts.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { loadOpenApi } from '../../src/http/openapi'
import { VERSION } from '../../src/core/version'
import { OpenApiChecker } from '../helpers/openapi'

const ROOT = join(__dirname, '..', '..')

t.test('the document is valid OpenAPI 3.1', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator')
  const validator = new Validator()
  const doc = loadOpenApi()
  const res = await validator.validate(doc)
  t.equal(validator.version, '3.1', 'OpenAPI 3.1')
  t.ok(res.valid, JSON.stringify(res.errors, null, 2)?.slice(0, 4000) ?? 'valid')
  t.equal((doc.info as { version: string }).version, VERSION, 'info.version is the package version')
})

t.test('every response schema compiles, and every $ref resolves', async (t) => {
  const checker = new OpenApiChecker()
  let n = 0
  for (const op of checker.operations) {
    for (const status of Object.keys(op.responses)) {
      // A fake answer per documented status: the checker compiles the schema and resolves refs on the way; its
      // verdict on the fake body does not matter here, only that it can give one.
      const a = { status: Number(status), headers: new Headers(), text: '{}', json: {} }
      t.doesNotThrow(() => checker.problems(op.method, op.template, a), `${op.key} ${status}`)
      n++
    }
  }
  t.ok(n > 100, `${n} responses`)
})

t.test('every route of the spec is described', async (t) => {
  const spec = readFileSync(join(ROOT, 'docs', 'spec', 'push-delivery-spec.md'), 'utf8')
  const checker = new OpenApiChecker()
  const routes = [...spec.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|/gm)].map((m) => ({
    method: m[1] as string,
    path: (m[2] as string).replace(/^\.\.\./, '/api/v1/in_app_messages').split('?')[0] as string,
  }))
  t.ok(routes.length >= 25, `${routes.length} routes in the spec's endpoint tables`)
  for (const r of routes) {
    if (r.path === '<csv_file_url>') {
      t.ok(checker.operation('GET', `/api/v1/exports/${'a'.repeat(64)}.csv.gz`), 'the export file')
      continue
    }
    const concrete = r.path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
    t.ok(checker.operation(r.method, concrete), `${r.method} ${r.path}`)
  }
  // The two device routes the spec names in prose rather than in a table.
  t.ok(checker.operation('GET', '/api/v1/inapp/pending'))
  t.ok(checker.operation('POST', '/api/v1/inapp/eventos'))
})
