// Form bodies of the dashboard: application/x-www-form-urlencoded and multipart/form-data (credential files).
// The body is already capped by the route; a field or file repeated keeps its first value; text must be UTF-8.
import { isUtf8 } from 'node:buffer'

export class FormError extends Error {
  override name = 'FormError'
}

export interface FormFile {
  filename: string
  data: Buffer
}

export class Form {
  constructor(
    readonly fields: ReadonlyMap<string, string>,
    readonly files: ReadonlyMap<string, FormFile> = new Map(),
  ) {}

  text(name: string): string {
    return this.fields.get(name) ?? ''
  }

  /** A chosen file, or null when the input was left empty. */
  file(name: string): FormFile | null {
    const f = this.files.get(name)
    return f && f.data.length > 0 ? f : null
  }
}

function utf8(b: Buffer, what: string): string {
  if (!isUtf8(b)) throw new FormError(`${what}: texto que não é UTF-8.`)
  return b.toString('utf8')
}

export function parseForm(contentType: string | undefined, body: Buffer): Form {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase()
  if (type === 'application/x-www-form-urlencoded') {
    const fields = new Map<string, string>()
    for (const [k, v] of new URLSearchParams(utf8(body, 'formulário'))) if (!fields.has(k)) fields.set(k, v)
    return new Form(fields)
  }
  if (type === 'multipart/form-data') {
    const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '')
    const boundary = m?.[1] ?? m?.[2]
    if (!boundary || boundary.length > 70) throw new FormError('Formulário sem boundary válido.')
    return parseMultipart(body, boundary)
  }
  throw new FormError('Tipo de formulário não aceito.')
}

/** RFC 7578: parts separated by `--boundary`, each with headers, a blank line, then its bytes. */
function parseMultipart(body: Buffer, boundary: string): Form {
  const fields = new Map<string, string>()
  const files = new Map<string, FormFile>()
  const delim = Buffer.from(`--${boundary}`)
  let pos = body.indexOf(delim)
  if (pos < 0) throw new FormError('Formulário multipart malformado.')
  for (;;) {
    pos += delim.length
    if (body.subarray(pos, pos + 2).toString() === '--') break
    if (body.subarray(pos, pos + 2).toString() !== '\r\n') throw new FormError('Formulário multipart malformado.')
    pos += 2
    const headEnd = body.indexOf('\r\n\r\n', pos)
    if (headEnd < 0) throw new FormError('Formulário multipart malformado.')
    const head = utf8(body.subarray(pos, headEnd), 'cabeçalho')
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headEnd + 4)
    if (next < 0) throw new FormError('Formulário multipart malformado.')
    const data = body.subarray(headEnd + 4, next)
    const disp = /^content-disposition:\s*form-data;(.*)$/im.exec(head)?.[1] ?? ''
    const name = /\bname="([^"]*)"/i.exec(disp)?.[1]
    const filename = /\bfilename="([^"]*)"/i.exec(disp)?.[1]
    if (name !== undefined) {
      if (filename !== undefined) {
        if (!files.has(name)) files.set(name, { filename, data: Buffer.from(data) })
      } else if (!fields.has(name)) {
        fields.set(name, utf8(data, name))
      }
    }
    pos = next + 2
  }
  return new Form(fields, files)
}
