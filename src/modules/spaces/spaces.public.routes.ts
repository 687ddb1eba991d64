/**
 * The public space page, `GET /api/v1/public/spaces/{id}`: no credential needed. `id` is the
 * numeric space id or the space's public handle; either is looked up in the public directory
 * (`public_spaces`), which holds only published public spaces, to find the tenant. Only public data
 * leaves: people appear as previews (display name, initials, avatar), never e-mails or ids.
 *
 * The same page as HTML (spaces.public-html.ts): answered by this route when `Accept` prefers
 * `text/html` to JSON, and always by `GET /api/v1/public/spaces/{id}/page.html`; rendered from the
 * same page data and cache entry (the HTML of an entry is rendered once).
 */
import crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { etagMatches } from '../../platform/http/conditional.ts'
import { error404NotFound } from '../../platform/http/errors.ts'
import { withHtmlAnswer } from '../../platform/http/html-answer.ts'
import { KeptPublicAnswers } from '../../platform/public-answers.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { activeManager, canManageSpace, isSpaceMember } from './spaces.access.repository.ts'
import { previewOf, publicAvatar, publicName } from './spaces.names.ts'
import {
  eventPagePath, HTML_HEADERS, htmlEtag, prefersHtml, renderPublicPage, type PublicPageData
} from './spaces.public-html.ts'
import * as pub from './spaces.public.repository.ts'
import * as repo from './spaces.repository.ts'
import { PublicSpaceParams, SpacePage } from './spaces.schemas.ts'

/**
 * What the anonymous page's Cache-Control allows any cache: seconds fresh (and five times that stale while
 * revalidating)
 */
const MAX_AGE = 60

/** A page: its data (the JSON page, its events with the HTML's extra fields), its ETag, its HTML once rendered. */
interface PageEntry { tenantId: string, page: PublicPageData, etag: string, html?: string }

function parseRef (raw: string): { id: number } | { handle: string } | undefined {
  if (/^[1-9][0-9]{0,15}$/.test(raw)) return { id: Number(raw) }
  if (/^[a-z0-9][a-z0-9-]{0,99}$/.test(raw)) return { handle: raw }
  return undefined
}

const omitNull = <T extends Record<string, unknown>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], null>
  }

async function viewerOf (
  trx: Tx,
  auth: AuthContext | null,
  tenantId: string,
  space: { id: number; creator_id: string }
) {
  if (auth === null) return undefined
  if (auth.tenantId !== tenantId) return { can_manage: false, can_open_in_studio: false, can_request_join: false }
  const canRead = auth.permissions.has('spaces:read')
  const involved =
    space.creator_id === auth.userId ||
    (await activeManager(trx, tenantId, space.id, auth.userId)) !== undefined ||
    (await isSpaceMember(trx, tenantId, space.id, auth.userId))
  return {
    can_manage: auth.permissions.has('spaces:write') && (await canManageSpace(trx, auth, space, 'space:edit')),
    can_open_in_studio: canRead,
    can_request_join: canRead && !involved
  }
}

async function buildPage (
  trx: Tx,
  tenantId: string,
  id: number,
  auth: AuthContext | null,
  baseUrl: string
): Promise<PublicPageData | undefined> {
  const space = await pub.findPublicSpace(trx, tenantId, id)
  if (space === undefined) return undefined
  const [children, managers, members, events, owner] = [
    await pub.publicChildren(trx, tenantId, id),
    await pub.managerProfiles(trx, tenantId, id),
    await pub.memberProfiles(trx, tenantId, id),
    await pub.publicEvents(trx, tenantId, id),
    await pub.ownerProfile(trx, tenantId, space.creator_id)
  ]
  const shown = (s: {
    id: number
    title: string
    description: string
    timezone: string
    visibility: number
    published_at: Date | null
    parent_id: number | undefined
  }) =>
    omitNull({
      id: s.id,
      title: s.title,
      description: s.description,
      timezone: s.timezone,
      visibility: s.visibility,
      parent_id: s.parent_id,
      published_at: s.published_at
    })
  const viewer = await viewerOf(trx, auth, tenantId, space)
  const ownerAvatar = publicAvatar(owner?.avatar_url)
  return {
    space: shown(space),
    subspaces: children.items.map(shown),
    managers: managers.items.map(p => previewOf(p, 'Space manager')),
    members: members.items.map(p => previewOf(p, 'Member')),
    stats: {
      events_count: events.total,
      managers_count: managers.total,
      members_count: members.total,
      subspaces_count: children.total
    },
    upcoming_events: events.items.map(e => omitNull({ ...e, page_url: `${baseUrl}${eventPagePath(e.id)}` })),
    ...(owner !== undefined
      ? {
          owner: {
            name: publicName(owner, 'Space owner'),
            type: 'user',
            ...(ownerAvatar !== undefined ? { avatar_url: ownerAvatar } : {})
          }
        }
      : {}),
    ...(viewer !== undefined ? { viewer } : {})
  }
}

/** A hash of the page data (the events' extra fields of the HTML included) */
const etagOf = (page: PublicPageData): string =>
  `W/"${crypto.createHash('sha256').update(JSON.stringify(page)).digest('base64url').slice(0, 27)}"`

const cacheControl = (auth: AuthContext | null): string =>
  auth === null ? `public, max-age=${MAX_AGE}, stale-while-revalidate=${MAX_AGE * 5}` : 'private, no-cache'

