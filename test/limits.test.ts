/**
 * Input limits, checked on every route from its OpenAPI schemas:
 *
 * - a body over BODY_LIMIT_BYTES (default 1 MiB) answers 413 ErrorModel on every route with a body;
 * - every string with a `maxLength` in a request body or query answers 400 at maxLength + 1 with the
 *   field's `location`, and is accepted at maxLength (the database holds what the schema allows);
 * - every array with `maxItems` (bulk endpoints: contacts upsert, tags, keywords…) likewise;
 * - every bounded integer in a query (page sizes, limits) answers 400 just outside its bounds;
 * - deeply nested JSON answers 400, never a 5xx.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { databases, useTestApp } from './helpers/build-app.ts'
import { apiRoutes, fillPath, type ApiRoute, type JsonSchema } from './helpers/routes.ts'
import { isGlobal, missingFixtures, newWorld, pathValues, validBody, type World } from './helpers/fixtures.ts'
import { deepJson, sampleValid } from './helpers/schema-values.ts'
import { errorLocations, problemIssues, refusedAtBound } from './helpers/problem.ts'

/** The bounded branch of a property schema (the non-null branch of a nullable field). */
function bounded (s: JsonSchema | undefined): JsonSchema | undefined {
  if (s === undefined) return undefined
  const branches = (s.anyOf ?? s.oneOf) as JsonSchema[] | undefined
  if (Array.isArray(branches)) return branches.find(b => b.type !== 'null')
  return s
}

const plain = (s: JsonSchema): boolean => s.format === undefined && s.pattern === undefined && s.enum === undefined

function jsonRequest (route: ApiRoute, url: string, body: unknown): InjectOptions {
  return jsonTextRequest(route, url, JSON.stringify(body))
}

/** `jsonRequest` with the body's text as given (malformed, nested, too large). */
function jsonTextRequest (route: ApiRoute, url: string, payload: string): InjectOptions {
  return { method: route.method, url, payload, headers: { 'content-type': route.bodyType ?? 'application/json' } }
}

const isJsonBody = (r: ApiRoute): boolean =>
  r.bodySchema !== undefined && (r.bodyType ?? 'application/json').includes('json')

