/**
 * SCIM 2.0 provisioning (RFC 7643/7644) under `/scim/v2`: Users, Groups and the discovery endpoints, for an API key
 * whose scopes name `scim` (docs/scim.md). Owns `scim_users`, `scim_groups`, `scim_group_members`; a user's profile
 * and state are the identity module's, written through its `applyUserChange`. Bodies are `application/scim+json`
 * (`application/json` too); every error is SCIM's (scim.errors.ts). The roles of a user's groups reach their requests
 * through the identity module's user gate, which this module gives the lookup and invalidates after each change.
 */
import crypto from 'node:crypto'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { withAuditActor } from '../../platform/audit.ts'
import { defineModule, type AppContext } from '../../platform/app-context.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { ifMatchOf } from '../../platform/http/conditional.ts'
import { idempotent } from '../../platform/http/idempotency.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { userGateOf } from '../identity/index.ts'
import {
  DEFAULT_COUNT, documentList, MAX_COUNT, resourceTypes, schemas, serviceProviderConfig
} from './scim.discovery.ts'
import { notFound, registerScimErrors, ScimError } from './scim.errors.ts'
import { groupFilter, userFilter } from './scim.filter.ts'
import * as repo from './scim.repository.ts'
import {
  LIST_SCHEMA, renderGroup, renderUser, type GroupSource, type ScimGroup, type ScimUser
} from './scim.resources.ts'
import {
  ScimBody, ScimDocument, ScimDocumentList, ScimGroup as ScimGroupSchema, ScimGroupList, ScimIdParams,
  ScimListQuery, ScimNameParams, ScimReadQuery, ScimUser as ScimUserSchema, ScimUserList
} from './scim.schemas.ts'
import * as service from './scim.service.ts'

const operation = operationsTagged('SCIM')
const PREFIX = '/scim/v2'

/**
 * The route policy of every SCIM route: an API key whose scopes name `scim` (docs/scim.md, "Authentication"); a user's
 * token or another key is refused 403 before the body is read.
 */
const requireScimKey: onRequestAsyncHookHandler = async request => {
  const key = request.auth.apiKey
  if (key === undefined) {
    throw new ScimError(403, undefined, 'SCIM takes an API key with the scim scope, not a user token')
  }
  if (key.scopes?.has('scim') !== true) throw new ScimError(403, undefined, 'this API key has no scim scope')
}

/**
 * Runs a SCIM request's write in the key's tenant, recorded in the audit log as SCIM's (the key's account); a POST
 * claims its Idempotency-Key in the same transaction (`idempotent`: what `fn` returns is the stored answer).
 */
async function asScim<T> (ctx: AppContext, request: FastifyRequest, fn: (trx: Tx) => Promise<T>): Promise<T> {
  const auth = request.auth
  const key = auth.apiKey
  const actor = {
    kind: 'scim' as const, id: key?.serviceAccountId ?? auth.userId, via: key ? `key:${key.keyId}` : null
  }
  const work = request.method === 'POST' ? idempotent(request, fn) : fn
  return await withAuditActor(actor, async () => await withTenant(ctx.db, auth, work))
}

/**
 * Every SCIM route needs a credential (declared, so that the OpenAPI document says so outside `/api/v1`); a POST
 * claims its Idempotency-Key in its transaction, its replays re-checked by the route's own hook.
 */
const REQUIRED = { config: { auth: 'required' as const } }
const CLAIMED = { config: { auth: 'required' as const, idempotency: 'transaction' as const } }

/** The page a list's `startIndex` and `count` ask for (RFC 7644 §3.4.2.4: below 1 is 1, below 0 is 0). */
function pageOf (query: { startIndex?: number, count?: number }): { startIndex: number, count: number } {
  const startIndex = Math.max(1, Math.min(query.startIndex ?? 1, 1_000_000_000))
  const count = Math.max(0, Math.min(query.count ?? DEFAULT_COUNT, MAX_COUNT))
  return { startIndex, count }
}

