// The version the SDK reports (`sdk_versao`, the in-app `schema`) is the package's version, and it is one the
// service serves every campaign kind to (0.6+: evento, sessao_duracao, inatividade, scheduled starts).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SDK_VERSION } from '@pombo/sdk'
import t from 'tap'
import { parseSchema } from '../../src/inapp/validate'

t.test('SDK_VERSION is the package version and reaches the highest capability level', async (t) => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'packages', 'sdk', 'package.json'), 'utf8'))
  t.equal(SDK_VERSION, pkg.version)
  t.ok((parseSchema(SDK_VERSION) ?? 0) >= 6, 'the service reads it as 0.6 or later')
})
