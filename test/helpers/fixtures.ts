/**
 * Real resources for the route matrix, keyed by path parameter: `contacts/:id` is the `:id` that
 * follows `contacts` in a path. Each fixture is created through the public API by a member of
 * the tenant (`alice`), so the matrix can call every route with ids that exist.
 *
 * The matrix fails, naming the route, when a route has a path parameter without a fixture here:
 * a new route cannot be left out. Adding one is a few lines:
 *
 * @example
 *   'spaces/:id': {
 *     private: false,
 *     create: async w => String((await w.post('/api/v1/spaces', { title: w.marker })).id)
 *   },
 *   'attendees/:contact_id': {
 *     create: async (w) => {
 *       const contact = await w.need('contacts/:id')
 *       await w.post(`/api/v1/events/${await w.need('events/:id')}/attendees`, { contact_id: contact })
 *       return contact
 *     }
 *   }
 */
import crypto from 'node:crypto'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import type { TestApp } from './build-app.ts'
import { validToken } from './tokens.ts'
import { sampleValid } from './schema-values.ts'
import { paramKeyCandidates, type ApiRoute } from './routes.ts'

export interface Fixture {
  /** Creates the resource as `alice` (member) and returns the value of its path parameter. */
  create: (w: World) => Promise<string>
  /**
   * True when another member of the same tenant (`bob`, no organization) must get 404 on it:
   * the resource is alice's alone (a personal contact, a private event).
   */
  private?: boolean
  /** Not tenant data (the same for every tenant, e.g. the template registry): skipped by the tenant checks. */
  global?: boolean
}

