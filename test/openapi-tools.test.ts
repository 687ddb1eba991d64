/**
 * The served OpenAPI document as strict tools read it (docs/api-conventions.md, "OpenAPI document" and "Query
 * parameters"): every schema compiles in Ajv's default strict mode, boolean query flags are booleans in the document
 * and take `true`/`false`/`1`/`0` on the wire, unions of literals are one enum, every operation has a description,
 * and the bodies of actions (publish, check-in) may be left out, with or without a Content-Type.
 *
 * Spectral and Redocly run on the exported document in CI (`npm run openapi:spectral`, `npm run openapi:lint`).
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { databases, newTenant, useTestApp } from './helpers/build-app.ts'
import { expectStatus } from './helpers/requests.ts'
import { createEvent } from '../src/modules/events/events.fixtures.ts'

type Json = Record<string, any>
type AddFormats = (ajv: Ajv2020) => Ajv2020
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats)

function operations (doc: Json): Array<{ where: string, op: Json }> {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Json>).map(([method, op]) => ({ where: `${method} ${path}`, op })))
}

/** Every schema of the document: the components, then each operation's parameters, bodies and responses. */
function inlineSchemas (doc: Json): Array<{ where: string, schema: Json }> {
  const out: Array<{ where: string, schema: Json }> = []
  for (const { where, op } of operations(doc)) {
    for (const p of op.parameters ?? []) {
      if (p.schema !== undefined) out.push({ where: `${where} ${String(p.name)}`, schema: p.schema })
    }
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
      out.push({ where: `${where} body ${type}`, schema: (media as Json).schema })
    }
    for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
      for (const [type, media] of Object.entries(response.content ?? {})) {
        out.push({ where: `${where} ${status} ${type}`, schema: (media as Json).schema })
      }
    }
  }
  return out
}

/** A branch that is one value: `{type, const}` or `{type, enum: [v]}`. */
const isLiteral = (b: Json): boolean =>
  Object.keys(b).every(k => ['type', 'const', 'enum'].includes(k)) && ('const' in b || b.enum?.length === 1)

/** The JSON pointers of the unions whose every branch is one value (Swagger UI: `string | (string | string)`). */
function literalUnions (node: unknown, at = '#', out: string[] = []): string[] {
  if (node === null || typeof node !== 'object') return out
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(value) && value.every(isLiteral)) out.push(`${at}/${key}`)
    literalUnions(value, `${at}/${key}`, out)
  }
  return out
}

/**
 * Compiles every schema as an integrator would: Ajv's JSON Schema 2020-12 (the dialect of OpenAPI 3.1) in its default
 * strict mode, ajv-formats, each component under the key its `$ref`s name; the failures, as `where: message`.
 */
function strictFailures (doc: Json): string[] {
  const ajv = new Ajv2020()
  addFormats(ajv)
  // OpenAPI's binary strings (the cover's bytes, the ZIP export) are a format of OpenAPI's own
  ajv.addFormat('binary', true)
  const failures: string[] = []
  const names = Object.keys(doc.components.schemas as Json)
  for (const name of names) ajv.addSchema(doc.components.schemas[name], `#/components/schemas/${name}`)
  const compile = (where: string, run: () => unknown): void => {
    try {
      run()
    } catch (err) {
      failures.push(`${where}: ${(err as Error).message}`)
    }
  }
  for (const name of names) compile(`schema ${name}`, () => ajv.getSchema(`#/components/schemas/${name}`))
  for (const { where, schema } of inlineSchemas(doc)) compile(where, () => ajv.compile(schema))
  return failures
}

