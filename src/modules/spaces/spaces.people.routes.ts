/**
 * People of a space: members (list, add, remove), managers (list, add, read, change permissions,
 * remove; never the last one) and linked contacts. Every write is one transaction that also
 * records the domain event and, for members and contacts, the space activity.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { requirePermission } from '../../platform/auth/permissions.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { error403Forbidden, error404NotFound, error409Conflict, invalidField } from '../../platform/http/errors.ts'
import { NoContent, PageQuery } from '../../platform/http/schema.ts'
import { emit } from '../../platform/outbox.ts'
import { queueNotification } from '../../platform/notifications/notifications.ts'
import { hashInviteToken, newInviteToken } from '../../platform/invite-tokens.ts'
import * as contacts from '../contacts/contacts.repository.ts'
import { publicName } from './spaces.names.ts'
import * as repo from './spaces.repository.ts'
import {
  AcceptInviteBody, AddContactBody, AddManagerBody, AddMemberBody, FULL_ROLE, INVITE_DAYS, InviteManagerBody, PendingInvites, ManagerPermissionsList, PagedBodySpaceContact, PagedBodySpaceManager,
  PagedBodySpaceMember, SPACE_MANAGER_PERMISSIONS, UpdateManagerBody, SpaceContact, SpaceContactParams, SpaceManager, SpaceMember, SpaceParams, SpaceUserParams
} from './spaces.schemas.ts'
import { lockManageable, visibleOr404 } from './spaces.service.ts'

const tags = ['Spaces']

/** Locks a space by id for an invitee (who may not see it yet); 404 when deleted. */
async function lockLiveSpace (trx: Tx, spaceId: number, auth: AuthContext): Promise<void> {
  const row = await trx.selectFrom('spaces').select('id').where('tenant_id', '=', auth.tenantId).where('id', '=', spaceId).where('is_deleted', '=', false).forUpdate().executeTakeFirst()
  if (row === undefined) throw error404NotFound('space not found')
}

async function userName (trx: Tx, tenantId: string, userId: string): Promise<string> {
  const p = await trx.selectFrom('users').select(['display_name', 'first_name', 'last_name', 'username', 'avatar_url'])
    .where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst()
  return publicName(p, userId)
}

/** Locks the space for a change of its people; a user may always act on themselves when `self`. */
async function lockForPeople (trx: Tx, auth: AuthContext, id: number, permission: 'space:members' | 'space:managers', self?: string) {
  if (self !== undefined && self === auth.userId) {
    const row = await repo.lockVisible(trx, auth, id)
    if (row === undefined) throw error404NotFound('space not found')
    return row
  }
  return await lockManageable(trx, auth, id, permission)
}

