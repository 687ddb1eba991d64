/**
 * The public space page, `GET /api/v1/public/spaces/{id}`: no credential needed. `id` is the
 * numeric space id or the space's public handle; either is looked up in the public directory
 * (`public_spaces`), which holds only published public spaces, to find the tenant. Only public data
 * leaves: people appear as previews (display name, initials, avatar), never e-mails or ids.
 */
import crypto from 'node:crypto'
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { error404NotFound } from '../../platform/http/errors.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { activeManager, canManageSpace, isSpaceMember } from './spaces.access.repository.ts'
import { previewOf, publicAvatar, publicName } from './spaces.names.ts'
import * as pub from './spaces.public.repository.ts'
import * as repo from './spaces.repository.ts'
import { PublicSpaceParams, SpacePage } from './spaces.schemas.ts'

/**
 * What the anonymous page's Cache-Control allows any cache: seconds fresh (and five times that stale while
 * revalidating)
 */
const MAX_AGE = 60

interface CachedPage { tenantId: string, page: SpacePage, etag: string, expires: number }

/**
 * Anonymous pages, by the reference asked (id or handle): the same answer for every caller without
 * a token, kept for `ttlMs` (PUBLIC_PAGE_CACHE_MS), well inside the `max-age` the answer gives every
 * other cache. A write this process answers for the page's tenant drops the tenant's pages at once
 * (ctx.writes); writes elsewhere (another instance, a background job) show within `ttlMs`.
 * At most `max` pages, the oldest dropped first.
 */
class PublicPageCache {
  private readonly entries = new Map<string, CachedPage>()
  constructor (private readonly ttlMs: number, private readonly max = 1000) {}

  get (ref: string): CachedPage | undefined {
    const hit = this.entries.get(ref)
    if (hit === undefined) return undefined
    if (hit.expires > Date.now()) return hit
    this.entries.delete(ref)
    return undefined
  }

  set (ref: string, entry: Omit<CachedPage, 'expires'>): void {
    if (this.ttlMs === 0) return
    this.entries.delete(ref)
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
    this.entries.set(ref, { ...entry, expires: Date.now() + this.ttlMs })
  }

  /** Drops the pages of a tenant (null: of every tenant). */
  drop (tenantId: string | null): void {
    if (tenantId === null) { this.entries.clear(); return }
    for (const [ref, entry] of this.entries) if (entry.tenantId === tenantId) this.entries.delete(ref)
  }
}

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
  auth: AuthContext | null
): Promise<SpacePage | undefined> {
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
    upcoming_events: events.items.map(e => omitNull({ ...e })),
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

const etagOf = (page: SpacePage): string =>
  `W/"${crypto.createHash('sha256').update(JSON.stringify(page)).digest('base64url').slice(0, 27)}"`

function matches (ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const raw = Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch
  const bare = etag.replace(/^W\//, '')
  return raw.split(',').map(t => t.trim()).some(t => t === '*' || t.replace(/^W\//, '') === bare)
}

export function registerPublicRoutes (app: App, { db, config, writes }: AppContext): void {
  const cache = new PublicPageCache(config.publicPageCacheMs)
  writes.on(tenantId => { cache.drop(tenantId) })

  app.get('/api/v1/public/spaces/:id', {
    schema: {
      operationId: 'get-public-space',
      summary: 'Public page of a published public space (no credential needed)',
      tags: ['Spaces'],
      params: PublicSpaceParams,
      response: { 200: SpacePage, 304: NoContent }
    },
    config: { auth: 'optional' }
  }, async (request, reply) => {
    const auth = request.optionalAuth
    const send = (page: SpacePage, etag: string) => {
      void reply
        .header('etag', etag)
        .header('vary', 'Authorization')
        .header(
          'cache-control',
          auth === null ? `public, max-age=${MAX_AGE}, stale-while-revalidate=${MAX_AGE * 5}` : 'private, no-cache'
        )
      return matches(request.headers['if-none-match'], etag) ? reply.code(304).send(null) : page
    }
    const cached = auth === null ? cache.get(request.params.id) : undefined
    if (cached !== undefined) return await send(cached.page, cached.etag)
    const ref = parseRef(request.params.id)
    const entry = ref === undefined ? undefined : await withSystem(db, trx => repo.resolvePublic(trx, ref))
    if (entry === undefined) throw error404NotFound('space not found')
    const scope = { tenantId: entry.tenant_id, userId: auth?.tenantId === entry.tenant_id ? auth.userId : undefined }
    const page = await withTenant(db, scope, trx => buildPage(trx, entry.tenant_id, entry.space_id, auth))
    if (page === undefined) throw error404NotFound('space not found')
    const etag = etagOf(page)
    // only the page every anonymous caller gets (a caller with a token also gets `viewer`)
    if (auth === null) cache.set(request.params.id, { tenantId: entry.tenant_id, page, etag })
    return await send(page, etag)
  })
}
