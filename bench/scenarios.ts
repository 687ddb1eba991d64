/**
 * The scenarios, one table entry each: the route it needs (looked up in the service's OpenAPI
 * document; a missing route is reported "not measured: route missing"), what our service is sent
 * and what the baseline is sent for the same work. Callers are spread over many users and
 * tenants; request factories run per request.
 */
import crypto from 'node:crypto'
import { signBody } from '../src/modules/identity/identity.idp-signature.ts'
import type { RequestFactory, RequestSpec } from './load.ts'
import type { Manifest } from './manifest.ts'
import { BENCH_RULE, BIG_TENANT, ORG, TENANTS, tenantId, userId } from './seed.ts'

/**
 * ours: the service; baseline: the same statements run bare (bench/baseline-handlers.ts); reference:
 * the fastest SQL written for the same answer (bench/reference-handlers.ts), for list-shaped scenarios
 */
export type Side = 'ours' | 'baseline' | 'reference'

export interface Caller { tenant: string, user: string }

export interface BenchContext {
  side: Side
  manifest: Manifest
  /** a valid bearer token of a member of ORG (signed with the dev key) */
  token (caller: Caller): string
  /** tokens signed by a key the service does not trust */
  forged: string[]
  webhookSecret: string
}

export type Group = 'single-read' | 'list' | 'write' | 'auth' | 'page'

export interface Scenario {
  name: string
  title: string
  group: Group
  /** "METHOD /path/{param}" as the OpenAPI document names it */
  route: string
  connections?: number
  /** measured again at light load (BENCH light connections) for a p95 budget */
  p95BudgetMs?: number
  build?: (ctx: BenchContext) => RequestFactory
  /** measured against a reference too: the fastest SQL for the same answer (bench/reference-handlers.ts) */
  reference?: boolean
  /**
   * measured against the wire too: a bare `node:http` server sending the service's own answers to the scenario's
   * requests from memory (bench/wire-server.ts), with the same load generator
   */
  wire?: boolean
  /** false: no baseline (a scenario measured against the wire alone) */
  baseline?: false
  /**
   * how many items an answer holds, or aggregates, for an answer that grows with the data: its light-load p95 per
   * item is what the growth line holds (bench/report.ts, `growth`)
   */
  items?: (body: Buffer) => number
  /** before the scenario's measurements, against our service (e.g. walking a list to a deep cursor) */
  prepare?: (ctx: BenchContext, url: string) => Promise<void>
}

/** Scenarios that read: each measured at light load too (p95 on every side), and compared across scales. */
export const isRead = (s: Scenario): boolean => s.group === 'single-read' || s.group === 'list' || s.group === 'page'

const jsonOf = <T>(body: Buffer): T => JSON.parse(body.toString('utf8')) as T

const pick = <T>(xs: readonly T[]): T => {
  const x = xs[Math.floor(Math.random() * xs.length)]
  if (x === undefined) throw new Error('nothing to pick from')
  return x
}

/** Members whose tokens the scenarios use: 200 in the largest tenant, 10 in each other tenant. */
export const MEMBERS_BIG = 200
export const MEMBERS_OTHER = 10
/** Tenant admins of the largest tenant: users ADMINS_FROM … ADMINS_FROM + ADMINS - 1 */
export const ADMINS_FROM = 901
export const ADMINS = 10

export function someCaller (tenant?: string): Caller {
  const t = tenant ?? tenantId(Math.floor(Math.random() * TENANTS))
  const n = 1 + Math.floor(Math.random() * (t === BIG_TENANT ? MEMBERS_BIG : MEMBERS_OTHER))
  return { tenant: t, user: userId(n) }
}

function callerQuery (c: Caller): string {
  return `t=${encodeURIComponent(c.tenant)}&u=${encodeURIComponent(c.user)}&o=${ORG}`
}

const json = { 'content-type': 'application/json' }