export const FIXTURES: Record<string, Fixture> = {
  'contacts/:id': {
    private: true,
    create: async w =>
      String(
        (
          await w.post('/api/v1/contacts', {
            first_name: w.marker,
            last_name: 'Fixture',
            email: `${w.marker}@example.test`,
            company: w.marker,
            tags: [w.marker]
          })
        ).id
      )
  },

  // a draft space: its creator (and admins, managers) alone see it
  'spaces/:id': {
    private: true,
    create: async w => String((await w.post('/api/v1/spaces', { title: w.marker, description: w.marker })).id)
  },
  'spaces/:id/members/:user_id': {
    private: true,
    create: async w => {
      const user = `member-${w.marker}`
      await w.post(`/api/v1/spaces/${await w.need('spaces/:id')}/members`, { user_id: user, role: 'space_member' })
      return user
    }
  },
  'spaces/:id/managers/:user_id': {
    private: true,
    create: async w => {
      const user = `manager-${w.marker}`
      await w.post(`/api/v1/spaces/${await w.need('spaces/:id')}/managers`, {
        user_id: user,
        permissions: ['space:edit']
      })
      return user
    }
  },
  'spaces/:id/contacts/:contact_id': {
    private: true,
    create: async w => {
      const contact = await w.need('contacts/:id')
      await w.post(`/api/v1/spaces/${await w.need('spaces/:id')}/contacts`, { contact_id: contact })
      return contact
    }
  },
  'spaces/:id/parents/:parent_id': {
    private: true,
    create: async w => {
      const parent = String((await w.post('/api/v1/spaces', { title: `${w.marker} parent` })).id)
      await w.post(`/api/v1/spaces/${await w.need('spaces/:id')}/parents`, { parent_id: Number(parent) })
      return parent
    }
  },
  // an event with the default visibility (members of its spaces): alice's alone until shared
  'events/:id': {
    private: true,
    create: async w => String((await w.post('/api/v1/events', { title: w.marker, description: w.marker })).id)
  },
  'events/:event_id': { private: true, create: async w => await w.need('events/:id') },
  'events/:id/spaces/:space_id': {
    private: true,
    create: async w => {
      const space = await w.need('spaces/:id')
      await w.post(`/api/v1/events/${await w.need('events/:id')}/spaces`, { space_id: Number(space) })
      return space
    }
  },
  'event-templates/:id': { global: true, create: async () => 'generic' },
  'events/:id/attendees/:contact_id': {
    private: true,
    create: async w => {
      const contact = await w.need('contacts/:id')
      await w.post(`/api/v1/events/${await w.need('events/:id')}/attendees`, { contact_id: contact })
      return contact
    }
  },
  'events/:id/managers/:user_id': {
    private: true,
    create: async w => {
      const user = `event-manager-${w.marker}`
      await w.post(`/api/v1/events/${await w.need('events/:id')}/managers`, {
        user_id: user,
        role: 'event_manager:attendees'
      })
      return user
    }
  },
  // another private event of alice, as a milestone, a link target
  'events/:id/milestones/:milestone_event_id': {
    private: true,
    create: async w => {
      const other = String((await w.post('/api/v1/events', { title: `${w.marker} milestone` })).id)
      await w.post(`/api/v1/events/${await w.need('events/:id')}/milestones`, { milestone_event_id: Number(other) })
      return other
    }
  },
  'events/:id/links/:target_id': {
    private: true,
    create: async w => {
      const other = String((await w.post('/api/v1/events', { title: `${w.marker} link target` })).id)
      await w.post(`/api/v1/events/${await w.need('events/:id')}/links`, { target_id: Number(other) })
      return other
    }
  },
  'events/:id/documents/:document_id': {
    private: true,
    create: async w => {
      const doc = crypto.randomUUID()
      await w.post(`/api/v1/events/${await w.need('events/:id')}/documents/${doc}`)
      return doc
    }
  },
  'attachments/:id': {
    private: true,
    create: async w =>
      String(
        (
          await w.post(`/api/v1/events/${await w.need('events/:id')}/attachments`, {
            kind: 'document',
            ref: `https://example.test/${w.marker}.pdf`
          })
        ).id
      )
  },
  // a series of alice (an event of hers turned into one) and a link held by an occurrence
  'series/:id': {
    private: true,
    create: async w => {
      const anchor = String(
        (
          await w.post('/api/v1/events', {
            title: `${w.marker} series`,
            start_dt: '2031-03-02T10:00:00Z',
            end_dt: '2031-03-02T11:00:00Z'
          })
        ).id
      )
      const res = await w.call(w.tokens.alice, {
        method: 'POST',
        url: `/api/v1/events/${anchor}/series`,
        payload: { freq: 'daily', ends_on: 'after_n', end_count: 2 }
      })
      if (res.statusCode !== 201) {
        throw new Error(`fixture POST /api/v1/events/${anchor}/series answered ${res.statusCode}: ${res.body}`)
      }
      const occurrences = res.json<Array<{ id: number; series_id: number | null }>>()
      const seriesId = occurrences[0]?.series_id
      if (seriesId === null || seriesId === undefined) throw new Error('the series fixture has no series_id')
      w.seriesAnchor = anchor
      return String(seriesId)
    }
  },
  'series/:id/links/:target_id': {
    private: true,
    create: async w => {
      await w.need('series/:id')
      const other = String((await w.post('/api/v1/events', { title: `${w.marker} series link target` })).id)
      await w.post(`/api/v1/events/${w.seriesAnchor ?? ''}/links`, { target_id: Number(other) })
      return other
    }
  },
  // an automation of alice's private event
  'events/:id/automations/:rule_id': {
    private: true,
    create: async w =>
      String(
        (
          await w.post(`/api/v1/events/${await w.need('events/:id')}/automations`, {
            name: w.marker,
            trigger: { type: 'event.updated' },
            actions: []
          })
        ).id
      )
  },
  // a rule scoped to alice's private event
  'automation/rules/:rule_id': {
    private: true,
    create: async w =>
      String(
        (
          await w.post('/api/v1/automation/rules', {
            name: w.marker,
            scope: 'EVENT',
            scope_id: await w.need('events/:id'),
            actions: [],
            schedule: { event_type: 'event.updated' }
          })
        ).id
      )
  },
  // an execution of that rule (a manual run: queued, as no worker runs in tests)
  'automation/rules/:rule_id/executions/:id': {
    private: true,
    create: async w =>
      String((await w.post(`/api/v1/automation/rules/${await w.need('automation/rules/:rule_id')}/execute`, {})).id)
  },
  // an execution of the automation of alice's private event (a manual run)
  'events/:id/automations/:rule_id/executions/:execution_id': {
    private: true,
    create: async w => {
      const base =
        `/api/v1/events/${await w.need('events/:id')}/automations/${await w.need('events/:id/automations/:rule_id')}`
      await w.post(`${base}/execute`)
      const res = await w.call(w.tokens.alice, { method: 'GET', url: `${base}/executions` })
      const id = res.json<{ items: Array<{ id: string }> }>().items[0]?.id
      if (id === undefined) throw new Error(`fixture ${base}/executions is empty: ${res.body}`)
      return id
    }
  },

  // a webhook subscription (tenant admins only) to a public address (no delivery runs in tests)
  'webhooks/:id': {
    create: async w => {
      const res = await w.call(w.tokens.admin, {
        method: 'POST',
        url: '/api/v1/webhooks',
        payload: { url: `https://93.184.215.14/hooks/${w.marker}`, event_types: ['event.created'], description: w.marker }
      })
      if (res.statusCode !== 201) throw new Error(`fixture webhooks/:id: ${res.statusCode} ${res.body}`)
      return res.json<{ id: string }>().id
    }
  },
  // a delivery of that subscription: a queued ping
  'deliveries/:delivery_id': {
    create: async w => {
      const res = await w.call(w.tokens.admin, {
        method: 'POST',
        url: `/api/v1/webhooks/${await w.need('webhooks/:id')}/ping`
      })
      if (res.statusCode !== 202) throw new Error(`fixture deliveries/:delivery_id: ${res.statusCode} ${res.body}`)
      return res.json<{ id: string }>().id
    }
  },

  // a service account (tenant admins only) and a key of it (docs/api-keys.md)
  'service-accounts/:id': {
    create: async w => {
      const res = await w.call(w.tokens.admin, {
        method: 'POST',
        url: '/api/v1/service-accounts',
        payload: { name: `${w.marker} robot`, role: 'member', scopes: ['contacts:read'] }
      })
      if (res.statusCode !== 201) throw new Error(`fixture service-accounts/:id: ${res.statusCode} ${res.body}`)
      return String(res.json<{ id: number }>().id)
    }
  },
  'keys/:key_id': {
    create: async w => {
      const res = await w.call(w.tokens.admin, {
        method: 'POST',
        url: `/api/v1/service-accounts/${await w.need('service-accounts/:id')}/keys`,
        payload: {}
      })
      if (res.statusCode !== 201) throw new Error(`fixture keys/:key_id: ${res.statusCode} ${res.body}`)
      return String(res.json<{ id: number }>().id)
    }
  },

  // alice as a data subject (docs/privacy.md): her export is hers and the admins'; another member gets 404
  'users/:id': {
    private: true,
    create: async w => {
      // a request of hers records her claims: she is a user of the tenant from then on
      await w.call(w.tokens.alice, { method: 'GET', url: '/api/v1/contacts' })
      return `alice-${w.tenantId}`
    }
  },

  // alice's personal calendar feed token: hers alone (another member's token list never shows it)
  'feed-tokens/:id': {
    private: true,
    create: async w => String((await w.post('/api/v1/feed-tokens', { scope: 'personal' })).id)
  },

  // a published public space: its page needs no token
  'public/spaces/:id': {
    create: async w => {
      // no marker: every caller may see this one, and the marker stands for private data
      const id = String((await w.post('/api/v1/spaces', { title: `public ${crypto.randomUUID()}`, visibility: 40 })).id)
      await w.post(`/api/v1/spaces/${id}/publish`, {})
      return id
    }
  }
}

