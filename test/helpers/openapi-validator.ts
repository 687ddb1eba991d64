/**
 * Checks HTTP answers against the served OpenAPI document: the status is documented for the
 * operation (exactly, or by its `4XX` / `5XX` range), the content type is one the response lists,
 * a JSON body is valid against the response's schema (Ajv, JSON Schema 2020-12, the dialect of
 * OpenAPI 3.1, every format checked), and the `ETag` / `Location` / `RateLimit-*` headers are sent
 * exactly where the document says so.
 *
 * The whole document is added to Ajv once; each response schema is compiled from its place in
 * the document (`openapi.json#/paths/…` or `#/components/responses/…`), so `$ref`s resolve as
 * any OpenAPI tool resolves them.
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { ValidateFunction } from 'ajv'

type AddFormats = (ajv: Ajv2020) => Ajv2020
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats)

type Json = Record<string, unknown>
const DOC_ID = 'openapi.json'

/** JSON pointer escaping of one reference token. */
const token = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1')

export interface ResponseCheck {
  method: string
  /** the path template of the document: `/api/v1/contacts/{id}` */
  path: string
  status: number
  headers: Headers
  /** the parsed JSON body, or undefined when the answer is not JSON */
  body: unknown
}

export class OpenApiValidator {
  readonly ajv: Ajv2020
  private readonly validators = new Map<string, ValidateFunction>()

  constructor (readonly doc: Json) {
    this.ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true })
    addFormats(this.ajv)
    // OpenAPI's binary strings (the cover's bytes) are never JSON: nothing to check
    this.ajv.addFormat('binary', true)
    this.ajv.addSchema(doc, DOC_ID)
  }

  /** The operation object, or undefined when the document has none. */
  operation (method: string, path: string): Json | undefined {
    const item = (this.doc.paths as Record<string, Record<string, Json>>)[path]
    return item?.[method.toLowerCase()]
  }

  /** The documented response for a status: its pointer in the document and the resolved object. */
  response (method: string, path: string, status: number): { pointer: string, response: Json } | undefined {
    const responses = this.operation(method, path)?.responses as Record<string, Json> | undefined
    if (responses === undefined) return undefined
    const key = [String(status), `${String(status)[0] ?? ''}XX`, 'default'].find(k => responses[k] !== undefined)
    if (key === undefined) return undefined
    const found = responses[key] as Json
    if (typeof found.$ref === 'string') {
      const name = /^#\/components\/responses\/(.+)$/.exec(found.$ref)?.[1]
      const target =
        name === undefined ? undefined : (this.doc.components as Record<string, Record<string, Json>>).responses?.[name]
      if (name === undefined || target === undefined) throw new Error(`unresolvable response ${found.$ref}`)
      return { pointer: `/components/responses/${token(name)}`, response: target }
    }
    return { pointer: `/paths/${token(path)}/${method.toLowerCase()}/responses/${token(key)}`, response: found }
  }

  /** The compiled schema at a pointer of the document. */
  validator (pointer: string): ValidateFunction {
    let v = this.validators.get(pointer)
    if (v === undefined) {
      v = this.ajv.getSchema(`${DOC_ID}#${pointer}`)
      if (v === undefined) throw new Error(`no schema at ${pointer}`)
      this.validators.set(pointer, v)
    }
    return v
  }

  /** Problems with an answer; empty when it is what the document promises. */
  check (answer: ResponseCheck): string[] {
    const where = `${answer.method} ${answer.path} → ${answer.status}`
    const found = this.response(answer.method, answer.path, answer.status)
    if (found === undefined) return [`${where}: status not documented`]
    const issues: string[] = []
    const content = found.response.content as Record<string, unknown> | undefined
    const type = (answer.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? ''
    if (content === undefined || Object.keys(content).length === 0) {
      if (answer.body !== undefined) issues.push(`${where}: a body on a response documented without one`)
    } else if (content[type] === undefined) {
      issues.push(`${where}: content type ${type} not among ${Object.keys(content).join(', ')}`)
    } else if (type === 'application/json' || type.endsWith('+json')) {
      const validate = this.validator(`${found.pointer}/content/${token(type)}/schema`)
      if (!validate(answer.body)) {
        issues.push(`${where}: body does not match the document: ${this.ajv.errorsText(validate.errors)}`)
      }
    }
    // response headers: every documented one is sent, and ETag / Location only where documented
    const documented = Object.keys(found.response.headers as Json | undefined ?? {}).map(h => h.toLowerCase())
    if (answer.status < 400) {
      for (const h of documented) if (!answer.headers.has(h)) issues.push(`${where}: documented header ${h} not sent`)
    }
    for (const h of ['etag', 'location']) {
      if (answer.headers.has(h) && !documented.includes(h)) issues.push(`${where}: header ${h} sent but not documented`)
    }
    return issues
  }
}