void describe('the served OpenAPI document, as strict tools read it', () => {
  const t = useTestApp('pglite')
  let doc: Json

  before(async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    assert.equal(res.statusCode, 200)
    doc = res.json<Json>()
  })

  void it('compiles every schema in Ajv strict mode (2020-12, ajv-formats), and the check refuses a keyword of ' +
    'our own', () => {
    assert.deepEqual(strictFailures(doc), [])
    assert.ok(Object.keys(doc.components.schemas as Json).length > 90)
    // the check can fail: a keyword Ajv does not know, as `x-needs-event` was, is refused
    const action = doc.components.schemas.AutomationWebhookAction as Json
    const broken = structuredClone(doc)
    broken.components.schemas.AutomationWebhookAction = { ...action, 'x-needs-event': false }
    assert.match(strictFailures(broken).join('\n'), /unknown keyword: "x-needs-event"/)
    // the actions' union is a plain oneOf, each branch's `type` one value
    const union = doc.components.schemas.AutomationAction as Json
    assert.equal(union.discriminator, undefined)
    assert.equal(union.oneOf.length, 7)
    assert.deepEqual(action.properties.type.enum, ['webhook'])
  })

  void it('types every boolean query flag as boolean, and no union of literals as a union', () => {
    const flags = new Map<string, Json>()
    for (const { where, op } of operations(doc)) {
      for (const p of op.parameters ?? []) if (p.in === 'query') flags.set(`${where} ${String(p.name)}`, p.schema)
    }
    for (const name of [
      'get /api/v1/contacts is_favorite', 'get /api/v1/contacts sync', 'post /api/v1/contacts/import dry_run',
      'post /api/v1/contacts/import ignore_unknown', 'get /api/v1/events sync',
      'get /api/v1/events/{id}/attendees sync',
      'get /api/v1/automation/rules enabled', 'post /api/v1/spaces/{id}/calendar-import dry_run'
    ]) {
      assert.equal(flags.get(name)?.type, 'boolean', name)
      assert.equal(flags.get(name)?.enum, undefined, name)
    }
    assert.deepEqual(flags.get('get /api/v1/events visibility')?.enum, [0, 10, 20, 30, 40])
    assert.deepEqual(literalUnions(doc), [])
  })

  void it('describes every operation, with what its route declares', () => {
    const bare = operations(doc).filter(({ op }) => typeof op.description !== 'string' || op.description.length < 20)
    assert.deepEqual(bare.map(o => o.where), [])
    const publish = doc.paths['/api/v1/events/{id}/publish'].post as Json
    assert.match(publish.description, /`events:publish` permission/)
    assert.match(publish.description, /If-Match/)
    assert.match(publish.description, /body may be left out/)
    assert.match(doc.paths['/health'].get.description, /Needs no token/)
    assert.equal(doc.info.license.identifier, 'LicenseRef-Proprietary')
  })

  void it('says which bodies may be left out', () => {
    const optional = operations(doc).filter(({ op }) => op.requestBody?.required === false).map(o => o.op.operationId)
    for (const id of ['publish-event', 'unpublish-event', 'publish-space', 'publish-event-series',
      'check-in-event-attendee', 'send-event-invitations', 'execute-automation-rule']) {
      assert.ok(optional.includes(id), id)
    }
    assert.equal(doc.paths['/api/v1/events'].post.requestBody.required, true)
  })
})

for (const kind of databases()) {
  void describe(`${kind}: boolean query flags and optional bodies on the wire`, () => {
    const t = useTestApp(kind)

    void it('takes true/false/1/0 for a flag, an empty value as none, and refuses anything else naming the ' +
      'parameter', async () => {
      const alice = await newTenant(t).user('alice')
      for (const [name, isFavorite] of [['Star', true], ['Plain', false]] as const) {
        await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: name, is_favorite: isFavorite })
      }
      const names = async (query: string): Promise<string[]> => {
        const res = await expectStatus(t, alice, 'GET', `/api/v1/contacts?sort_by=first_name&sort_dir=asc${query}`, 200)
        return (res.json().items as Json[]).map(c => c.first_name)
      }
      for (const yes of ['true', '1']) assert.deepEqual(await names(`&is_favorite=${yes}`), ['Star'], yes)
      for (const no of ['false', '0']) assert.deepEqual(await names(`&is_favorite=${no}`), ['Plain'], no)
      assert.deepEqual(await names('&is_favorite='), ['Plain', 'Star'])
      assert.deepEqual(await names(''), ['Plain', 'Star'])
      for (const bad of ['yes', '2', 'TRUE']) {
        const res = await expectStatus(t, alice, 'GET', `/api/v1/contacts?is_favorite=${bad}`, 400)
        assert.deepEqual(res.json().errors.map((e: Json) => e.location), ['query.is_favorite'], bad)
      }
      // a default flag: `1` asks for a dry run of the CSV import, which stores nothing
      const csv = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts/import?dry_run=1',
        headers: { 'content-type': 'text/csv' },
        payload: 'email,first_name\r\ngrace@example.org,Grace\r\n'
      })
      assert.equal(csv.statusCode, 200, csv.body)
      assert.deepEqual(await names(''), ['Plain', 'Star'])
    })

    void it('publishes and checks in with no body, with or without a Content-Type', async () => {
      const alice = await newTenant(t).user('alice')
      for (const headers of [{}, { 'content-type': 'application/json' }]) {
        const event = await createEvent(t, alice)
        const res = await t.as(alice, { method: 'POST', url: `/api/v1/events/${String(event.id)}/publish`, headers })
        assert.equal(res.statusCode, 204, `${JSON.stringify(headers)}: ${res.body}`)
        const contact = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Ada' })).json()
        await expectStatus(t, alice, 'POST', `/api/v1/events/${String(event.id)}/attendees`, 201,
          { contact_id: contact.id })
        const checkIn = await t.as(alice, {
          method: 'POST', url: `/api/v1/events/${String(event.id)}/attendees/${String(contact.id)}/check-in`, headers
        })
        assert.equal(checkIn.statusCode, 204, `${JSON.stringify(headers)}: ${checkIn.body}`)
        assert.equal(checkIn.headers['check-in-result'], 'checked-in')
      }
      // a body that is there is still read: an unknown field is refused
      const event = await createEvent(t, alice)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${String(event.id)}/publish`, 400, { surprise: true })
    })
  })
}