/** Request bodies that make a write valid, for routes whose schema alone does not (cross-field rules). */
export const VALID_BODIES: Record<string, (w: World) => Promise<unknown> | unknown> = {
  'PUT /api/v1/contacts/:id': w => ({ first_name: w.marker, is_favorite: false }),
  'PATCH /api/v1/contacts/:id/favorite': () => ({ is_favorite: true }),
  'POST /api/v1/contacts/upsert': w => ({
    contacts: [{ email: `${w.marker}-upsert@example.test`, first_name: w.marker }]
  }),
  // a text/csv body: sent as it is
  'POST /api/v1/contacts/import': w => `email,first_name\r\n${w.marker}-import@example.test,${w.marker}\r\n`,
  // a text/calendar body: sent as it is
  'POST /api/v1/spaces/:id/calendar-import': w => ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN',
    'BEGIN:VEVENT', `UID:${w.marker}@example.test`, `SUMMARY:${w.marker}`, 'DTSTART:20270301T090000Z', 'END:VEVENT',
    'END:VCALENDAR', ''].join('\r\n'),
  'POST /api/v1/events/:id/automations': w => ({ name: w.marker, trigger: { type: 'event.updated' }, actions: [] }),
  'PUT /api/v1/events/:id/automations/:rule_id': w => ({
    name: w.marker,
    trigger: { type: 'event.updated' },
    actions: []
  }),
  'PATCH /api/v1/events/:id/milestones/:milestone_event_id': () => ({ reset_to_derived: true }),
  // `inherit` (the schema's sample) is refused on an event without a series before any tenant check could show
  'PATCH /api/v1/events/:id/registration': () => ({ capacity: 10 }),
  'PATCH /api/v1/events/:id/series/registration': () => ({ capacity: 10 }),
  'POST /api/v1/webhooks': w => ({
    url: `https://93.184.215.14/hooks/${w.marker}`, event_types: ['event.created', 'contact.created']
  }),
  'PATCH /api/v1/webhooks/:id': w => ({ description: w.marker, event_types: ['*'] }),
  'POST /api/v1/service-accounts': w => ({ name: `${w.marker} ${crypto.randomUUID()}`, role: 'viewer' }),
  'PATCH /api/v1/service-accounts/:id': () => ({ role: 'viewer', scopes: ['contacts:read'] }),
  'POST /api/v1/service-accounts/:id/keys': () => ({ expires_in_days: 30 }),
  'POST /api/v1/service-accounts/:id/keys/:key_id/rotate': () => ({ overlap_hours: 1 })
}

