/**
 * Property-based fuzzing of every `/api/v1` route from its OpenAPI schemas: path, query and body
 * values that are valid, at their bounds, or wrong (other types, out of range, too long, 100 kB
 * strings, JSON nested 1 000 and 2 000 levels deep, odd unicode, NUL, unknown fields, broken
 * JSON, other content types), sent by a member of a tenant with real ids of that tenant.
 *
 * Properties: never a 5xx; every error an `application/problem+json` ErrorModel, with a `location`
 * on each field error of a 400; every success one of the route's declared statuses with a body
 * valid against its declared schema.
 *
 * The seed is printed; replay a failure with `FUZZ_SEED=<seed>`; `FUZZ_SEED=random` for a new one. `FUZZ_RUNS` (default
 * 12) sets the
 * number of requests per route.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { ValidateFunction } from 'ajv'
import type { InjectOptions } from 'fastify'
import { databases, useTestApp } from './helpers/build-app.ts'
import { apiRoutes, fillPath, paramKeys, successSchemas, type ApiRoute, type JsonSchema } from './helpers/routes.ts'
import { missingFixtures, newWorld, pathValues, type World } from './helpers/fixtures.ts'
import { bodyArb, deepJson, invalidArb, validArb } from './helpers/schema-values.ts'
import { problemIssues, responseAjv } from './helpers/problem.ts'

/** A fixed seed by default, so a CI run is repeatable; `FUZZ_SEED=random` explores new cases. */
const SEED = process.env.FUZZ_SEED === 'random'
  ? Date.now() % 2_147_483_647
  : Number(process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== '' ? process.env.FUZZ_SEED : 20_261_122)
const RUNS = Number(process.env.FUZZ_RUNS ?? 12)

interface FuzzRequest {
  method: string
  url: string
  payload?: string
  headers: Record<string, string>
}

/** The anonymous routes of guests: a mailed link, or public registration (docs/guests.md). */
const isGuestRoute = (r: ApiRoute): boolean =>
  r.url.startsWith('/api/v1/guest/') || r.url.startsWith('/api/v1/public/events/') ||
  r.url.startsWith('/api/v1/public/registrations/')

const asText = (v: unknown): string => typeof v === 'string' ? v : JSON.stringify(v) ?? 'undefined'

/** Raw bodies that no schema accepts. */
const rawBodies = fc.constantFrom(
  '',
  '{',
  'null',
  '[]',
  '"text"',
  '12',
  '{"a":1,"a":2}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"x":1}}}',
  deepJson(1_000, 'array'),
  deepJson(1_000, 'object'),
  '\uFEFF{}',
  '{"a":"\\ud800"}'
  // 100 000 levels: see limits.test.ts (a known 500)
)

function requestArb (route: ApiRoute, w: World, fixtures: Record<string, string>): fc.Arbitrary<FuzzRequest> {
  const params = route.operation.parameters ?? []
  const pathArb = fc.tuple(...paramKeys(route.url).map((key) => {
    const name = key.split(':')[1] ?? ''
    const schema = params.find(p => p.in === 'path' && p.name === name)?.schema
    return fc.oneof(
      { weight: 4, arbitrary: fc.constant(fixtures[key] ?? '1') },
      { weight: 1, arbitrary: validArb(schema).map(asText) },
      { weight: 1, arbitrary: invalidArb(schema).map(asText) }
    // at most 40 code points, so the encoded segment stays under the router's maxParamLength (500):
    // longer ones get Fastify's own 414 body (reported; see limits.test.ts)
    // and never empty or a dot segment, which would address another route (`/contacts/` is the list)
    ).map(v => [key, [...v].slice(0, 40).join('')] as const)
      .map(([k, v]) => [k, v === '' || v === '.' || v === '..' ? `${v}x` : v] as const)
  })).map(pairs => fillPath(route.url, Object.fromEntries(pairs)))

  const queryParams = params.filter(p => p.in === 'query')
  const queryArb = fc
    .tuple(
      ...queryParams.map(p =>
        fc.option(
          fc
            .oneof({ weight: 3, arbitrary: validArb(p.schema) }, { weight: 2, arbitrary: invalidArb(p.schema) })
            .map(v => [p.name, asText(v).slice(0, 5_000)] as const),
          { nil: undefined, freq: 2 }
        )
      )
    )
    .map(pairs => {
      const q = new URLSearchParams()
      for (const pair of pairs) if (pair !== undefined) q.append(pair[0], pair[1])
      const s = q.toString()
      return s === '' ? '' : `?${s}`
    })

  const bodyType = route.bodyType ?? 'application/json'
  const bodyArbitrary: fc.Arbitrary<{ payload?: string; type?: string }> =
    route.bodySchema === undefined
      ? fc.oneof(
        { weight: 4, arbitrary: fc.constant({}) },
        { weight: 1, arbitrary: rawBodies.map(payload => ({ payload, type: 'application/json' })) }
      )
      : fc.oneof(
        {
          weight: 8,
          arbitrary: bodyArb(route.bodySchema).map(v => ({ payload: JSON.stringify(v) ?? '', type: bodyType }))
        },
        { weight: 2, arbitrary: rawBodies.map(payload => ({ payload, type: bodyType })) },
        {
          weight: 1,
          arbitrary: fc
            .constantFrom(
              'text/plain',
              'application/xml',
              'multipart/form-data; boundary=x',
              'application/json; charset=latin1'
            )
            .map(type => ({ payload: '{}', type }))
        }
      )

  const headerArb = fc.record(
    {
      'if-match': fc.oneof(
        fc.constantFrom('"1"', '*', 'W/"1"', '"999"', 'garbage', '"1", "2"'),
        fc.string({ maxLength: 30 })
      ),
      'idempotency-key': fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }))
    },
    { requiredKeys: [] }
  )

  return fc
    .tuple(pathArb, queryArb, bodyArbitrary, headerArb, fc.constantFrom<'alice' | 'admin'>('alice', 'alice', 'admin'))
    .map(([path, query, body, headers, who]) => {
      const h: Record<string, string> = { authorization: `Bearer ${w.tokens[who]}` }
      for (const [k, v] of Object.entries(headers)) if (v !== undefined && /^[\x20-\x7e]*$/.test(v)) h[k] = v
      if (body.type !== undefined) h['content-type'] = body.type
      return {
        method: route.method,
        url: `${path}${query}`,
        headers: h,
        ...(body.payload !== undefined ? { payload: body.payload } : {})
      }
    })
}