const HTML_EXAMPLE = '<!doctype html>\n<html lang="en"><head>…</head><body><header><h1>Open Garden</h1>…</html>\n'

/**
 * The page as HTML, as the OpenAPI document shows it: a string (never serialized: Fastify sends a string answer of a
 * type other than JSON as it is). Named, so that both operations that answer it refer to one schema.
 */
const PageHtml = Type.Unsafe<string>({
  $id: 'SpacePageHtml',
  type: 'string',
  description: 'One HTML document with schema.org Event JSON-LD (docs/integrations.md)',
  examples: [HTML_EXAMPLE]
})

const jsonPath = (ref: string): string => `/api/v1/public/spaces/${encodeURIComponent(ref)}`

export function registerPublicRoutes (app: App, { db, config, writes }: AppContext): void {
  // anonymous pages by the reference asked (id or handle): the same answer for every caller without a token
  const cache = new KeptPublicAnswers<PageEntry>(config.publicPageCacheMs, writes)

  /** The page of a reference as a caller (null: anonymous) sees it; anonymous pages come from and go to the cache. */
  async function pageFor (ref: string, auth: AuthContext | null): Promise<PageEntry> {
    const cached = auth === null ? cache.get(ref) : undefined
    if (cached !== undefined) return cached
    const mark = cache.mark()
    const parsed = parseRef(ref)
    const entry = parsed === undefined ? undefined : await withSystem(db, trx => repo.resolvePublic(trx, parsed))
    if (entry === undefined) throw error404NotFound('space not found')
    const scope = { tenantId: entry.tenant_id, userId: auth?.tenantId === entry.tenant_id ? auth.userId : undefined }
    const page = await withTenant(db, scope, trx =>
      buildPage(trx, entry.tenant_id, entry.space_id, auth, config.baseUrl))
    if (page === undefined) throw error404NotFound('space not found')
    const result: PageEntry = { tenantId: entry.tenant_id, page, etag: etagOf(page) }
    // only the page every anonymous caller gets (a caller with a token also gets `viewer`)
    if (auth === null) cache.set(ref, entry.tenant_id, result, mark)
    return result
  }

  /** The page as HTML (rendered once per cache entry), with its own ETag and the HTML's security headers. */
  function sendHtml (
    request: FastifyRequest,
    reply: FastifyReply,
    ref: string,
    entry: PageEntry,
    auth: AuthContext | null
  ) {
    entry.html ??= renderPublicPage(entry.page, { baseUrl: config.baseUrl, selfPath: jsonPath(ref) })
    const etag = htmlEtag(entry.etag)
    void reply.headers(HTML_HEADERS).header('etag', etag).header('cache-control', cacheControl(auth))
    // a 304 carries the 200's headers and no body (the platform's not-modified.ts)
    return etagMatches(request.headers['if-none-match'], etag) ? reply.code(304).send() : reply.send(entry.html)
  }

  app.get('/api/v1/public/spaces/:id', {
    schema: {
      description: 'A published public space as anyone may see it, with its public events; a token shows more when ' +
        'the caller may see more. Send If-None-Match to get 304 when nothing changed.',
      operationId: 'get-public-space',
      summary: 'Public page of a published public space (no credential needed)',
      tags: ['Spaces'],
      params: PublicSpaceParams,
      response: { 200: SpacePage, 304: NoContent }
    },
    config: {
      auth: 'optional',
      swaggerTransform: ({ schema, url }) => ({
        url,
        schema: withHtmlAnswer(schema, {
          description: 'The page; the same page as HTML when `Accept` prefers `text/html` to JSON (`Vary: Accept`)',
          json: SpacePage,
          html: 'SpacePageHtml'
        })
      })
    }
  }, async (request, reply) => {
    const auth = request.optionalAuth
    const entry = await pageFor(request.params.id, auth)
    // what the answer varies by, Accept-Encoding too (written as @fastify/compress writes it, so it adds it once)
    void reply.header('vary', 'Authorization, Accept, accept-encoding')
    if (prefersHtml(request.headers.accept)) return sendHtml(request, reply, request.params.id, entry, auth)
    void reply.header('etag', entry.etag).header('cache-control', cacheControl(auth))
    return etagMatches(request.headers['if-none-match'], entry.etag) ? reply.code(304).send(null) : entry.page
  })

  // The HTML page at an address of its own: the link to share, whatever the client's Accept. Anonymous always (a
  // browser sends no token), so every caller gets the kept page.
  app.get('/api/v1/public/spaces/:id/page.html', {
    schema: {
      description: 'The public page of a space rendered as HTML, for a browser or an embed. The same content as the ' +
        'JSON page.',
      operationId: 'get-public-space-html',
      summary: 'The public space page as HTML (no credential needed)',
      tags: ['Spaces'],
      params: PublicSpaceParams,
      headers: Type.Object({
        'if-none-match': Type.Optional(Type.String({ maxLength: 1000, description: 'ETag held: 304 if current' }))
      }),
      produces: ['text/html'],
      response: {
        200: Type.Unsafe<string>({ ...PageHtml, headers: { ETag: { type: 'string' } } }),
        304: NoContent
      }
    },
    config: { auth: 'none' }
  }, async (request, reply) => {
    const entry = await pageFor(request.params.id, null)
    void reply.header('vary', 'accept-encoding')
    return sendHtml(request, reply, request.params.id, entry, null)
  })
}