/** Our request, or the baseline's equivalent: the scenario name as path, the caller in the query string. */
function request (
  ctx: BenchContext,
  name: string,
  caller: Caller | undefined,
  ours: Omit<RequestSpec, 'headers'> & { headers?: Record<string, string> },
  baseline: Record<string, string | number>,
  auth = true
): RequestSpec {
  if (ctx.side === 'ours') {
    return {
      ...ours,
      headers: {
        ...(auth && caller !== undefined ? { authorization: `Bearer ${ctx.token(caller)}` } : {}),
        ...ours.headers
      }
    }
  }
  const qs = Object.entries(baseline)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&')
  const { onResponse, body } = ours
  return {
    method: ours.method,
    path:
      `/${ctx.side === 'reference' ? 'r' : 'b'}/${name}?${caller !== undefined ? callerQuery(caller) : ''}` +
      `${qs !== '' ? `&${qs}` : ''}`,
    headers: body !== undefined ? json : {},
    ...(body !== undefined ? { body } : {}),
    ...(onResponse !== undefined ? { onResponse } : {})
  }
}

/** Events a connection patches: each held by one request at a time, its revision kept from the ETag. */
function patchPool (ctx: BenchContext) {
  // ours takes the even entries, the baseline the odd ones: on PGlite the two sides have separate copies of the data
  const mine = ctx.manifest.patchable.filter((_, i) => i % 2 === (ctx.side === 'ours' ? 0 : 1))
  const free = [...mine]
  return () => {
    const ev = free.shift() ?? pick(mine)
    return { ev, done: () => { free.push(ev) } }
  }
}

let sequence = Date.now() * 1000

/** The key (start, id) of the last row a cursor names (the bench reads its own cursors; clients must not) */
function cursorKey (cursor: string): [string, number] {
  const body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { k: [string, number] }
  return body.k
}

/**
 * The deep-page scenario: a few members of the largest tenant, each with the cursor of page 500
 * (rows 9 981 – 10 000) of the published events since the earliest `listAfter`, by start; walked once
 * before the measurements (`prepare`), pages of 100 and then of 20.
 */
const DEEP_CALLERS = 5
const DEEP_PAGE = 500
const deepCursors: Array<{ caller: Caller, cursor: string }> = []
const listQuery = (after: string) =>
  `status=published&start_dt_after=${encodeURIComponent(after)}&sort_by=start_dt&sort_dir=asc`

async function walkToDeepPage (ctx: BenchContext, url: string): Promise<void> {
  const log = (line: string) => { process.stdout.write(`${line}\n`) }
  if (deepCursors.length > 0) return
  const after = ctx.manifest.listAfter[0] ?? ''
  for (let u = 1; u <= DEEP_CALLERS; u++) {
    const caller = { tenant: BIG_TENANT, user: userId(u) }
    let cursor: string | null = null
    let depth = 0
    while (depth < (DEEP_PAGE - 1) * 20) {
      const size = depth + 100 <= (DEEP_PAGE - 1) * 20 ? 100 : 20
      const res = await fetch(
        `${url}/api/v1/events?${listQuery(after)}&size=${size}${cursor !== null ? `&cursor=${cursor}` : ''}`,
        { headers: { authorization: `Bearer ${ctx.token(caller)}` } }
      )
      const body = await res.json() as { items: unknown[], next_cursor: string | null }
      if (res.status !== 200) {
        throw new Error(`list-events-deep: status ${res.status} walking the list of ${caller.user}`)
      }
      // a small data set (--scale below 1) ends before page 500: the deepest full page stands in for it
      if (body.next_cursor === null) break
      cursor = body.next_cursor
      depth += body.items.length
    }
    if (cursor === null) throw new Error(`list-events-deep: ${caller.user} sees one page only`)
    if (depth < (DEEP_PAGE - 1) * 20) {
      log(
        `list-events-deep: ${caller.user}'s list ends before page ${DEEP_PAGE}: ` +
        `measuring page ${Math.floor(depth / 20) + 1}`
      )
    }
    deepCursors.push({ caller, cursor })
  }
}

