/**
 * The route matrix: every `/api/v1` route, read from the running app (OpenAPI document checked
 * against the router), against every kind of caller it must refuse.
 *
 * - 401 for each bad credential on every route that requires a token (no token, malformed,
 *   expired, unknown key, `alg: none`, HMAC, tampered, wrong issuer, wrong audience, no sub, no
 *   tenant claim). The app checks an audience here, so the audience cases are real.
 * - 403 for every role that lacks a route's declared permission (viewer on every write, a caller
 *   with no known role on everything), called with real ids of the caller's own tenant.
 * - 404 for a caller of tenant B on every resource of tenant A, with a valid body, and tenant A's
 *   data re-read afterwards to be unchanged; tenant B's lists never show A's data.
 * - 404 for a member on another member's private resources.
 *
 * A route with a path parameter that has no fixture (test/helpers/fixtures.ts) fails the suite.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { databases, useTestApp } from './helpers/build-app.ts'
import { apiRoutes, fillPath, isWrite, type ApiRoute } from './helpers/routes.ts'
import {
  isGlobal, isPrivate, missingFixtures, newWorld, pathValues, requiredQuery, validBody, type World
} from './helpers/fixtures.ts'
import { badTokens } from './helpers/tokens.ts'
import { problemIssues } from './helpers/problem.ts'
import { permissionsOf, type Permission } from '../src/platform/auth/permissions.ts'

const AUDIENCE = 'urn:collab:api'

/** Routes that need no token, and why (runtime contract, "Authentication"). */
const PUBLIC_ROUTES: Record<string, string> = {
  'POST /api/v1/integrations/idp/webhook': 'signed by the identity provider (HMAC), no bearer token',
  'GET /api/v1/spaces/:id/calendar.ics':
    'calendar apps send no bearer token: a public space, or a secret feed token in the query (docs/integrations.md)',
  'GET /api/v1/me/calendar.ics': 'calendar apps send no bearer token: a secret feed token in the query',
  'GET /api/v1/series/:id/calendar.ics': 'calendar apps send no bearer token: a secret feed token in the query',
  // guests have no account (docs/guests.md): a secret link mailed to them, or public registration with double opt-in
  'GET /api/v1/guest/registration': "a guest's own link: a secret token mailed to them, in the query",
  'POST /api/v1/guest/registration/answer': "a guest's own link, in the body",
  'POST /api/v1/guest/registration/cancel': "a guest's own link, in the body",
  'PUT /api/v1/guest/registration/updates': "a guest's own link, in the body",
  'PUT /api/v1/guest/registration/answers': "a guest's own link, in the body",
  'POST /api/v1/guest/registration/new-link': "a guest's own link, in the body; the new one goes by mail",
  'GET /api/v1/guest/registration/event.ics': "a guest's own link, in the query (calendar apps send no token)",
  'POST /api/v1/public/events/:id/registrations':
    'anyone registers for a public event: bounded per address and event; counts once the mailed link is followed',
  'POST /api/v1/public/registrations/confirm': 'the double opt-in link mailed to the guest, in the body',
  // the public page of an event (docs/guests.md, "The public page"): what anyone may know of a published public event
  'GET /api/v1/public/events/:id': 'the public page of a published public event (JSON, or HTML to a browser)',
  'GET /api/v1/public/events/:id/page.html': 'the same page as HTML, to share and to embed; browsers send no token',
  'POST /api/v1/public/events/:id/page.html':
    "the page's registration form, posted by a browser without JavaScript: the public registration, same limits"
}
const isPublicPage = (r: ApiRoute): boolean => r.method === 'GET' && r.url.startsWith('/api/v1/public/')

/** Write routes that every role may call, and why. */
const WRITES_OPEN_TO_VIEWERS: Record<string, string> = {
  'POST /api/v1/spaces/managers/accept': 'the invited person accepts with the invite token, whatever their tenant role',
  'POST /api/v1/events/managers/accept': 'the invited person accepts with the invite token, whatever their tenant role',
  // a feed token reads only what its user already reads: viewers subscribe to calendars too
  'POST /api/v1/feed-tokens': 'a feed token opens a read-only feed of what the caller sees: viewers may subscribe',
  'DELETE /api/v1/feed-tokens/:id': "the caller's own feed token, whatever their tenant role",
  'POST /api/v1/feed-tokens/:id/rotate': "the caller's own feed token, whatever their tenant role"
}