/** The query string a route requires (its required query parameters with valid values), or ''. */
export function requiredQuery (route: ApiRoute): string {
  const q = new URLSearchParams()
  for (const p of route.operation.parameters ?? []) {
    if (p.in === 'query' && p.required === true) q.append(p.name, String(sampleValid(p.schema)))
  }
  const s = q.toString()
  return s === '' ? '' : `?${s}`
}

/** Routes (by name) whose path parameters need no fixture, with the value to use. */
export const FREE_PARAMS: Record<string, Record<string, string>> = {}

export interface World {
  t: TestApp
  tenantId: string
  /** a string unique to this tenant, put into every fixture so leaks can be searched for */
  marker: string
  tokens: { alice: string, bob: string, admin: string, viewer: string, none: string }
  /** the fixture value of a key, created on first use */
  need: (key: string) => Promise<string>
  /** POST as alice; throws unless 2xx; the JSON body */
  post: (url: string, body?: unknown) => Promise<Record<string, unknown>>
  call: (token: string | undefined, opts: InjectOptions) => Promise<LightMyRequestResponse>
  /** the anchor event of the `series/:id` fixture */
  seriesAnchor?: string
}

/**
 * A tenant with five callers: alice and bob (members), an admin, a viewer and a caller with no known role.
 * With `orgId`, every caller belongs to that organization (so alice's organization contacts are bob's to see).
 */
