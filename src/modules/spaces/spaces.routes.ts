/**
 * Spaces: create, list, tree, read/replace/patch/delete/archive one, its parents and children,
 * drafts (edit, draft, discard), publish and unpublish; members, managers and linked contacts
 * (spaces.people.routes.ts); activity, analytics and linked events (spaces.insights.routes.ts);
 * the public page (spaces.public.routes.ts). Owns the space tables of migration 0004 and the
 * public page directory. Events belong to the events module; only the links are read here.
 */
import { defineModule } from '../../platform/app-context.ts'
import { ifMatchOf } from '../../platform/http/conditional.ts'
import { error404NotFound, error422UnprocessableEntity } from '../../platform/http/errors.ts'
import { answerPage, answerWithEtag, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { searchedPageOf } from '../../platform/http/schema.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import * as repo from './spaces.repository.ts'
import {
  AddParentBody, CreateSpaceBody, ListSpacesQuery, PagedBodySpace, PatchSpaceBody, PublishSpaceBody, ReplaceSpaceBody,
  Space, SpaceList, SpaceParams, SpaceParentParams, SpaceTree, UnpublishSpaceBody
} from './spaces.schemas.ts'
import * as service from './spaces.service.ts'
import { registerPeopleRoutes } from './spaces.people.routes.ts'
import { spacePageRoute } from './spaces.pages.routes.ts'
import { registerInsightRoutes } from './spaces.insights.routes.ts'
import { registerPublicRoutes } from './spaces.public.routes.ts'
import { registerEmbedRoutes } from './spaces.embed.routes.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Spaces')

type Node = ReturnType<typeof repo.toSpace> & { children: Node[] }

/**
 * The most nodes one tree answer holds. A space under several parents repeats under each, so a
 * lattice of a few dozen spaces would otherwise unfold into millions of nodes: the work is counted
 * while the tree is built and stops at this bound (422; the tree is then read level by level with
 * `GET /spaces/{id}/children`).
 */
export const TREE_MAX_NODES = 5000

/** Roots are the visible spaces without a visible parent; a multi-parent space repeats under each. */
function buildTree (forest: Awaited<ReturnType<typeof repo.visibleForest>>): Node[] {
  const tooLarge = () =>
    error422UnprocessableEntity(
      `the tree has more than ${TREE_MAX_NODES} nodes (a space under several parents repeats under each): ` +
      'read it level by level with GET /api/v1/spaces/{id}/children', [], 'tree_too_large')
  if (forest.spaces.length > TREE_MAX_NODES) throw tooLarge()
  const byId = new Map(forest.spaces.map(s => [s.id, s]))
  const children = new Map<number, number[]>()
  for (const l of forest.links) {
    if (!byId.has(l.space_id) || !byId.has(l.parent_id)) continue
    children.set(l.parent_id, [...(children.get(l.parent_id) ?? []), l.space_id])
  }
  const order = new Map(forest.spaces.map((s, i) => [s.id, i]))
  let nodes = 0
  const node = (id: number, path: Set<number>): Node => {
    const s = byId.get(id)
    if (s === undefined) throw new Error('unreachable')
    if (++nodes > TREE_MAX_NODES) throw tooLarge()
    const next = new Set(path).add(id)
    const kids = (children.get(id) ?? [])
      .filter(k => !next.has(k))
      .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0))
    return { ...repo.toSpace(s), children: kids.map(k => node(k, next)) }
  }
  return forest.spaces.filter(s => s.parent_ids.every(p => !byId.has(p))).map(s => node(s.id, new Set()))
}