for (const kind of databases()) {
  void describe(`${kind}: fuzzing every route from its OpenAPI schemas`, () => {
    const t = useTestApp(kind)
    let routes: ApiRoute[] = []
    let w: World
    const ajv = responseAjv()
    const validators = new Map<JsonSchema, ValidateFunction>()
    const validatorFor = (schema: JsonSchema): ValidateFunction => {
      let v = validators.get(schema)
      if (v === undefined) {
        v = ajv.compile(schema)
        validators.set(schema, v)
      }
      return v
    }

    before(async () => {
      ({ routes } = await apiRoutes(t.app))
      w = await newWorld(t, 'fuzz')
    })

    void it('holds its properties for generated requests on every route', async (ctx) => {
      console.log(`fuzz seed ${SEED}, ${RUNS} runs per route (replay: FUZZ_SEED=${SEED})`)
      ctx.diagnostic(`fuzz seed ${SEED}`)
      const stats = { requests: 0, byStatus: new Map<number, number>() }
      // the guests' anonymous routes too (docs/guests.md): links and public registration, with whatever they get
      const fuzzable = routes.filter(r => missingFixtures(r).length === 0 && (r.auth !== 'none' || isGuestRoute(r)))
      assert.ok(fuzzable.length > 0)
      // every fixture first; then GETs, other writes, and DELETEs last (nested ones before their
      // parents), so the fixtures live as long as possible
      const fixturesOf = new Map<ApiRoute, Record<string, string>>()
      for (const route of fuzzable) fixturesOf.set(route, await pathValues(w, route))
      const order = (r: ApiRoute): number => r.method === 'GET' ? 0 : r.method === 'DELETE' ? 10 - r.params.length : 1
      for (const route of [...fuzzable].sort((x, y) => order(x) - order(y))) {
        await ctx.test(route.name, async () => {
          const fixtures = fixturesOf.get(route) ?? {}
          const success = successSchemas(route)
          const details = await fc.check(fc.asyncProperty(requestArb(route, w, fixtures), async (req) => {
            const res = await t.app.inject(req as InjectOptions)
            stats.requests++
            stats.byStatus.set(res.statusCode, (stats.byStatus.get(res.statusCode) ?? 0) + 1)
            const where = `${req.method} ${req.url.slice(0, 300)} → ${res.statusCode}`
            assert.ok(res.statusCode < 500, `${where}: ${res.body.slice(0, 500)}`)
            if (res.statusCode >= 400) {
              const issues = problemIssues(res)
              assert.deepEqual(issues, [], where)
              return
            }
            assert.ok(
              success.has(res.statusCode),
              `${where}: status not declared (declared: ${[...success.keys()].join(', ')})`
            )
            const schema = success.get(res.statusCode)
            if (schema === undefined || res.statusCode === 204) {
              assert.equal(res.body, '', `${where}: a body on a bodiless success`)
              return
            }
            if (String(res.headers['content-type'] ?? '').startsWith('text/csv')) {
              // a CSV answer (exports) is a string schema; its content is checked by the exports' own tests
              assert.equal((schema as { type?: string }).type, 'string', `${where}: a CSV answer needs a string schema`)
              return
            }
            const validate = validatorFor(schema)
            const body: unknown = JSON.parse(res.body)
            assert.ok(validate(body), `${where}: body does not match its schema: ${ajv.errorsText(validate.errors)}`)
          }), { seed: SEED, numRuns: RUNS, endOnFailure: true })
          if (details.failed) {
            const shown = JSON.stringify(details.counterexample, (k, v: unknown) =>
              k === 'authorization'
                ? 'Bearer …'
                : typeof v === 'string' && v.length > 300
                  ? `${v.slice(0, 300)}…(${v.length} chars)`
                  : v
            )
            const cause =
              details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
            assert.fail(
              `${route.name}: property failed (seed ${details.seed}, path ${String(details.counterexamplePath)}; ` +
              `replay with FUZZ_SEED=${SEED})\n${cause.slice(0, 1_500)}\nrequest: ${shown}`
            )
          }
        })
      }
      const statuses = [...stats.byStatus.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(' ')
      console.log(`fuzz: ${stats.requests} requests over ${fuzzable.length} routes; statuses ${statuses}`)
    })
  })
}