function request (route: ApiRoute, url: string, body: unknown): InjectOptions {
  const opts: InjectOptions = { method: route.method, url }
  if (body !== undefined && route.bodyType !== 'multipart/form-data') {
    // JSON bodies are encoded; a text body of another type (text/csv) is sent as it is
    const json = route.bodyType === undefined || route.bodyType.includes('json')
    opts.payload = typeof body === 'string' && !json ? body : JSON.stringify(body)
    opts.headers = { 'content-type': route.bodyType ?? 'application/json' }
  }
  return opts
}

/** Whether an answer carries the marker, apart from the request's own path (echoed in `instance`). */
const shows = (res: LightMyRequestResponse, url: string, marker: string): boolean =>
  res.body.split(url.split('?')[0] ?? url).join('').includes(marker)

const brief = (res: LightMyRequestResponse): string => `${res.statusCode} ${res.body.slice(0, 160)}`

for (const kind of databases()) {
  void describe(`${kind}: security route matrix`, () => {
    const t = useTestApp(kind, { env: { OIDC_AUDIENCE: AUDIENCE } })
    let routes: ApiRoute[] = []
    let A: World
    let B: World
    /** routes whose fixtures exist */
    let covered: ApiRoute[] = []

    before(async () => {
      ({ routes } = await apiRoutes(t.app))
      A = await newWorld(t, 'tenant-a')
      B = await newWorld(t, 'tenant-b')
      covered = routes.filter(r => missingFixtures(r).length === 0)
    })

    const resolve = async (w: World, r: ApiRoute): Promise<{ url: string, body: unknown }> =>
      ({ url: `${fillPath(r.url, await pathValues(w, r))}${requiredQuery(r)}`, body: await validBody(w, r) })

    void it('finds the routes of every module', () => {
      assert.ok(routes.length >= 8, `only ${routes.length} routes found`)
      assert.ok(routes.some(r => r.name === 'GET /api/v1/contacts/:id'))
    })

    void it('has a fixture for every path parameter of every route', () => {
      const missing = routes.filter(r => missingFixtures(r).length > 0)
        .map(r => `${r.name} needs ${missingFixtures(r).join(', ')}`)
      assert.deepEqual(missing, [], `add fixtures to test/helpers/fixtures.ts for:\n${missing.join('\n')}`)
    })

    void it('requires a token on every route except the identity webhook and public pages', () => {
      const open = routes.filter(r => r.auth !== 'required' && PUBLIC_ROUTES[r.name] === undefined && !isPublicPage(r))
      assert.deepEqual(open.map(r => `${r.name} (auth ${r.auth})`), [])
      const webhook = routes.find(r => r.name === 'POST /api/v1/integrations/idp/webhook')
      if (webhook !== undefined) {
        assert.equal(webhook.auth, 'none', 'the identity webhook authenticates by signature, not by token')
      }
    })

    void it('declares a permission on every route that requires a token, and a write permission on every write', () => {
      const viewer = new Set(permissionsOf(['viewer']))
      const problems: string[] = []
      for (const r of routes.filter(x => x.auth === 'required')) {
        if (r.permission === undefined && r.name !== 'GET /api/v1/auth/me') {
          problems.push(`${r.name} declares no permission`)
        }
        if (
          isWrite(r) &&
          WRITES_OPEN_TO_VIEWERS[r.name] === undefined &&
          (r.permission === undefined || viewer.has(r.permission as Permission))
        ) {
          problems.push(`${r.name} is a write that viewers may call (permission ${String(r.permission)})`)
        }
      }
      assert.deepEqual(problems, [])
    })

    void it('answers 401 with an ErrorModel to every bad credential on every route that requires a token', async () => {
      const tokens = await badTokens(t, { sub: `admin-${A.tenantId}`, tenant: A.tenantId, roles: ['admin'] })
      assert.ok('wrong audience' in tokens && 'alg none' in tokens && 'expired' in tokens)
      const failures: string[] = []
      let checked = 0
      for (const r of covered.filter(x => x.auth === 'required')) {
        const { url, body } = await resolve(A, r)
        for (const [name, token] of Object.entries(tokens)) {
          const opts = request(r, url, body)
          if (token !== undefined) {
            opts.headers = { ...opts.headers, authorization: name === 'malformed header' ? token : `Bearer ${token}` }
          }
          const res = await t.app.inject(opts)
          checked++
          if (res.statusCode !== 401) failures.push(`${r.name} [${name}]: ${brief(res)}`)
          else {
            const issues = problemIssues(res)
            if (issues.length > 0) failures.push(`${r.name} [${name}]: ${issues.join('; ')}`)
            if (!String(res.headers['www-authenticate'] ?? '').startsWith('Bearer')) {
              failures.push(`${r.name} [${name}]: no WWW-Authenticate: Bearer`)
            }
          }
        }
      }
      console.log(
        `401 matrix: ${checked} requests over ${covered.filter(x => x.auth === 'required').length} routes × ` +
        `${Object.keys(tokens).length} credentials`
      )
      assert.deepEqual(failures, [])
    })

    void it('answers 403 to every role that lacks the declared permission, before validation', async () => {
      const failures: string[] = []
      let checked = 0
      for (const r of covered.filter(x => x.auth === 'required' && x.permission !== undefined)) {
        const { url } = await resolve(A, r)
        for (const role of ['viewer', 'member', 'none'] as const) {
          if (permissionsOf([role]).includes(r.permission as Permission)) continue
          const token = role === 'viewer' ? A.tokens.viewer : role === 'member' ? A.tokens.alice : A.tokens.none
          // an invalid body on purpose: the permission check must come first
          const res = await A.call(token, request(r, url, isWrite(r) ? { unexpected_field: ['x'] } : undefined))
          checked++
          if (res.statusCode !== 403) failures.push(`${r.name} as ${role}: ${brief(res)}`)
          else if (problemIssues(res).length > 0) {
            failures.push(`${r.name} as ${role}: ${problemIssues(res).join('; ')}`)
          }
        }
      }
      console.log(`403 matrix: ${checked} requests`)
      assert.ok(checked > 0)
      assert.deepEqual(failures, [])
    })

    /**
     * Reads whose answer holds audit entries (docs/audit.md, docs/privacy.md): compared by status only. The log
     * grows with every change the matrix makes on a caller's own resources (that is its purpose), and an entry is
     * sealed after it is written, so the same entry reads with its place in the chain later. What the log shows of a
     * refused request (nothing) is src/modules/audit/audit.test.ts's.
     */
    const HOLDING_AUDIT_ENTRIES = new Set([
      '/api/v1/contacts/:id/personal-data', '/api/v1/users/:id/personal-data',
      '/api/v1/audit-log', '/api/v1/audit-log/export', '/api/v1/audit-log/verify'
    ])

    /** What alice and the admin of A see of A's resources: every readable route with A's ids. */
    async function snapshotOf (w: World): Promise<Map<string, string>> {
      const snap = new Map<string, string>()
      for (const r of covered.filter(x => x.method === 'GET' && x.auth !== 'none')) {
        const { url } = await resolve(w, r)
        for (const who of ['alice', 'admin'] as const) {
          const res = await w.call(w.tokens[who], { method: 'GET', url })
          const whole = res.statusCode < 300 && !HOLDING_AUDIT_ENTRIES.has(r.url)
          snap.set(`${who} ${url}`, whole ? `${res.statusCode} ${res.body}` : String(res.statusCode))
        }
      }
      return snap
    }

    void it('answers 404 to a caller of another tenant on every resource, and changes nothing', async () => {
      const withParams = covered.filter(r => r.params.length > 0 && r.auth === 'required' && !isGlobal(r))
      // create every fixture of A first, then record what A sees
      for (const r of covered) await resolve(A, r)
      const before = await snapshotOf(A)
      assert.ok(before.size > 0)
      const failures: string[] = []
      // reads first, deletes last, so that a leak in one write cannot hide another
      const order = (r: ApiRoute): number => r.method === 'GET' ? 0 : r.method === 'DELETE' ? 2 : 1
      const ordered = [...withParams].sort((x, y) => order(x) - order(y))
      for (const r of ordered) {
        const { url, body } = await resolve(A, r)
        const bodyB = forTenantB(body, A, B)
        const res = await B.call(B.tokens.admin, request(r, url, bodyB))
        if (res.statusCode !== 404) failures.push(`${r.name} (${url}) by admin of tenant B: ${brief(res)}`)
        else if (problemIssues(res).length > 0) failures.push(`${r.name}: ${problemIssues(res).join('; ')}`)
        if (shows(res, url, A.marker)) failures.push(`${r.name}: the answer shows tenant A's data`)
      }
      const after = await snapshotOf(A)
      for (const [k, v] of before) {
        if (after.get(k) !== v) {
          failures.push(`tenant A's ${k} changed: ${v.slice(0, 120)} → ${String(after.get(k)).slice(0, 120)}`)
        }
      }
      console.log(`cross-tenant matrix: ${ordered.length} routes, ${before.size} reads of tenant A compared`)
      assert.deepEqual(failures, [])
    })

    /**
     * The lists and searches (GET routes without path parameters) that show a caller tenant A's marker,
     * read plainly and searched for a prefix of it (a search may echo its query, but only A's rows hold
     * the whole marker); `leak` words each failure.
     */
    const markerInLists = async (
      call: (opts: InjectOptions) => Promise<LightMyRequestResponse>,
      leak: (r: ApiRoute, url: string, res: LightMyRequestResponse) => string
    ): Promise<string[]> => {
      const failures: string[] = []
      for (const r of covered.filter(x => x.method === 'GET' && x.params.length === 0 && x.auth === 'required')) {
        const term = A.marker.slice(0, 9)
        const query =
          r.operation.parameters?.some(p => p.in === 'query' && p.name === 'query') === true
            ? `?query=${term}`
            : `?search=${term}`
        for (const url of [r.url, `${r.url}${query}`]) {
          const res = await call({ method: 'GET', url })
          if (res.statusCode >= 500) failures.push(`${r.name}: ${brief(res)}`)
          if (res.body.includes(A.marker)) failures.push(leak(r, url, res))
        }
      }
      return failures
    }

    const listsShow = async (caller: string, who: string): Promise<string[]> => {
      for (const r of covered) await resolve(A, r)
      return await markerInLists(
        async opts => await A.call(caller, opts),
        (r, url, res) => `${r.name} (${url}) by ${who} shows alice's private data: ${res.body.slice(0, 200)}`
      )
    }

    void it('never shows alice\'s private data in the lists and searches of another member', async () => {
      assert.deepEqual(await listsShow(A.tokens.bob, 'bob'), [])
    })

    void it('never shows tenant A\'s data in the lists and searches of tenant B', async () => {
      for (const r of covered.filter(x => x.params.length > 0)) await resolve(A, r)
      const failures = await markerInLists(
        async opts => await B.call(B.tokens.admin, opts),
        (_r, url) => `${url} by admin of tenant B shows tenant A's data`
      )
      assert.deepEqual(failures, [])
    })

    void it("lets a guest in only with a live link of the route's purpose: a forged, empty or malformed one, a " +
      "member's bearer token alone, and a registration for a private event all get one 404 problem; nothing changes",
    async () => {
      for (const r of covered) await resolve(A, r)
      const before = await snapshotOf(A)
      const failures: string[] = []
      const linked = routes.filter(r => r.url.startsWith('/api/v1/guest/') ||
        r.url === '/api/v1/public/registrations/confirm')
      assert.ok(linked.length >= 7, `only ${linked.length} guest link routes`)
      for (const r of linked) {
        for (const token of ['A'.repeat(43), '', '../x', 'z'.repeat(200)]) {
          const extra = r.url.endsWith('/answer')
            ? { status: 'confirmed' }
            : r.url.endsWith('/updates')
              ? { subscribed: false }
              : r.url.endsWith('/answers') ? { answers: {} } : {}
          const opts: InjectOptions = r.method === 'GET'
            ? { method: 'GET', url: `${r.url}?token=${encodeURIComponent(token)}` }
            : { method: r.method as 'POST', url: r.url, payload: { token, ...extra } }
          const res = await A.call(A.tokens.admin, opts)
          if (res.statusCode !== 404) failures.push(`${r.name} [${token.slice(0, 10)}]: ${brief(res)}`)
          else if (problemIssues(res).length > 0) failures.push(`${r.name}: ${problemIssues(res).join('; ')}`)
        }
      }
      const event = await A.need('events/:id')
      const res = await A.call(A.tokens.admin, {
        method: 'POST',
        url: `/api/v1/public/events/${event}/registrations`,
        payload: { name: A.marker, email: `${A.marker}@example.test` }
      })
      if (res.statusCode !== 404) failures.push(`registration for a private event: ${brief(res)}`)
      const after = await snapshotOf(A)
      for (const [k, v] of before) {
        if (after.get(k) !== v) failures.push(`${k} changed: ${difference(v, String(after.get(k)))}`)
      }
      assert.deepEqual(failures, [])
    })

    void it('answers 404 to a member on another member\'s private resources, and changes nothing', async () => {
      const privateRoutes = covered.filter(
        r => r.params.length > 0 && r.auth === 'required' && isPrivate(r) && !isGlobal(r)
      )
      assert.ok(privateRoutes.length > 0, 'no route with a private fixture')
      for (const r of covered) await resolve(A, r)
      const before = await snapshotOf(A)
      const failures: string[] = []
      const order = (r: ApiRoute): number => r.method === 'GET' ? 0 : r.method === 'DELETE' ? 2 : 1
      for (const r of [...privateRoutes].sort((x, y) => order(x) - order(y))) {
        const { url, body } = await resolve(A, r)
        const res = await A.call(A.tokens.bob, request(r, url, body))
        if (res.statusCode !== 404) failures.push(`${r.name} (${url}) by bob: ${brief(res)}`)
        else if (shows(res, url, A.marker)) failures.push(`${r.name}: the 404 shows alice's data`)
      }
      const after = await snapshotOf(A)
      for (const [k, v] of before) if (after.get(k) !== v) failures.push(`alice's ${k} changed`)
      console.log(`private-resource matrix: ${privateRoutes.length} routes`)
      assert.deepEqual(failures, [])
    })

    /**
     * Shares every resource alice made in `w` with the whole tenant: events and spaces become
     * visible to every member (visibility 40, spaces published), contacts belong to the organization
     * all callers of `w` share. Bob then sees them all and holds no right on any of them.
     */
    async function shareWithTenant (w: World): Promise<void> {
      const all = async (url: string): Promise<Array<{ id: number, status?: string }>> => {
        const res = await w.call(w.tokens.alice, { method: 'GET', url })
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
        return res.json<{ items: Array<{ id: number, status?: string }> }>().items
      }
      for (const e of await all('/api/v1/events?size=100')) {
        const res = await w.call(w.tokens.alice, {
          method: 'PATCH',
          url: `/api/v1/events/${e.id}`,
          payload: { visibility: 40 }
        })
        assert.ok(res.statusCode < 300, `sharing event ${e.id}: ${res.body}`)
      }
      for (const sp of await all('/api/v1/spaces?size=100')) {
        if (sp.status !== 'draft') continue
        const patched = await w.call(w.tokens.alice, {
          method: 'PATCH',
          url: `/api/v1/spaces/${sp.id}`,
          payload: { visibility: 40 }
        })
        assert.ok(patched.statusCode < 300, `sharing space ${sp.id}: ${patched.body}`)
        const published = await w.call(w.tokens.alice, {
          method: 'POST',
          url: `/api/v1/spaces/${sp.id}/publish`,
          payload: {}
        })
        assert.ok(published.statusCode < 300, `publishing space ${sp.id}: ${published.body}`)
      }
    }

    void it('refuses every write on a resource a member sees but holds no right on, while he holds them on his own, ' +
      'and changes nothing', async () => {
      const C = await newWorld(t, 'tenant-c', { orgId: `org-${crypto.randomUUID()}` })
      for (const r of covered) await resolve(C, r)
      await shareWithTenant(C)
      // bob holds every right on resources of his own
      const own = await C.call(C.tokens.bob, { method: 'POST', url: '/api/v1/events', payload: { title: "bob's own" } })
      assert.equal(own.statusCode, 201, own.body)
      const seen = await C.call(C.tokens.bob, { method: 'GET', url: `/api/v1/events/${await C.need('events/:id')}` })
      assert.equal(seen.statusCode, 200, "bob must see alice's shared event for this check to mean anything")
      const before = await snapshotOf(C)
      const failures: string[] = []
      const writes = covered.filter(r => isWrite(r) && r.params.length > 0 && r.auth === 'required' && !isGlobal(r))
      const order = (r: ApiRoute): number => (r.method === 'DELETE' ? 1 : 0)
      for (const r of [...writes].sort((x, y) => order(x) - order(y))) {
        const { url, body } = await resolve(C, r)
        const res = await C.call(C.tokens.bob, request(r, url, body))
        if (res.statusCode !== 403 && res.statusCode !== 404) failures.push(`${r.name} (${url}) by bob: ${brief(res)}`)
        else if (problemIssues(res).length > 0) failures.push(`${r.name}: ${problemIssues(res).join('; ')}`)
      }
      const after = await snapshotOf(C)
      for (const [k, v] of before) {
        if (after.get(k) !== v) {
          failures.push(`alice's ${k} changed: ${v.slice(0, 120)} → ${String(after.get(k)).slice(0, 120)}`)
        }
      }
      console.log(`no-right matrix: ${writes.length} write routes on resources bob sees, ${before.size} reads compared`)
      assert.ok(writes.length > 20)
      assert.deepEqual(failures, [])
    })

    void it("changes nothing of alice's when a member points a write on his own resource at hers (links, spaces, " +
      'parents, milestones)', async () => {
      const C = await newWorld(t, 'tenant-c', { orgId: `org-${crypto.randomUUID()}` })
      for (const r of covered) await resolve(C, r)
      await shareWithTenant(C)
      const bobs = async (url: string, payload: unknown): Promise<string> => {
        const res = await C.call(C.tokens.bob, { method: 'POST', url, payload: payload as InjectOptions['payload'] })
        assert.equal(res.statusCode, 201, `${url}: ${res.body}`)
        return String(res.json<{ id: number }>().id)
      }
      const own: Record<string, string> = {
        events: await bobs('/api/v1/events', { title: "bob's own event" }),
        spaces: await bobs('/api/v1/spaces', { title: "bob's own space" })
      }
      // the ids a body may name, all alice's
      const hers: Record<string, string> = {
        space_id: await C.need('spaces/:id'),
        parent_id: await C.need('spaces/:id'),
        event_id: await C.need('events/:id'),
        target_id: await C.need('events/:id'),
        milestone_event_id: await C.need('events/:id'),
        contact_id: await C.need('contacts/:id')
      }
      const before = await snapshotOf(C)
      const failures: string[] = []
      const writes = covered.filter(
        r =>
          isWrite(r) &&
          r.auth === 'required' &&
          r.method !== 'DELETE' &&
          own[r.url.split('/')[3] ?? ''] !== undefined &&
          r.params.length === 1
      )
      for (const r of writes) {
        const body = await validBody(C, r)
        if (body === null || typeof body !== 'object' || Array.isArray(body)) continue
        const named = Object.keys(body).filter(k => hers[k] !== undefined)
        if (named.length === 0) continue
        const payload = Object.fromEntries(
          Object.entries(body).map(([k, v]) => [k, hers[k] !== undefined ? Number(hers[k]) : v])
        )
        const kind = r.url.split('/')[3] ?? ''
        const url = fillPath(r.url, { [`${kind}/:${r.params[0] ?? 'id'}`]: own[kind] ?? '' })
        const res = await C.call(C.tokens.bob, request(r, url, payload))
        if (res.statusCode >= 500) {
          failures.push(`${r.name} (${url}) by bob naming alice's ${named.join(', ')}: ${brief(res)}`)
        }
      }
      const after = await snapshotOf(C)
      for (const [k, v] of before) {
        if (after.get(k) !== v) failures.push(`alice's ${k} changed: ${difference(v, String(after.get(k)))}`)
      }
      assert.deepEqual(failures, [])
    })
  })
}

/** A body valid for tenant A, with A's marker replaced so B's answers can be searched for A's. */
function forTenantB (body: unknown, A: World, B: World): unknown {
  if (body === undefined) return undefined
  return JSON.parse(JSON.stringify(body).split(A.marker).join(B.marker)) as unknown
}

/** Where two answers first differ, with a little context on each side. */
function difference (a: string, b: string): string {
  let i = 0
  while (i < a.length && a[i] === b[i]) i++
  const from = Math.max(0, i - 60)
  return `…${a.slice(from, i + 100)} → …${b.slice(from, i + 100)}`
}