export const spacesModule = defineModule(async (app, ctx) => {
  const { db } = ctx

  app.post('/api/v1/spaces', operation('create-space',
    'Create a space (a new draft; the caller becomes its first manager)', {
      description: 'Creates a space as a draft; the caller becomes its first manager. Publish it to show it to ' +
        'members and on its public page.',
      body: CreateSpaceBody,
      response: { 201: Space }
    }, requirePolicy('space', 'create')), async (request, reply) => {
    const row = await answerWithEtag(db, request, reply, (trx, auth) => service.createSpace(trx, auth, request.body))
    return await reply.code(201).header('location', `/api/v1/spaces/${row.id}`).send(repo.toSpace(row))
  })

  app.get('/api/v1/spaces', operation('list-spaces', 'List the spaces the caller can see', {
    description: 'Pages through the spaces the caller can see, searched and sorted. Use `get-space-tree` for the ' +
      'hierarchy at once.',
    querystring: ListSpacesQuery,
    response: { 200: PagedBodySpace }
  }, requirePolicy('space', 'list')), async request => {
    const q = request.query
    return await answerPage(db, request, trx =>
      repo.listVisible(trx, request.auth, {
        ...searchedPageOf(q),
        status: q.status,
        visibility: q.visibility
      })
    )
  })

  app.get('/api/v1/spaces/tree', operation('get-space-tree', 'The visible spaces as a multi-root tree', {
    description: 'Every space the caller can see, nested under its parents (a space under several parents appears ' +
      'under each). Use it to draw a navigation tree in one call.',
    response: { 200: SpaceTree }
  }, requirePolicy('space', 'list')), async request => {
    const forest = await withTenant(db, request.auth, trx => repo.visibleForest(trx, request.auth))
    return { items: buildTree(forest) }
  })

  app.get('/api/v1/spaces/:id', operation('get-space',
    'Get a space (its published form; see /draft for pending changes)', {
      description: 'A space as published, with its ETag. Managers read pending changes with `get-space-draft`.',
      params: SpaceParams,
      response: { 200: Space }
    }, requirePolicy('space', 'read')), async (request, reply) =>
    repo.toSpace(
      await answerWithEtag(db, request, reply, (trx, auth) => service.visibleOr404(trx, auth, request.params.id))
    )
  )

  app.put('/api/v1/spaces/:id', operation('replace-space',
    'Replace the writable fields (pending until publish on a published space)', {
      description: 'Replaces every writable field of a space; on a published space the change waits in its draft ' +
        'until published.',
      params: SpaceParams,
      body: ReplaceSpaceBody,
      response: { 200: Space }
    }, requirePolicy('space', 'edit')), async (request, reply) => {
    const b = request.body
    const changes = {
      title: b.title,
      description: b.description ?? '',
      timezone: b.timezone ?? 'UTC',
      visibility: b.visibility ?? 20,
      position: b.position ?? 0
    }
    return repo.toSpace(await answerWithEtag(db, request, reply, (trx, auth) =>
      service.changeSpace(trx, auth, request.params.id, changes, ifMatchOf(request))
    ))
  })

  app.patch('/api/v1/spaces/:id', operation('patch-space',
    'Merge-patch a space (pending until publish on a published space)', {
      description: 'Changes the fields the body names; on a published space the change waits in its draft until ' +
        'published. `null` clears a field.',
      params: SpaceParams,
      body: PatchSpaceBody,
      response: { 200: Space }
    }, requirePolicy('space', 'edit')), async (request, reply) => {
    const { $schema: _ignored, ...changes } = request.body
    return repo.toSpace(await answerWithEtag(db, request, reply, (trx, auth) =>
      service.changeSpace(trx, auth, request.params.id, changes, ifMatchOf(request))
    ))
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id', operation('delete-space',
    'Delete a space (its children become roots)', {
      description: 'Deletes a space; its children become roots and its events stay. Use archive instead to keep it ' +
        'readable.',
      params: SpaceParams
    }, requirePolicy('space', 'edit')), (trx, request) =>
    service.deleteSpace(trx, request.auth, request.params.id, ifMatchOf(request)))

  noContentRoute(app, db, 'post', '/api/v1/spaces/:id/archive', operation('archive-space',
    'Archive a space (read-only, off the public page)', {
      description: 'Makes a space read-only and takes it off its public page, keeping everything in it. Use it for ' +
        'spaces whose time is over.',
      params: SpaceParams
    }, requirePolicy('space', 'edit')), (trx, request) => service.archiveSpace(trx, request.auth, request.params.id))

  spacePageRoute(app, db, 'children', 'list-space-children', 'List the visible children of a space',
    'The spaces directly under this one that the caller can see. Use it to expand one level of a tree.',
    PagedBodySpace, (trx, auth, space, q) =>
      repo.listVisible(trx, auth, {
        page: q.page,
        size: q.size,
        cursor: q.cursor,
        sortBy: 'position',
        sortDir: 'asc',
        parentId: space.id
      }))

  app.get('/api/v1/spaces/:id/parents', operation('list-space-parents', 'List the visible parents of a space', {
    description: 'The spaces this one sits under that the caller can see. A space may have several parents.',
    params: SpaceParams,
    response: { 200: SpaceList }
  }, requirePolicy('space', 'read')), async request => {
    const items = await withTenant(db, request.auth, async trx => {
      const row = await service.visibleOr404(trx, request.auth, request.params.id)
      const out = []
      for (const p of row.parent_ids) {
        const parent = await repo.findVisible(trx, request.auth, p)
        if (parent !== undefined) out.push(repo.toSpace(parent))
      }
      return out
    })
    return { items }
  })

  noContentRoute(app, db, 'post', '/api/v1/spaces/:id/parents', operation('add-space-parent',
    'Put a space under another parent (no cycles)', {
      description: 'Puts the space under another parent as well; a link that would make a cycle is refused with 409. ' +
        'Needs manager rights on both spaces.',
      params: SpaceParams,
      body: AddParentBody
    }, requirePolicy('space', 'edit')), (trx, request) =>
    service.addParentLink(trx, request.auth, request.params.id, request.body.parent_id))

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/parents/:parent_id', operation('remove-space-parent',
    'Take a space out from under a parent', {
      description: 'Takes the space out from under one parent; without any parent it becomes a root. The parent ' +
        'space itself is not changed.',
      params: SpaceParentParams
    }, requirePolicy('space', 'edit')), (trx, request) =>
    service.removeParentLink(trx, request.auth, request.params.id, request.params.parent_id))

  app.post('/api/v1/spaces/:id/edit', operation('edit-space', 'Open a draft of a published space and return it', {
    description: 'Opens the draft of a published space (or returns the open one) so that changes can be prepared ' +
      'without showing them. Publish the draft to apply them, discard it to drop them.',
    params: SpaceParams,
    response: { 200: Space }
  }, requirePolicy('space', 'edit')), async request => {
    const row = await withTenant(db, request.auth, trx => service.openDraft(trx, request.auth, request.params.id))
    return repo.toDraftView(row)
  })

  app.get('/api/v1/spaces/:id/draft', operation('get-space-draft',
    'The draft of a space: pending changes applied to the published form', {
      description: 'The space as it will look once its pending changes are published. Answers 404 when no draft is ' +
        'open.',
      params: SpaceParams,
      response: { 200: Space }
    }, requirePolicy('space', 'read')), async request => {
    const row = await withTenant(db, request.auth, async trx => {
      const r = await service.visibleOr404(trx, request.auth, request.params.id)
      if (r.status !== 'draft' && r.draft === null) throw error404NotFound('the space has no draft')
      return r
    })
    return repo.toDraftView(row)
  })

  noContentRoute(app, db, 'post', '/api/v1/spaces/:id/discard', operation('discard-space-draft',
    'Discard the pending changes of a published space', {
      description: 'Drops the pending changes of a published space; the published form stays as it is. Use it to ' +
        'abandon an edit.',
      params: SpaceParams
    }, requirePolicy('space', 'edit')), (trx, request) => service.discardDraft(trx, request.auth, request.params.id))

  noContentRoute(app, db, 'post', '/api/v1/spaces/:id/publish', operation('publish-space',
    'Publish a new draft space or promote the pending changes of a published one', {
      description: 'Publishes a draft space, or applies the pending changes of a published one; members can be told ' +
        'by notification.',
      params: SpaceParams,
      body: PublishSpaceBody
    }, requirePolicy('space', 'publish'), { optionalBody: true }), (trx, request) => {
    const { $schema: _ignored, ...options } = request.body ?? {}
    return service.publishSpace(trx, request.auth, request.params.id, options)
  })

  noContentRoute(app, db, 'post', '/api/v1/spaces/:id/unpublish', operation('unpublish-space',
    'Take a published space back to draft (off its public page; people and events kept)', {
      description: 'Takes a published space back to draft: it leaves its public page and feeds while its people and ' +
        'events stay.',
      params: SpaceParams,
      body: UnpublishSpaceBody
    }, requirePolicy('space', 'unpublish'), { optionalBody: true }), (trx, request) =>
    service.unpublishSpace(trx, request.auth, request.params.id, request.body))

  registerPeopleRoutes(app, ctx)
  registerInsightRoutes(app, ctx)
  registerPublicRoutes(app, ctx)
  registerEmbedRoutes(app, ctx)
})
