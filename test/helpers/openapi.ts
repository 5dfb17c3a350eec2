// Checks the service's real answers against docs/openapi.yaml: the operation is found by method and path, the
// status must be documented for it, every required header present (with its const/enum value), and the JSON body
// valid against the documented schema (JSON Schema 2020-12, as OpenAPI 3.1 uses, by ajv).
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import type { ValidateFunction } from 'ajv'
import { loadOpenApi } from '../../src/http/openapi'
import type { Answer } from './service'

type Obj = Record<string, unknown>

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

const pointerPart = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')

export interface Operation {
  /** `GET /api/v1/players/{player_id}` */
  key: string
  method: string
  template: string
  responses: Obj
  /** JSON pointer of the operation inside the document. */
  pointer: string
}

export class OpenApiChecker {
  readonly doc: Obj
  readonly operations: Operation[] = []
  /** Operation key → statuses seen valid. */
  readonly seen = new Map<string, Set<number>>()
  readonly #ajv: Ajv2020
  readonly #compiled = new Map<string, ValidateFunction>()
  readonly #matchers: Array<{ re: RegExp; op: Operation; params: number }> = []

  constructor(doc: Obj = loadOpenApi()) {
    this.doc = doc
    this.#ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats(this.#ajv)
    this.#ajv.addSchema({ ...doc, $id: 'openapi.json' })
    for (const [template, item] of Object.entries(doc.paths as Record<string, Obj>)) {
      for (const method of METHODS) {
        const op = item[method] as Obj | undefined
        if (!op) continue
        const o: Operation = {
          key: `${method.toUpperCase()} ${template}`,
          method: method.toUpperCase(),
          template,
          responses: op.responses as Obj,
          pointer: `#/paths/${pointerPart(template)}/${method}`,
        }
        this.operations.push(o)
        const re = new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`)
        this.#matchers.push({ re, op: o, params: (template.match(/\{/g) ?? []).length })
      }
    }
    // A static segment wins over a parameter, as in the router (/notifications/stats before /notifications/{id}).
    this.#matchers.sort((a, b) => a.params - b.params)
  }

  /** The documented operation for a request, or undefined. */
  operation(method: string, path: string): Operation | undefined {
    const p = path.split('?')[0] as string
    return this.#matchers.find((m) => m.op.method === method.toUpperCase() && m.re.test(p))?.op
  }

  /** Problems of one answer against the document; empty when it conforms. A conforming answer is recorded. */
  problems(method: string, path: string, a: Answer): string[] {
    const op = this.operation(method, path)
    if (!op) return [`${method} ${path}: no such operation in docs/openapi.yaml`]
    const code = String(a.status)
    let response = op.responses[code] as Obj | undefined
    let pointer = `${op.pointer}/responses/${code}`
    if (!response) return [`${op.key}: status ${code} is not documented (documented: ${Object.keys(op.responses).join(', ')})`]
    if (typeof response.$ref === 'string') {
      pointer = response.$ref
      response = this.#resolve(response.$ref)
    }
    const out: string[] = []
    for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, Obj>)) {
      const header = (typeof h.$ref === 'string' ? this.#resolve(h.$ref) : h) as Obj
      const value = a.headers.get(name)
      if (header.required && value === null) out.push(`${op.key} ${code}: header ${name} missing`)
      const schema = (header.schema ?? {}) as Obj
      if (value !== null && schema.const !== undefined && value !== schema.const)
        out.push(`${op.key} ${code}: header ${name} is "${value}", documented ${String(schema.const)}`)
      if (value !== null && Array.isArray(schema.enum) && !schema.enum.includes(value))
        out.push(`${op.key} ${code}: header ${name} is "${value}", documented one of ${schema.enum.join(', ')}`)
    }
    const content = response.content as Obj | undefined
    if (content?.['application/json']) {
      const ct = a.headers.get('content-type') ?? ''
      if (!ct.startsWith('application/json')) out.push(`${op.key} ${code}: content-type "${ct}", documented application/json`)
      const validate = this.#validator(`${pointer}/content/application~1json/schema`)
      if (a.json === undefined) out.push(`${op.key} ${code}: body is not JSON: ${a.text.slice(0, 200)}`)
      else if (!validate(a.json)) {
        for (const e of validate.errors ?? [])
          out.push(`${op.key} ${code}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`)
      }
    } else if (content) {
      const type = Object.keys(content)[0] as string
      const ct = a.headers.get('content-type') ?? ''
      if (!ct.startsWith(type)) out.push(`${op.key} ${code}: content-type "${ct}", documented ${type}`)
    } else if (a.text !== '') out.push(`${op.key} ${code}: documented without a body, answered ${a.text.slice(0, 100)}`)
    if (out.length === 0) {
      const s = this.seen.get(op.key) ?? new Set<number>()
      s.add(a.status)
      this.seen.set(op.key, s)
    }
    return out
  }

  #resolve(ref: string): Obj {
    let at: unknown = this.doc
    for (const part of ref.replace(/^#\//, '').split('/')) at = (at as Obj)[part.replace(/~1/g, '/').replace(/~0/g, '~')]
    if (!at || typeof at !== 'object') throw new Error(`openapi: unresolvable ${ref}`)
    return at as Obj
  }

  #validator(pointer: string): ValidateFunction {
    let v = this.#compiled.get(pointer)
    if (!v) {
      v = this.#ajv.compile({ $ref: `openapi.json${pointer}` })
      this.#compiled.set(pointer, v)
    }
    return v
  }
}