for (const kind of databases()) {
  void describe(`${kind}: input limits`, () => {
    const t = useTestApp(kind)
    let routes: ApiRoute[] = []
    let w: World

    before(async () => {
      ({ routes } = await apiRoutes(t.app))
      w = await newWorld(t, 'limits')
      routes = routes.filter(r => r.auth === 'required' && missingFixtures(r).length === 0)
    })

    const urlOf = async (r: ApiRoute): Promise<string> => fillPath(r.url, await pathValues(w, r))
    const asAdmin = async (opts: InjectOptions): Promise<LightMyRequestResponse> => await w.call(w.tokens.admin, opts)

    /**
     * The free-form object properties (object schemas of no closed shape) of the JSON bodies of tenant
     * routes, one at a time, each with a valid body of its route to put a value into.
     */
    async function * freeFormObjects (): AsyncGenerator<{ r: ApiRoute, base: object, name: string }> {
      for (const r of routes.filter(x => isJsonBody(x) && !isGlobal(x))) {
        const base = await validBody(w, r)
        if (base === null || typeof base !== 'object' || Array.isArray(base)) continue
        for (const [name, raw] of Object.entries((r.bodySchema?.properties ?? {}) as Record<string, JsonSchema>)) {
          const s = bounded(raw)
          if (s?.type !== 'object' || s.additionalProperties === false) continue
          yield { r, base, name }
        }
      }
    }
    /** `r` as the admin, with `payload` (JSON text) as its body */
    const withJsonText = async (r: ApiRoute, payload: string): Promise<LightMyRequestResponse> =>
      await asAdmin(jsonTextRequest(r, await urlOf(r), payload))

    void it('answers 413 with an ErrorModel to a body over 1 MiB on every route that takes a body', async () => {
      const failures: string[] = []
      const big = JSON.stringify({ notes: 'x'.repeat(t.config.bodyLimit) })
      let checked = 0
      for (const r of routes.filter(isJsonBody)) {
        const res = await withJsonText(r, big)
        checked++
        if (res.statusCode !== 413) failures.push(`${r.name}: ${res.statusCode}`)
        else if (problemIssues(res).length > 0) failures.push(`${r.name}: ${problemIssues(res).join('; ')}`)
      }
      assert.equal(t.config.bodyLimit, 1_048_576, 'the documented default')
      assert.ok(checked > 0)
      assert.deepEqual(failures, [])
    })

    void it("refuses every string over its maxLength and every array over its maxItems with the field's location, " +
      'and accepts them at the bound', async () => {
      const failures: string[] = []
      let checked = 0
      for (const r of routes.filter(x => isJsonBody(x) && !isGlobal(x))) {
        const base = await validBody(w, r)
        if (base === null || typeof base !== 'object' || Array.isArray(base)) continue
        const props = (r.bodySchema?.properties ?? {}) as Record<string, JsonSchema>
        for (const [name, raw] of Object.entries(props)) {
          const s = bounded(raw)
          if (s === undefined || name === '$schema') continue
          const location = `body.${name}`
          const cases: Array<{ value: unknown; over: boolean }> = []
          if (s.type === 'string' && typeof s.maxLength === 'number') {
            cases.push({ value: 'x'.repeat(s.maxLength + 1), over: true })
            if (plain(s)) cases.push({ value: 'x'.repeat(s.maxLength), over: false })
          }
          if (s.type === 'array' && typeof s.maxItems === 'number') {
            const item = s.items as JsonSchema | undefined
            const one = (i: number): unknown => {
              const v = sampleValid(item)
              return typeof v === 'string' ? `${v}${i}` : v
            }
            cases.push({ value: Array.from({ length: s.maxItems + 1 }, (_v, i) => one(i)), over: true })
            if (item !== undefined && item.type === 'string' && plain(item)) {
              cases.push({ value: Array.from({ length: s.maxItems }, (_v, i) => one(i)), over: false })
            }
          }
          for (const c of cases) {
            const res = await asAdmin(jsonRequest(r, await urlOf(r), { ...base, [name]: c.value }))
            checked++
            const locations = errorLocations(res)
            if (res.statusCode >= 500) {
              failures.push(
                `${r.name} ${location} ${c.over ? 'over' : 'at'} its bound: ${res.statusCode} ${res.body.slice(0, 200)}`
              )
            } else if (c.over && (res.statusCode !== 400 || !locations.includes(location))) {
              failures.push(`${r.name} ${location} over its bound: ${res.statusCode} ${res.body.slice(0, 200)}`)
            } else if (!c.over && refusedAtBound(res, location)) {
              failures.push(`${r.name} ${location} at its bound refused: ${res.body.slice(0, 200)}`)
            }
          }
        }
      }
      console.log(`body bounds: ${checked} requests`)
      assert.ok(checked > 0)
      assert.deepEqual(failures, [])
    })

    void it('refuses query values outside their bounds (page sizes, limits, lengths) ' +
      "with the field's location", async () => {
      const failures: string[] = []
      let checked = 0
      for (const r of routes.filter(x => !isGlobal(x))) {
        const params = (r.operation.parameters ?? []).filter(p => p.in === 'query')
        if (params.length === 0) continue
        const required: Record<string, string> = {}
        for (const p of params) if (p.required === true) required[p.name] = String(sampleValid(p.schema))
        const url = await urlOf(r)
        for (const p of params) {
          const s = bounded(p.schema)
          if (s === undefined) continue
          const cases: Array<{ value: string; over: boolean }> = []
          if ((s.type === 'integer' || s.type === 'number') && typeof s.maximum === 'number') {
            cases.push({ value: String(s.maximum + 1), over: true }, { value: String(s.maximum), over: false })
          }
          if ((s.type === 'integer' || s.type === 'number') && typeof s.minimum === 'number') {
            cases.push({ value: String(s.minimum - 1), over: true })
          }
          if (s.type === 'string' && typeof s.maxLength === 'number') {
            cases.push({ value: 'x'.repeat(s.maxLength + 1), over: true })
            if (plain(s)) cases.push({ value: 'x'.repeat(s.maxLength), over: false })
          }
          for (const c of cases) {
            const q = new URLSearchParams({ ...required, [p.name]: c.value })
            const opts: InjectOptions = { method: r.method, url: `${url}?${q.toString()}` }
            const body = await validBody(w, r)
            if (body !== undefined && isJsonBody(r)) Object.assign(opts, jsonRequest(r, opts.url as string, body))
            // a text body (the CSV import) as it is, so that the query is what the route refuses
            if (typeof body === 'string' && !isJsonBody(r)) {
              Object.assign(opts, { payload: body, headers: { 'content-type': r.bodyType ?? 'text/plain' } })
            }
            const res = await asAdmin(opts)
            checked++
            const location = `query.${p.name}`
            const locations = errorLocations(res)
            if (res.statusCode >= 500) failures.push(`${r.name} ${location}=${c.value.slice(0, 20)}: ${res.statusCode}`)
            else if (c.over && (res.statusCode !== 400 || !locations.includes(location))) {
              failures.push(
                `${r.name} ${location}=${c.value.slice(0, 20)} accepted: ${res.statusCode} ${res.body.slice(0, 160)}`
              )
            } else if (!c.over && refusedAtBound(res, location)) {
              failures.push(
                `${r.name} ${location}=${c.value.slice(0, 20)} refused at its bound: ${res.body.slice(0, 160)}`
              )
            }
          }
        }
      }
      console.log(`query bounds: ${checked} requests`)
      assert.ok(checked > 0)
      assert.deepEqual(failures, [])
    })

    void it('answers 400 to deeply nested JSON on every route that takes a body', async () => {
      const failures: string[] = []
      for (const r of routes.filter(isJsonBody)) {
        for (const payload of [
          `{"notes":${deepJson(1_000, 'array')}}`,
          `{"title":${deepJson(1_000, 'object')}}`,
          deepJson(1_000, 'object')
        ]) {
          const res = await withJsonText(r, payload)
          if (res.statusCode !== 400 && res.statusCode !== 404) {
            failures.push(`${r.name}: ${res.statusCode} ${res.body.slice(0, 160)}`)
          } else if (problemIssues(res).length > 0) failures.push(`${r.name}: ${problemIssues(res).join('; ')}`)
        }
      }
      assert.deepEqual(failures, [])
    })

    void it('answers a lone UTF-16 surrogate in any free-form JSON object with a located 400 or accepts it, ' +
      'never a 400 without location', async () => {
      const failures: string[] = []
      for await (const { r, base, name } of freeFormObjects()) {
        const payload = JSON.stringify({ ...base, [name]: { k: 'PLACEHOLDER' } }).replace('"PLACEHOLDER"', '"\\ud800"')
        const res = await withJsonText(r, payload)
        if (res.statusCode >= 500 || (res.statusCode === 400 && errorLocations(res).length === 0)) {
          failures.push(`${r.name} body.${name}: ${res.statusCode} ${res.body.slice(0, 160)}`)
        }
      }
      assert.deepEqual(failures, [])
    })

    void it('answers a free-form JSON object nested 50 000 levels deep without a 5xx', async () => {
      const failures: string[] = []
      const deep = deepJson(50_000, 'object')
      for await (const { r, base, name } of freeFormObjects()) {
        const payload = JSON.stringify({ ...base, [name]: 'PLACEHOLDER' }).replace('"PLACEHOLDER"', deep)
        const res = await withJsonText(r, payload)
        if (res.statusCode >= 500) failures.push(`${r.name} body.${name}: ${res.statusCode}`)
      }
      console.log(`deep free-form values: ${failures.length} failures: ${failures.join(', ')}`)
      assert.deepEqual(failures, [])
    })

    void it('answers a body nested 100 000 levels deep with a 400 ErrorModel', async () => {
      const res = await asAdmin({
        method: 'POST',
        url: '/api/v1/contacts',
        payload: deepJson(100_000, 'array'),
        headers: { 'content-type': 'application/json' }
      })
      assert.equal(res.statusCode, 400, res.body.slice(0, 200))
      assert.deepEqual(problemIssues(res), [])
    })

    void it('answers a path parameter over 500 characters, and a broken percent-encoding, ' +
      'with an ErrorModel', async () => {
      for (const url of [`/api/v1/contacts/${'a'.repeat(501)}`, '/api/v1/contacts/%E0%A4%A']) {
        const res = await asAdmin({ method: 'GET', url })
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${url.slice(0, 40)}: ${res.statusCode}`)
        assert.deepEqual(problemIssues(res), [], url.slice(0, 40))
      }
    })
  })
}

void describe('pglite: a configured body limit', () => {
  const t = useTestApp('pglite', { env: { BODY_LIMIT_BYTES: '4096' } })

  void it('answers 413 above BODY_LIMIT_BYTES and accepts a body below it', async () => {
    const w = await newWorld(t, 'limit')
    const over = await w.call(w.tokens.alice, {
      method: 'POST',
      url: '/api/v1/contacts',
      payload: { notes: 'x'.repeat(4_100) }
    })
    assert.equal(over.statusCode, 413)
    assert.deepEqual(problemIssues(over), [])
    const under = await w.call(w.tokens.alice, {
      method: 'POST',
      url: '/api/v1/contacts',
      payload: { notes: 'x'.repeat(4_000) }
    })
    assert.equal(under.statusCode, 201, under.body)
    const list = await w.call(w.tokens.alice, { method: 'GET', url: '/api/v1/contacts' })
    assert.equal(list.json<{ total: number }>().total, 1, 'the refused body stored nothing')
  })
})