/** The events list by cursor, on page 1 or page 500, for the same callers and query. */
function cursorList (ctx: BenchContext, deep: boolean): RequestFactory {
  const after = ctx.manifest.listAfter[0] ?? ''
  return () => {
    const d = pick(deepCursors)
    const [ks, ki] = deep ? cursorKey(d.cursor) : ['', 0]
    return request(ctx, 'list-events', d.caller,
      { method: 'GET', path: `/api/v1/events?${listQuery(after)}&size=20${deep ? `&cursor=${d.cursor}` : ''}` },
      { after, page: 1, size: 20, ...(deep ? { ks, ki } : {}) })
  }
}

/**
 * A number of the largest tenant (E.164, `+4144` and 7 digits) as a caller types it in a search, one of three ways
 * in turn (docs/contacts.md, "Phone numbers"): international (`+41 44 123 45 67`: that number, equal to its reversed
 * digits), national with the request's region (`044 123 45 67`, `phone_region=CH`: the same number, read with the
 * region), or its last 6 digits (`234567`: the end of numbers, a prefix of the reversed digits). Each also runs the
 * text search of names, e-mail and company. The last 6 digits are taken from numbers where they do not start with 0:
 * the service drops a term's leading zeros before it counts 6 digits, so `001234` is a text search only. A data set
 * too small to hold such numbers (below scale 0.25) searches the national number without its 0 (`441234567`).
 */
let phoneForm = 0
function phoneTerm (phones: readonly string[]): { query: string, region?: string } {
  const form = phoneForm++ % 3
  if (form === 2) {
    const suffixed = phones.filter(p => p.at(-6) !== '0')
    return { query: suffixed.length > 0 ? pick(suffixed).slice(-6) : pick(phones).slice(3) }
  }
  const d = pick(phones).slice(-7)
  const spaced = `${d.slice(0, 3)} ${d.slice(3, 5)} ${d.slice(5)}`
  return form === 0 ? { query: `+41 44 ${spaced}` } : { query: `044 ${spaced}`, region: 'CH' }
}

/** A phone search of the list (`search`) or of search (`query`), for a member of the largest tenant. */
function phoneSearchRequest (ctx: BenchContext, list: boolean): RequestSpec {
  const c = someCaller(BIG_TENANT)
  const { query, region } = phoneTerm(ctx.manifest.phones)
  const withRegion = region !== undefined ? `&phone_region=${region}` : ''
  const path = list
    ? `/api/v1/contacts?search=${encodeURIComponent(query)}&page=1&size=20${withRegion}`
    : `/api/v1/contacts/search?query=${encodeURIComponent(query)}&limit=20${withRegion}`
  return request(ctx, list ? 'list-contacts-phone' : 'search-contacts-phone', c, { method: 'GET', path },
    { query, ...(list ? { page: 1, size: 20 } : { limit: 20 }), ...(region !== undefined ? { region } : {}) })
}

/**
 * GET /contacts/duplicates, first page, for a member of the largest tenant (who sees its 400 000 contacts); the
 * baseline's handler `contact-duplicates` takes the reason as the service does.
 */
function duplicatesRequest (ctx: BenchContext, reason?: string): RequestSpec {
  const c = someCaller(BIG_TENANT)
  return request(ctx, 'contact-duplicates', c,
    { method: 'GET', path: `/api/v1/contacts/duplicates?limit=20${reason !== undefined ? `&reason=${reason}` : ''}` },
    { limit: 20, ...(reason !== undefined ? { reason } : {}) })
}