export async function newWorld (t: TestApp, name: string, options: { orgId?: string } = {}): Promise<World> {
  const tenantId = `${name}-${crypto.randomUUID()}`
  const marker = `m${crypto.randomBytes(6).toString('hex')}`
  const org = options.orgId !== undefined ? { orgId: options.orgId } : {}
  const tok = async (sub: string, roles: string[]) =>
    await validToken(t, {
      sub: `${sub}-${tenantId}`,
      tenant: tenantId,
      roles,
      email: `${sub}@${tenantId}.example.test`,
      ...org
    })
  const tokens = {
    alice: await tok('alice', ['member']),
    bob: await tok('bob', ['member']),
    admin: await tok('admin', ['admin']),
    viewer: await tok('viewer', ['viewer']),
    none: await tok('guest', ['guest'])
  }
  const cache = new Map<string, Promise<string>>()
  const call = async (token: string | undefined, opts: InjectOptions) => await t.app.inject({
    ...opts,
    headers: { ...opts.headers, ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) }
  })
  const w: World = {
    t,
    tenantId,
    marker,
    tokens,
    call,
    need: async (key) => {
      let p = cache.get(key)
      if (p === undefined) {
        const f = FIXTURES[key]
        if (f === undefined) throw new Error(`no fixture for ${key}: add one to test/helpers/fixtures.ts`)
        p = f.create(w)
        cache.set(key, p)
      }
      return await p
    },
    post: async (url, body = {}) => {
      const res = await call(tokens.alice, { method: 'POST', url, payload: body as InjectOptions['payload'] })
      if (res.statusCode >= 300) throw new Error(`fixture POST ${url} answered ${res.statusCode}: ${res.body}`)
      return res.body === '' ? {} : res.json<Record<string, unknown>>()
    }
  }
  return w
}

/** The registry key used for each path parameter of a route: [short key, chosen key or undefined]. */
function chosenKeys (route: ApiRoute): Array<[string, string | undefined]> {
  const free = FREE_PARAMS[route.name] ?? {}
  return paramKeyCandidates(route.url).map(([specific, short]) => [
    short,
    FIXTURES[specific] !== undefined
      ? specific
      : FIXTURES[short] !== undefined || free[short] !== undefined
        ? short
        : undefined
  ])
}

/** The fixture keys that a route needs and the registry lacks. */
export function missingFixtures (route: ApiRoute): string[] {
  return chosenKeys(route).filter(([, chosen]) => chosen === undefined).map(([short]) => short)
}

/** Path values (by short key) for every parameter of a route, created in the world as needed. */
export async function pathValues (w: World, route: ApiRoute): Promise<Record<string, string>> {
  const free = FREE_PARAMS[route.name] ?? {}
  const out: Record<string, string> = {}
  for (const [short, chosen] of chosenKeys(route)) out[short] = free[short] ?? await w.need(chosen ?? short)
  return out
}

/** Whether a route addresses data shared by all tenants (no tenant check applies). */
export function isGlobal (route: ApiRoute): boolean {
  return chosenKeys(route).some(([, chosen]) => chosen !== undefined && FIXTURES[chosen]?.global === true)
}

/** Whether a route's resource (its first path parameter) is private to its creator. */
export function isPrivate (route: ApiRoute): boolean {
  const first = chosenKeys(route)[0]?.[1]
  return first !== undefined && FIXTURES[first]?.private === true
}

/** A body the route accepts as far as its schema goes (or the registered valid body). */
export async function validBody (w: World, route: ApiRoute): Promise<unknown> {
  const make = VALID_BODIES[route.name]
  if (make !== undefined) return await make(w)
  if (route.bodySchema === undefined) return undefined
  return sampleValid(route.bodySchema)
}