function listResponse<T> (items: T[], total: number, startIndex: number) {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: items.length, Resources: items }
}

const sendResource = <T extends ScimUser | ScimGroup>(reply: FastifyReply, resource: T, status = 200): T => {
  void reply.code(status).header('etag', resource.meta.version)
  if (status === 201) void reply.header('location', resource.meta.location)
  return resource
}

const callerOf = (request: FastifyRequest): service.ScimCaller => request.auth

export const scimModule = defineModule(async (app, ctx) => {
  const base = `${ctx.config.baseUrl}${PREFIX}`
  const gate = userGateOf(ctx)
  // the roles of a user's groups, added to their token's by the user gate (docs/scim.md, "Groups and roles")
  gate.useDirectoryRoles(repo.directoryRoles)
  /** After a commit: the gate reads these users' state and roles again at their next request. */
  const forget = (tenantId: string, users: readonly string[]): void => {
    for (const u of users) gate.invalidate(tenantId, u)
  }

  await app.register(async instance => {
    const scim = instance.withTypeProvider<TypeBoxTypeProvider>()
    const json = scim.getDefaultJsonParser('error', 'error')
    scim.addContentTypeParser('application/scim+json', { parseAs: 'string' }, json)
    registerScimErrors(scim)
    scim.setNotFoundHandler(async (request, reply) => {
      throw notFound(`no SCIM endpoint ${request.method} ${request.url.split('?')[0] ?? ''}`)
    })

    // ---- discovery ----
    scim.get('/ServiceProviderConfig', operation('get-scim-service-provider-config',
      'What this SCIM service provider supports', {
        description: 'What this SCIM service provider supports (patch, filter, no bulk), for an identity provider\'s ' +
          'SCIM client.',
        response: { 200: ScimDocument }
      }, requireScimKey, REQUIRED),
    async () => serviceProviderConfig(base))
    scim.get('/ResourceTypes', operation('list-scim-resource-types', 'The SCIM resource types (User, Group)', {
      description: 'The SCIM resource types served: User and Group.',
      response: { 200: ScimDocumentList }
    }, requireScimKey, REQUIRED), async () => documentList(resourceTypes(base)))
    scim.get('/ResourceTypes/:name', operation('get-scim-resource-type', 'One SCIM resource type', {
      description: 'One SCIM resource type by name.',
      params: ScimNameParams,
      response: { 200: ScimDocument }
    }, requireScimKey, REQUIRED), async request => {
      const found = resourceTypes(base).find(r => r.id === request.params.name)
      if (found === undefined) throw notFound(`no resource type ${request.params.name}`)
      return found
    })
    scim.get('/Schemas', operation('list-scim-schemas', 'The schemas of the SCIM resources, as far as they are kept', {
      description: 'The SCIM schemas of users and groups, as far as their attributes are kept.',
      response: { 200: ScimDocumentList }
    }, requireScimKey, REQUIRED), async () => documentList(schemas(base)))
    scim.get('/Schemas/:name', operation('get-scim-schema', 'One SCIM schema, by its URI', {
      description: 'One SCIM schema by its URI.',
      params: ScimNameParams,
      response: { 200: ScimDocument }
    }, requireScimKey, REQUIRED), async request => {
      const found = schemas(base).find(s => s.id === request.params.name)
      if (found === undefined) throw notFound(`no schema ${request.params.name}`)
      return found
    })

    // ---- users ----
    scim.get('/Users', operation('list-scim-users', 'List the users, by filter and page', {
      description: 'The tenant\'s users as SCIM resources, filtered and paged as RFC 7644 describes.',
      querystring: ScimListQuery,
      response: { 200: ScimUserList }
    }, requireScimKey, REQUIRED), async request => {
      const conditions = userFilter(request.query.filter)
      const { startIndex, count } = pageOf(request.query)
      const { rows, total } = await withTenant(ctx.db, request.auth, trx =>
        repo.listUsers(trx, request.auth.tenantId, conditions, startIndex - 1, count))
      return listResponse(rows.map(u => renderUser(u, base)), total, startIndex)
    })

    scim.get('/Users/:id', operation('get-scim-user', 'One user', {
      description: 'One user as a SCIM resource.',
      params: ScimIdParams,
      response: { 200: ScimUserSchema }
    }, requireScimKey, REQUIRED), async (request, reply) => {
      const user = await withTenant(ctx.db, request.auth, trx =>
        repo.findUser(trx, request.auth.tenantId, request.params.id))
      if (user === undefined) throw notFound(`user ${request.params.id} not found`)
      return sendResource(reply, renderUser(user, base))
    })

    scim.post('/Users', operation('create-scim-user', 'Create a user', {
      description: 'Provisions a user from the identity provider.',
      body: ScimBody,
      response: { 201: ScimUserSchema }
    }, requireScimKey, CLAIMED), async (request, reply) => {
      const id = crypto.randomUUID()
      const user = await asScim(ctx, request, async trx =>
        renderUser(await service.createUser(trx, callerOf(request), request.body, id), base))
      forget(request.auth.tenantId, [id])
      return sendResource(reply, user, 201)
    })

    scim.put('/Users/:id', operation('replace-scim-user', 'Replace a user', {
      description: 'Replaces a user\'s SCIM attributes.',
      params: ScimIdParams,
      body: ScimBody,
      response: { 200: ScimUserSchema }
    }, requireScimKey, REQUIRED), async (request, reply) => {
      const { id } = request.params
      const user = await asScim(ctx, request, trx =>
        service.replaceUser(trx, callerOf(request), id, request.body, ifMatchOf(request)))
      forget(request.auth.tenantId, [id])
      return sendResource(reply, renderUser(user, base))
    })

    scim.patch('/Users/:id', operation('patch-scim-user', 'Change a user with PATCH operations (RFC 7644 §3.5.2)', {
      description: 'Changes a user with SCIM PATCH operations, for instance `active: false` to deactivate them.',
      params: ScimIdParams,
      body: ScimBody,
      response: { 200: ScimUserSchema }
    }, requireScimKey, REQUIRED), async (request, reply) => {
      const { id } = request.params
      const user = await asScim(ctx, request, trx =>
        service.patchUser(trx, callerOf(request), id, request.body, ifMatchOf(request), base))
      forget(request.auth.tenantId, [id])
      return sendResource(reply, renderUser(user, base))
    })

    scim.delete('/Users/:id', operation('delete-scim-user',
      'Remove a user: as the identity provider\'s removal, grants and memberships end', {
        description: 'Deprovisions a user: as the identity provider\'s removal, their grants and memberships end.',
        params: ScimIdParams,
        response: { 204: NoContent }
      }, requireScimKey, REQUIRED), async (request, reply) => {
      const { id } = request.params
      await asScim(ctx, request, trx => service.deleteUser(trx, callerOf(request), id, ifMatchOf(request)))
      forget(request.auth.tenantId, [id])
      return await reply.code(204).send(null)
    })

    // ---- groups ----
    const withMembers = async (trx: Tx, tenantId: string, groups: GroupSource[], members: boolean) => {
      const found = members ? await repo.membersOf(trx, tenantId, groups.map(g => g.id)) : undefined
      return groups.map(g => renderGroup(g, found === undefined ? undefined : found.get(g.id) ?? [], base))
    }

    scim.get('/Groups', operation('list-scim-groups', 'List the groups, by filter and page', {
      description: 'The tenant\'s groups as SCIM resources, filtered and paged.',
      querystring: ScimListQuery,
      response: { 200: ScimGroupList }
    }, requireScimKey, REQUIRED), async request => {
      const conditions = groupFilter(request.query.filter)
      const { startIndex, count } = pageOf(request.query)
      const members = !(request.query.excludedAttributes ?? '').split(',')
        .some(a => a.trim().toLowerCase() === 'members')
      const { tenantId } = request.auth
      const { items, total } = await withTenant(ctx.db, request.auth, async trx => {
        const { rows, total } = await repo.listGroups(trx, tenantId, conditions, startIndex - 1, count)
        return { items: await withMembers(trx, tenantId, rows, members), total }
      })
      return listResponse(items, total, startIndex)
    })

    scim.get('/Groups/:id', operation('get-scim-group', 'One group with its members', {
      description: 'One group with its members.',
      params: ScimIdParams,
      querystring: ScimReadQuery,
      response: { 200: ScimGroupSchema }
    }, requireScimKey, REQUIRED), async (request, reply) => {
      const { tenantId } = request.auth
      const id = request.params.id
      const members = !(request.query.excludedAttributes ?? '').split(',')
        .some(a => a.trim().toLowerCase() === 'members')
      const found = await withTenant(ctx.db, request.auth, async trx => {
        const group = /^\d{1,15}$/.test(id) ? await repo.findGroup(trx, tenantId, Number(id)) : undefined
        return group === undefined ? undefined : (await withMembers(trx, tenantId, [group], members))[0]
      })
      if (found === undefined) throw notFound(`group ${id} not found`)
      return sendResource(reply, found)
    })

    /** Answers a group write: the group as it is now, and the gate told of the members it changed. */
    const answerGroup = async (
      request: FastifyRequest, reply: FastifyReply, status: number,
      write: (trx: Tx) => Promise<service.Written<GroupSource>>
    ) => {
      const { tenantId } = request.auth
      let users: string[] = []
      const group = await asScim(ctx, request, async trx => {
        const written = await write(trx)
        users = written.users
        return (await withMembers(trx, tenantId, [written.resource], true))[0]
      })
      forget(tenantId, users)
      if (group === undefined) throw notFound('group not found')
      return sendResource(reply, group, status)
    }

    scim.post('/Groups', operation('create-scim-group', 'Create a group, with its members and role', {
      description: 'Creates a group with its members; its role applies to them.',
      body: ScimBody,
      response: { 201: ScimGroupSchema }
    }, requireScimKey, CLAIMED), async (request, reply) =>
      await answerGroup(request, reply, 201, trx => service.createGroup(trx, callerOf(request), request.body)))

    scim.put('/Groups/:id', operation('replace-scim-group', 'Replace a group, its members and role', {
      description: 'Replaces a group, its members and role.',
      params: ScimIdParams,
      body: ScimBody,
      response: { 200: ScimGroupSchema }
    }, requireScimKey, REQUIRED), async (request, reply) => await answerGroup(request, reply, 200, trx =>
      service.replaceGroup(trx, callerOf(request), request.params.id, request.body, ifMatchOf(request))))

    scim.patch('/Groups/:id', operation('patch-scim-group',
      'Change a group with PATCH operations: members added and removed, a new name or role', {
        description: 'Changes a group with SCIM PATCH operations: members added and removed, a new name or role.',
        params: ScimIdParams,
        body: ScimBody,
        response: { 200: ScimGroupSchema }
      }, requireScimKey, REQUIRED), async (request, reply) => await answerGroup(request, reply, 200, trx =>
      service.patchGroup(trx, callerOf(request), request.params.id, request.body, ifMatchOf(request), base)))

    scim.delete('/Groups/:id', operation('delete-scim-group', 'Delete a group; its members lose its role', {
      description: 'Deletes a group; its members lose the role it gave them.',
      params: ScimIdParams,
      response: { 204: NoContent }
    }, requireScimKey, REQUIRED), async (request, reply) => {
      const { users } = await asScim(ctx, request, trx =>
        service.deleteGroup(trx, callerOf(request), request.params.id, ifMatchOf(request)))
      forget(request.auth.tenantId, users)
      return await reply.code(204).send(null)
    })
  }, { prefix: PREFIX })
})