/** Names `--only` takes for several scenarios at once. */
export const SCENARIO_SETS: Record<string, string[]> = {
  // issue #23: phone search and duplicates (docs/contacts.md)
  'contacts-crm': ['search-contacts-phone', 'list-contacts-phone', 'contact-duplicates', 'contact-duplicates-email']
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'get-event',
    title: 'GET one event',
    group: 'single-read',
    route: 'GET /api/v1/events/{id}',
    build: ctx => () => {
      const c = someCaller()
      const id = pick(ctx.manifest.events[c.tenant] ?? [])
      return request(ctx, 'get-event', c, { method: 'GET', path: `/api/v1/events/${id}` }, { id })
    }
  },
  {
    // what every authenticated request costs before its own work: the token checked, the policy, the tenant's
    // transaction (BEGIN, the scope, COMMIT) around one statement that reads an index and finds nothing
    name: 'floor',
    wire: true,
    title: "The floor: an authenticated request in the tenant's scope (the caller's feed tokens, none)",
    group: 'single-read',
    route: 'GET /api/v1/feed-tokens',
    build: ctx => () => {
      const c = someCaller()
      return request(ctx, 'floor', c, { method: 'GET', path: '/api/v1/feed-tokens' }, {})
    }
  },
  {
    name: 'get-contact',
    title: 'GET one contact',
    group: 'single-read',
    route: 'GET /api/v1/contacts/{id}',
    build: ctx => () => {
      const c = someCaller()
      const id = pick(ctx.manifest.contacts[c.tenant] ?? [])
      return request(ctx, 'get-contact', c, { method: 'GET', path: `/api/v1/contacts/${id}` }, { id })
    }
  },
  {
    name: 'list-events',
    reference: true,
    title: 'List events (published, start after, by start, page 1-5 of 20)',
    group: 'list',
    route: 'GET /api/v1/events',
    build: ctx => () => {
      const c = someCaller(BIG_TENANT)
      const after = pick(ctx.manifest.listAfter)
      const page = 1 + Math.floor(Math.random() * 5)
      return request(
        ctx,
        'list-events',
        c,
        {
          method: 'GET',
          path:
            `/api/v1/events?status=published&start_dt_after=${encodeURIComponent(after)}` +
            `&sort_by=start_dt&sort_dir=asc&page=${page}&size=20`
        },
        { after, page, size: 20 }
      )
    }
  },
  {
    name: 'list-events-first',
    reference: true,
    title: 'List events by cursor, page 1 (published since the earliest date, by start)',
    group: 'list',
    route: 'GET /api/v1/events',
    prepare: walkToDeepPage,
    build: ctx => cursorList(ctx, false)
  },
  {
    name: 'list-events-deep',
    reference: true,
    title: `List events by cursor, page ${DEEP_PAGE} (the same callers and query)`,
    group: 'list',
    route: 'GET /api/v1/events',
    prepare: walkToDeepPage,
    build: ctx => cursorList(ctx, true)
  },
  {
    name: 'list-contacts',
    reference: true,
    title: 'List contacts (newest first, page 1-5 of 20, largest tenant)',
    group: 'list',
    route: 'GET /api/v1/contacts',
    build: ctx => () => {
      const c = someCaller(BIG_TENANT)
      const page = 1 + Math.floor(Math.random() * 5)
      return request(
        ctx,
        'list-contacts',
        c,
        { method: 'GET', path: `/api/v1/contacts?page=${page}&size=20` },
        { page, size: 20 }
      )
    }
  },
  {
    name: 'search-contacts',
    reference: true,
    title: 'Contacts search (trigram, largest tenant)',
    group: 'list',
    route: 'GET /api/v1/contacts/search',
    p95BudgetMs: 20,
    build: ctx => () => {
      const c = someCaller(BIG_TENANT)
      const term = pick(ctx.manifest.searchTerms)
      return request(
        ctx,
        'search-contacts',
        c,
        { method: 'GET', path: `/api/v1/contacts/search?query=${encodeURIComponent(term)}&limit=20` },
        { query: term, limit: 20 }
      )
    }
  },
  {
    name: 'search-contacts-phone',
    title: 'Contacts search by phone number (international, national, last 6 digits; largest tenant)',
    group: 'list',
    route: 'GET /api/v1/contacts/search',
    p95BudgetMs: 20,
    build: ctx => () => phoneSearchRequest(ctx, false)
  },
  {
    name: 'list-contacts-phone',
    title: 'List contacts searched by phone number (page 1 of 20, largest tenant)',
    group: 'list',
    route: 'GET /api/v1/contacts',
    p95BudgetMs: 20,
    build: ctx => () => phoneSearchRequest(ctx, true)
  },
  {
    name: 'contact-duplicates',
    title: 'Duplicate contacts, first page of 20 groups (all reasons, largest tenant)',
    group: 'list',
    route: 'GET /api/v1/contacts/duplicates',
    p95BudgetMs: 35,
    build: ctx => () => duplicatesRequest(ctx)
  },
  {
    name: 'contact-duplicates-email',
    title: 'Duplicate contacts by e-mail, first page (walks its 20 000-entry budget)',
    group: 'list',
    route: 'GET /api/v1/contacts/duplicates',
    p95BudgetMs: 100,
    build: ctx => () => duplicatesRequest(ctx, 'email')
  },
  {
    name: 'calendar-month',
    reference: true,
    wire: true,
    title: 'Calendar month of the largest tenant',
    group: 'list',
    route: 'GET /api/v1/events/calendar',
    p95BudgetMs: 25,
    items: body => jsonOf<{ items: unknown[] }>(body).items.length,
    build: ctx => () => {
      const c = someCaller(BIG_TENANT)
      const { start, end } = ctx.manifest.month
      return request(
        ctx,
        'calendar-month',
        c,
        { method: 'GET', path: `/api/v1/events/calendar?start_date=${start}&end_date=${end}&timezone=UTC` },
        { start, end }
      )
    }
  },
  {
    name: 'calendar-month-br',
    wire: true,
    baseline: false,
    title: 'Calendar month of the largest tenant, asked for brotli (Accept-Encoding: br)',
    group: 'list',
    route: 'GET /api/v1/events/calendar',
    build: ctx => () => {
      const { start, end } = ctx.manifest.month
      return request(ctx, 'calendar-month', someCaller(BIG_TENANT), {
        method: 'GET',
        path: `/api/v1/events/calendar?start_date=${start}&end_date=${end}&timezone=UTC`,
        headers: { 'accept-encoding': 'br' }
      }, { start, end })
    }
  },
  {
    name: 'get-series',
    title: 'GET series (200 occurrences, attendee counts)',
    group: 'page',
    route: 'GET /api/v1/events/{id}/series',
    connections: 10,
    items: body => jsonOf<{ occurrences: unknown[] }>(body).occurrences.length,
    build: ctx => () => {
      const c = someCaller(BIG_TENANT)
      const id = pick(ctx.manifest.seriesEvents)
      return request(
        ctx,
        'get-series',
        c,
        { method: 'GET', path: `/api/v1/events/${id}/series?limit=200` },
        { id, limit: 200 }
      )
    }
  },
  {
    name: 'space-analytics',
    reference: true,
    title: 'Space analytics (1 000 linked events)',
    group: 'page',
    route: 'GET /api/v1/spaces/{id}/analytics',
    connections: 10,
    p95BudgetMs: 100,
    // the linked events it aggregates
    items: body => jsonOf<{ summary: { events_published: number } }>(body).summary.events_published,
    build: ctx => () => {
      // the creator and the five managers of the showcase
      const c = { tenant: ctx.manifest.showcase.tenant, user: userId(1 + Math.floor(Math.random() * 6)) }
      const id = ctx.manifest.showcase.id
      return request(ctx, 'space-analytics', c, { method: 'GET', path: `/api/v1/spaces/${id}/analytics` }, { id })
    }
  },
  {
    name: 'space-activity',
    reference: true,
    title: 'Space activity feed (newest 20 of the showcase)',
    group: 'page',
    route: 'GET /api/v1/spaces/{id}/activity',
    build: ctx => () => {
      // the creator and the five managers of the showcase
      const c = { tenant: ctx.manifest.showcase.tenant, user: userId(1 + Math.floor(Math.random() * 6)) }
      const id = ctx.manifest.showcase.id
      return request(
        ctx,
        'space-activity',
        c,
        { method: 'GET', path: `/api/v1/spaces/${id}/activity?size=20` },
        { id, size: 20 }
      )
    }
  },
  {
    name: 'rule-executions',
    reference: true,
    title: "Automation executions (newest 20 of one rule's history)",
    group: 'page',
    route: 'GET /api/v1/automation/rules/{rule_id}/executions',
    build: ctx => () => {
      // tenant admins of the largest tenant
      const c = { tenant: BIG_TENANT, user: userId(ADMINS_FROM + crypto.randomInt(0, ADMINS)) }
      return request(
        ctx,
        'rule-executions',
        c,
        { method: 'GET', path: `/api/v1/automation/rules/${BENCH_RULE}/executions?size=20` },
        { id: BENCH_RULE, size: 20 }
      )
    }
  },
  {
    name: 'space-feed',
    wire: true,
    baseline: false,
    title: 'Calendar feed of the public showcase space (anonymous, iCalendar)',
    group: 'page',
    route: 'GET /api/v1/spaces/{id}/calendar.ics',
    items: body => body.toString('utf8').split('BEGIN:VEVENT').length - 1,
    build: ctx => () =>
      request(ctx, 'space-feed', undefined,
        { method: 'GET', path: `/api/v1/spaces/${ctx.manifest.showcase.id}/calendar.ics` }, {}, false)
  },
  {
    name: 'space-feed-gzip',
    wire: true,
    baseline: false,
    title: 'Calendar feed of the public showcase space, asked for gzip (Accept-Encoding: gzip)',
    group: 'page',
    route: 'GET /api/v1/spaces/{id}/calendar.ics',
    build: ctx => () =>
      request(ctx, 'space-feed', undefined, {
        method: 'GET',
        path: `/api/v1/spaces/${ctx.manifest.showcase.id}/calendar.ics`,
        headers: { 'accept-encoding': 'gzip' }
      }, {}, false)
  },
  {
    name: 'public-space',
    reference: true,
    title: 'Public space page (anonymous)',
    group: 'page',
    route: 'GET /api/v1/public/spaces/{id}',
    build: ctx => () =>
      request(
        ctx,
        'public-space',
        undefined,
        { method: 'GET', path: `/api/v1/public/spaces/${ctx.manifest.showcase.handle}` },
        { handle: ctx.manifest.showcase.handle },
        false
      )
  },
  {
    name: 'create-contact',
    title: 'POST contact',
    group: 'write',
    route: 'POST /api/v1/contacts',
    build: ctx => () => {
      const c = someCaller()
      const n = crypto.randomInt(1e9)
      const body = JSON.stringify({
        first_name: 'Bench',
        last_name: `Writer${n}`,
        email: `bench.writer${n}@example.com`,
        company: 'Bench Ltd'
      })
      return request(ctx, 'create-contact', c, { method: 'POST', path: '/api/v1/contacts', headers: json, body }, {})
    }
  },
  {
    name: 'patch-event',
    title: 'PATCH event with If-Match',
    group: 'write',
    route: 'PATCH /api/v1/events/{id}',
    build: ctx => {
      const take = patchPool(ctx)
      return () => {
        const { ev, done } = take()
        const c = { tenant: ev.tenant, user: ev.creator }
        const ifMatch = `"${ev.revision}"`
        const body = JSON.stringify({ title: `Renamed ${crypto.randomInt(1e6)}` })
        const onResponse = (status: number, headers: Record<string, string | string[]>) => {
          const etag = headers.etag ?? headers.ETag
          if (typeof etag === 'string' && /^"\d+"$/.test(etag)) ev.revision = Number(etag.slice(1, -1))
          if (status !== 412) done()
        }
        return request(
          ctx,
          'patch-event',
          c,
          {
            method: 'PATCH',
            path: `/api/v1/events/${ev.id}`,
            headers: { ...json, 'if-match': ifMatch },
            body,
            onResponse
          },
          { id: ev.id, if_match: ifMatch }
        )
      }
    }
  },
  {
    name: 'create-series',
    title: 'Create a weekly series with 500 occurrences',
    group: 'write',
    route: 'POST /api/v1/events/with-series',
    connections: 10,
    p95BudgetMs: 150,
    build: ctx => () => {
      const c = someCaller()
      const start = new Date(Date.UTC(2027, 0, 4 + crypto.randomInt(0, 300), 18))
      const body = JSON.stringify({
        title: `Weekly ${crypto.randomInt(1e6)}`,
        start_dt: start.toISOString(),
        end_dt: new Date(start.getTime() + 2 * 3_600_000).toISOString(),
        timezone: 'UTC',
        series: { freq: 'weekly', repeat_days: [((start.getUTCDay() + 6) % 7) + 1], ends_on: 'after_n', end_count: 500 }
      })
      return request(
        ctx,
        'create-series',
        c,
        { method: 'POST', path: '/api/v1/events/with-series', headers: json, body },
        {}
      )
    }
  },
  {
    name: 'bulk-attendees',
    title: 'Bulk add 500 attendees',
    group: 'write',
    route: 'POST /api/v1/events/{id}/attendees/bulk',
    connections: 10,
    build: ctx => () => {
      // tenant admins of the largest tenant (event permission attendees:write)
      const c = { tenant: BIG_TENANT, user: userId(ADMINS_FROM + crypto.randomInt(0, ADMINS)) }
      const id = pick(ctx.manifest.events[BIG_TENANT] ?? [])
      const from = crypto.randomInt(0, Math.max(1, ctx.manifest.bulkContacts.length - 500))
      const body = JSON.stringify({ contact_ids: ctx.manifest.bulkContacts.slice(from, from + 500) })
      return request(
        ctx,
        'bulk-attendees',
        c,
        { method: 'POST', path: `/api/v1/events/${id}/attendees/bulk`, headers: json, body },
        { id }
      )
    }
  },
  {
    name: 'idp-webhook',
    title: 'Webhook delivery (identity provider, signed)',
    group: 'write',
    route: 'POST /api/v1/integrations/idp/webhook',
    build: ctx => () => {
      const c = someCaller()
      const raw = JSON.stringify({
        aggregateID: c.user,
        aggregateType: 'user',
        resourceOwner: c.tenant,
        instanceID: 'bench',
        sequence: ++sequence,
        event_type: 'user.human.profile.changed',
        event_payload: { displayName: `User ${c.user} ${sequence % 1000}` }
      })
      return request(
        ctx,
        'idp-webhook',
        undefined,
        {
          method: 'POST',
          path: '/api/v1/integrations/idp/webhook',
          headers: { ...json, 'idp-signature': signBody(ctx.webhookSecret, raw) },
          body: raw
        },
        {},
        false
      )
    }
  },
  {
    name: 'unauthorized',
    wire: true,
    title: '401 path (token signed by an unknown key)',
    group: 'auth',
    route: 'GET /api/v1/events/{id}',
    build: ctx => () => {
      const token = pick(ctx.forged)
      return request(
        ctx,
        'unauthorized',
        undefined,
        {
          method: 'GET',
          path: `/api/v1/events/${crypto.randomInt(1, 100_000)}`,
          headers: { authorization: `Bearer ${token}` }
        },
        {},
        false
      )
    }
  }
]
