// GET /api/v1/openapi.json: the API's description (docs/openapi.yaml, the one hand-written source), parsed once per
// process (the first service that starts; it ships with the release and never changes under it) and served as JSON.
// The integration tests validate the service's real answers against the same document.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { ROOT } from '../core/root'
import { constantJson, type Reply } from './reply'

export const OPENAPI_PATH = join(ROOT, 'docs', 'openapi.yaml')

export function loadOpenApi(): Record<string, unknown> {
  return parse(readFileSync(OPENAPI_PATH, 'utf8'))
}

let served: Reply | undefined

export function openApiReply(): Reply {
  served ??= constantJson(loadOpenApi())
  return served
}