export function registerPeopleRoutes (app: App, { db }: AppContext): void {
  /* Members */

  app.get('/api/v1/spaces/:id/members', {
    schema: { operationId: 'list-space-members', summary: 'List the active members of a space', tags, params: SpaceParams, querystring: PageQuery, response: { 200: PagedBodySpaceMember } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const q = request.query
    const { items, total } = await withTenant(db, request.auth, async (trx) => {
      await visibleOr404(trx, request.auth, request.params.id)
      return await repo.listMembers(trx, request.auth.tenantId, request.params.id, q.page, q.size)
    })
    return { items, page: q.page, size: q.size, total }
  })

  app.post('/api/v1/spaces/:id/members', {
    schema: { operationId: 'add-space-member', summary: 'Add a member (201), or change the role of an active one (200)', tags, params: SpaceParams, body: AddMemberBody, response: { 200: SpaceMember, 201: SpaceMember } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const { user_id: userId, role } = request.body
    const { row, joined } = await withTenant(db, auth, async (trx) => {
      const space = await lockManageable(trx, auth, request.params.id, 'space:members')
      const before = await repo.findMember(trx, auth.tenantId, space.id, userId)
      const joined = before === undefined || !before.is_active
      await repo.upsertMember(trx, auth.tenantId, space.id, userId, role)
      if (joined) {
        await repo.recordSpaceActivity(trx, { tenantId: auth.tenantId, spaceId: space.id, type: 'member', resourceId: userId, title: await userName(trx, auth.tenantId, userId), message: 'joined the space', actorId: auth.userId })
        await emit(trx, { tenantId: auth.tenantId, topic: 'space.member_added', aggregateType: 'space', aggregateId: space.id, actorId: auth.userId, payload: { space_id: space.id, user_id: userId, role } })
      } else if (before.role !== role) {
        await emit(trx, { tenantId: auth.tenantId, topic: 'space.member_updated', aggregateType: 'space', aggregateId: space.id, actorId: auth.userId, payload: { space_id: space.id, user_id: userId, role, previous_role: before.role } })
      }
      const row = await repo.findMember(trx, auth.tenantId, space.id, userId)
      if (row === undefined) throw new Error('member vanished')
      return { row, joined }
    })
    return await reply.code(joined ? 201 : 200).send(row)
  })

  app.delete('/api/v1/spaces/:id/members/:user_id', {
    schema: { operationId: 'remove-space-member', summary: 'Remove a member (a member may leave on their own)', tags, params: SpaceUserParams, response: { 204: NoContent } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const { id, user_id: userId } = request.params
    await withTenant(db, auth, async (trx) => {
      await lockForPeople(trx, auth, id, 'space:members', userId)
      if (!(await repo.deactivateMember(trx, auth.tenantId, id, userId))) throw error404NotFound('member not found')
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.member_removed', aggregateType: 'space', aggregateId: id, actorId: auth.userId, payload: { space_id: id, user_id: userId } })
    })
    return await reply.code(204).send(null)
  })

  /* Managers */

  app.get('/api/v1/spaces/manager-permissions', {
    schema: { operationId: 'list-space-manager-permissions', summary: 'Permissions that can be granted to a space manager', tags, response: { 200: ManagerPermissionsList } },
    onRequest: requirePermission('spaces:read')
  }, async () => ({ permissions: [...SPACE_MANAGER_PERMISSIONS] }))

  app.get('/api/v1/spaces/:id/managers', {
    schema: { operationId: 'list-space-managers', summary: 'List the managers of a space (active and pending)', tags, params: SpaceParams, querystring: PageQuery, response: { 200: PagedBodySpaceManager } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const q = request.query
    const { items, total } = await withTenant(db, request.auth, async (trx) => {
      await visibleOr404(trx, request.auth, request.params.id)
      return await repo.listManagers(trx, request.auth.tenantId, request.params.id, q.page, q.size)
    })
    return { items, page: q.page, size: q.size, total }
  })

  app.post('/api/v1/spaces/:id/managers', {
    schema: { operationId: 'add-space-manager', summary: 'Add an active manager (role, when given, replaces permissions)', tags, params: SpaceParams, body: AddManagerBody, response: { 201: SpaceManager } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const b = request.body
    const row = await withTenant(db, auth, async (trx) => {
      const space = await lockManageable(trx, auth, request.params.id, 'space:managers')
      if (await repo.findManager(trx, auth.tenantId, space.id, b.user_id) !== undefined) {
        throw error409Conflict('the user already manages this space', [{ location: 'body.user_id', message: 'already a manager', value: b.user_id }])
      }
      const role = b.role ?? null
      const created = await repo.insertManager(trx, { tenantId: auth.tenantId, spaceId: space.id, orgId: space.org_id, userId: b.user_id, permissions: role === FULL_ROLE ? [] : b.permissions, role, invitedBy: auth.userId })
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.manager_added', aggregateType: 'space', aggregateId: space.id, actorId: auth.userId, payload: { space_id: space.id, user_id: b.user_id, role, permissions: created.permissions } })
      if (b.notify === true) {
        const user = await trx.selectFrom('users').select('email').where('tenant_id', '=', auth.tenantId).where('id', '=', b.user_id).executeTakeFirst()
        for (const channel of b.channels ?? ['email']) {
          await queueNotification(trx, {
            tenantId: auth.tenantId,
            channel,
            recipient: channel === 'email' ? (user?.email ?? b.user_id) : b.user_id,
            subject: `You now manage the space "${space.title}"`,
            body: b.message ?? `You were made a manager of the space "${space.title}".`,
            priority: b.priority ?? 'normal',
            payload: { kind: 'space.manager_added', space_id: space.id, user_id: b.user_id, actor_id: auth.userId }
          })
        }
      }
      return created
    })
    return await reply.code(201).send(row)
  })

  app.post('/api/v1/spaces/:id/managers/invite', {
    schema: { operationId: 'invite-space-manager', summary: 'Invite a manager by e-mail (pending for 7 days until accepted)', tags, params: SpaceParams, body: InviteManagerBody, response: { 201: SpaceManager } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const b = request.body
    const email = b.email.toLowerCase()
    const row = await withTenant(db, auth, async (trx) => {
      const space = await lockManageable(trx, auth, request.params.id, 'space:managers')
      if (await repo.findLiveInviteByEmail(trx, auth.tenantId, space.id, email) !== undefined) {
        throw error409Conflict('an invite to this address is already pending', [{ location: 'body.email', message: 'already invited', value: b.email }])
      }
      const { token, hash } = newInviteToken()
      const role = b.role ?? null
      const created = await repo.insertInvite(trx, {
        tenantId: auth.tenantId, spaceId: space.id, orgId: space.org_id, email, permissions: role === FULL_ROLE ? [] : b.permissions, role, invitedBy: auth.userId, tokenHash: hash, days: INVITE_DAYS
      })
      await queueNotification(trx, {
        tenantId: auth.tenantId,
        channel: 'email',
        recipient: email,
        subject: `You are invited to manage the space "${space.title}"`,
        body: `You were invited to manage the space "${space.title}". Accept within ${INVITE_DAYS} days with this token: ${token}`,
        payload: { kind: 'space.manager_invited', space_id: space.id, invite_id: created.id, invite_token: token }
      })
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.manager_invited', aggregateType: 'space', aggregateId: space.id, actorId: auth.userId, payload: { space_id: space.id, invite_id: created.id, role, permissions: created.permissions } })
      return created
    })
    return await reply.code(201).send(row)
  })

  app.post('/api/v1/spaces/managers/accept', {
    schema: { operationId: 'accept-space-manager-invite', summary: 'Accept a manager invite: the caller becomes an active manager', tags, body: AcceptInviteBody, response: { 200: SpaceManager } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const auth = request.auth
    return await withTenant(db, auth, async (trx) => {
      const invite = await repo.lockInviteByHash(trx, auth.tenantId, hashInviteToken(request.body.token))
      if (invite === undefined) throw error404NotFound('invite not found')
      if (invite.expired) throw error409Conflict('the invite has expired')
      if (auth.email !== null && invite.invited_email !== null && auth.email.toLowerCase() !== invite.invited_email.toLowerCase()) {
        throw error403Forbidden('the invite was sent to another address')
      }
      await lockLiveSpace(trx, invite.space_id, auth)
      if (await repo.findManager(trx, auth.tenantId, invite.space_id, auth.userId) !== undefined) throw error409Conflict('the caller already manages this space')
      const accepted = await repo.acceptInvite(trx, auth.tenantId, invite.id, auth.userId)
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.manager_added', aggregateType: 'space', aggregateId: invite.space_id, actorId: auth.userId, payload: { space_id: invite.space_id, user_id: auth.userId, role: accepted.role, permissions: accepted.permissions, invite_id: invite.id } })
      return accepted
    })
  })

  app.get('/api/v1/spaces/managers/pending', {
    schema: { operationId: 'list-pending-space-manager-invites', summary: 'Pending manager invites sent to the caller\'s e-mail address', tags, response: { 200: PendingInvites } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const email = request.auth.email
    if (email === null) return { items: [] }
    const items = await withTenant(db, request.auth, trx => repo.pendingInvitesFor(trx, request.auth.tenantId, email.toLowerCase()))
    return { items }
  })

  app.get('/api/v1/spaces/:id/managers/:user_id', {
    schema: { operationId: 'get-space-manager', summary: 'Get a manager of a space', tags, params: SpaceUserParams, response: { 200: SpaceManager } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => await withTenant(db, request.auth, async (trx) => {
    await visibleOr404(trx, request.auth, request.params.id)
    const row = await repo.findManager(trx, request.auth.tenantId, request.params.id, request.params.user_id)
    if (row === undefined) throw error404NotFound('manager not found')
    return row
  }))

  app.put('/api/v1/spaces/:id/managers/:user_id', {
    schema: { operationId: 'update-space-manager', summary: 'Replace the permissions of a manager (clears the role bundle)', tags, params: SpaceUserParams, body: UpdateManagerBody, response: { 200: SpaceManager } },
    onRequest: requirePermission('spaces:write')
  }, async (request) => {
    const auth = request.auth
    const { id, user_id: userId } = request.params
    return await withTenant(db, auth, async (trx) => {
      await lockManageable(trx, auth, id, 'space:managers')
      const current = await repo.findManager(trx, auth.tenantId, id, userId)
      if (current === undefined) throw error404NotFound('manager not found')
      const updated = await repo.updateManager(trx, auth.tenantId, current.id, { permissions: request.body.permissions, role: null })
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.manager_updated', aggregateType: 'space', aggregateId: id, actorId: auth.userId, payload: { space_id: id, user_id: userId, permissions: updated.permissions } })
      return updated
    })
  })

  app.delete('/api/v1/spaces/:id/managers/:user_id', {
    schema: { operationId: 'remove-space-manager', summary: 'Remove a manager (never the last active one; a manager may step down)', tags, params: SpaceUserParams, response: { 204: NoContent } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const { id, user_id: userId } = request.params
    await withTenant(db, auth, async (trx) => {
      await lockForPeople(trx, auth, id, 'space:managers', userId)
      const active = await repo.lockActiveManagers(trx, auth.tenantId, id)
      const current = await repo.findManager(trx, auth.tenantId, id, userId)
      if (current === undefined) throw error404NotFound('manager not found')
      if (current.status === 'active' && active.length <= 1) throw error409Conflict('the last manager of a space cannot be removed')
      await repo.revokeManager(trx, auth.tenantId, current.id)
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.manager_removed', aggregateType: 'space', aggregateId: id, actorId: auth.userId, payload: { space_id: id, user_id: userId } })
    })
    return await reply.code(204).send(null)
  })

  /* Contacts */

  app.get('/api/v1/spaces/:id/contacts', {
    schema: { operationId: 'list-space-contacts', summary: 'List the contacts linked to a space', tags, params: SpaceParams, querystring: PageQuery, response: { 200: PagedBodySpaceContact } },
    onRequest: requirePermission('spaces:read')
  }, async (request) => {
    const q = request.query
    const { items, total } = await withTenant(db, request.auth, async (trx) => {
      await visibleOr404(trx, request.auth, request.params.id)
      return await repo.listContacts(trx, request.auth.tenantId, request.params.id, q.page, q.size)
    })
    return { items, page: q.page, size: q.size, total }
  })

  app.post('/api/v1/spaces/:id/contacts', {
    schema: { operationId: 'add-space-contact', summary: 'Link a contact the caller can see to a space', tags, params: SpaceParams, body: AddContactBody, response: { 201: SpaceContact } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const contactId = request.body.contact_id
    const row = await withTenant(db, auth, async (trx) => {
      const space = await lockManageable(trx, auth, request.params.id, 'space:contacts')
      const contact = await contacts.findVisible(trx, auth, contactId)
      if (contact === undefined) throw invalidField('body.contact_id', 'contact not found', contactId)
      const created = await repo.insertContactLink(trx, auth.tenantId, space.id, contactId, auth.userId)
      if (created === undefined) throw error409Conflict('the contact is already linked to this space', [{ location: 'body.contact_id', message: 'already linked', value: contactId }])
      const name = [contact.first_name, contact.last_name].filter(s => s !== null && s !== '').join(' ') || 'Contact'
      await repo.recordSpaceActivity(trx, { tenantId: auth.tenantId, spaceId: space.id, type: 'contact', resourceId: contactId, title: name, message: 'contact added to the space', actorId: auth.userId })
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.contact_added', aggregateType: 'space', aggregateId: space.id, actorId: auth.userId, payload: { space_id: space.id, contact_id: contactId } })
      return created
    })
    return await reply.code(201).send(row)
  })

  app.delete('/api/v1/spaces/:id/contacts/:contact_id', {
    schema: { operationId: 'remove-space-contact', summary: 'Unlink a contact from a space', tags, params: SpaceContactParams, response: { 204: NoContent } },
    onRequest: requirePermission('spaces:write')
  }, async (request, reply) => {
    const auth = request.auth
    const { id, contact_id: contactId } = request.params
    await withTenant(db, auth, async (trx) => {
      await lockManageable(trx, auth, id, 'space:contacts')
      if (!(await repo.deleteContactLink(trx, auth.tenantId, id, contactId))) throw error404NotFound('contact not linked to this space')
      await emit(trx, { tenantId: auth.tenantId, topic: 'space.contact_removed', aggregateType: 'space', aggregateId: id, actorId: auth.userId, payload: { space_id: id, contact_id: contactId } })
    })
    return await reply.code(204).send(null)
  })
}
