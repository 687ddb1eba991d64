/**
 * People of a space: members (list, add, remove), managers (list, add, read, change permissions,
 * remove; never the last one) and linked contacts. Every write is one transaction that also
 * records the domain event and, for members and contacts, the space activity.
 *
 * Manager grants (docs/spaces.md): a grant never exceeds what the granter holds; nobody adds or
 * changes their own grant (stepping down stays allowed); a manager holding permissions the caller
 * lacks is neither changed nor removed by them. An invite is accepted only by its addressee
 * (`assertInviteRecipient`). Invitee e-mails are shown only to who may manage managers.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { ApiError, error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { createdRoute, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { emit } from '../../platform/outbox.ts'
import { queueNotification } from '../../platform/notifications/notifications.ts'
import { managerInvitation } from '../../platform/notifications/templates.ts'
import { maskInvitees, notifyManagerAdded, OUTRANKS, refuseSelf } from '../../platform/manager-grants.ts'
import { assertInviteRecipient, hashInviteToken, newInviteToken, normalizeEmail } from '../../platform/invite-tokens.ts'
import { findVisible as findVisibleContact } from '../contacts/index.ts'
import { publicName } from './spaces.names.ts'
import * as repo from './spaces.repository.ts'
import * as people from './spaces.people.repository.ts'
import { findProfile } from '../identity/index.ts'
import {
  AcceptInviteBody, AddContactBody, AddManagerBody, AddMemberBody, FULL_ROLE, INVITE_DAYS, InviteManagerBody,
  PendingInvites, ManagerPermissionsList, PagedBodySpaceContact, PagedBodySpaceManager, PagedBodySpaceMember,
  SPACE_MANAGER_PERMISSIONS, UpdateManagerBody, SpaceContact, SpaceContactParams, SpaceManager, SpaceMember,
  SpaceParams, SpaceUserParams
} from './spaces.schemas.ts'
import { assertGrantWithin, canManageSpace, heldOnSpace, spaceGrantOf } from './spaces.access.repository.ts'
import { lockManageable, visibleOr404 } from './spaces.service.ts'
import { requirePolicy } from '../policy/index.ts'
import { spacePageRoute, type VisibleSpace } from './spaces.pages.routes.ts'
import { spaceEvent } from './spaces.events.ts'

const operation = operationsTagged('Spaces')

/** Locks a space by id for an invitee (who may not see it yet); 404 when deleted. */
async function lockLiveSpace (trx: Tx, spaceId: number, auth: AuthContext): Promise<void> {
  if (!(await repo.lockLive(trx, auth.tenantId, spaceId))) throw error404NotFound('space not found')
}

async function userName (trx: Tx, tenantId: string, userId: string): Promise<string> {
  return publicName(await findProfile(trx, tenantId, userId), userId)
}

/** Locks the space for a change of its people; a user may always act on themselves when `self`. */
async function lockForPeople (
  trx: Tx,
  auth: AuthContext,
  id: number,
  permission: 'space:members' | 'space:managers',
  self?: string
) {
  if (self !== undefined && self === auth.userId) {
    const row = await repo.lockVisible(trx, auth, id)
    if (row === undefined) throw error404NotFound('space not found')
    return row
  }
  return await lockManageable(trx, auth, id, permission)
}

const EXCEEDS = 'a grant may not exceed your own rights on the space'

/** Whether the caller may manage the space's managers (and so see invitees' e-mails), asked when needed. */
const managesManagers = (trx: Tx, auth: AuthContext, space: { id: number, creator_id: string }) =>
  async (): Promise<boolean> => await canManageSpace(trx, auth, space, 'space:managers')

type RequestedGrant = Pick<AddManagerBody, 'role' | 'permissions'>

/** The grant a body asks for (a role bundle replaces the permissions) must lie within what the caller holds. */
async function assertGrantHeld (trx: Tx, auth: AuthContext, space: VisibleSpace, b: RequestedGrant): Promise<void> {
  assertGrantWithin(
    spaceGrantOf({ role: b.role ?? null, permissions: b.permissions }),
    await heldOnSpace(trx, auth, space),
    b.role === FULL_ROLE ? 'body.role' : 'body.permissions',
    EXCEEDS
  )
}

/** The grant as stored: the role bundle, if any, and no permissions of its own under it. */
function storedGrant (b: RequestedGrant) {
  const role = b.role ?? null
  return { permissions: role === FULL_ROLE ? [] : b.permissions, role }
}

export function registerPeopleRoutes (app: App, { db }: AppContext): void {
  /* Members */

  spacePageRoute(app, db, 'members', 'list-space-members', 'List the active members of a space',
    'The active members of a space with their roles. Members see the space; managers run it.',
    PagedBodySpaceMember, (trx, auth, space, q) => people.listMembers(trx, auth.tenantId, space.id, q))

  app.post('/api/v1/spaces/:id/members', operation('add-space-member',
    'Add a member (201), or change the role of an active one (200)', {
      description: 'Makes a user a member of the space with a role, or changes the role of a member. Answers 201 for ' +
        'a new member and 200 for a change.',
      params: SpaceParams,
      body: AddMemberBody,
      response: { 200: SpaceMember, 201: SpaceMember }
    }, requirePolicy('space', 'members')), async (request, reply) => {
    const { auth, body: { user_id: userId, role } } = request
    const { row, joined } = await withTenant(db, auth, async trx => {
      const space = await lockManageable(trx, auth, request.params.id, 'space:members')
      const before = await people.findMember(trx, auth.tenantId, space.id, userId)
      const joined = before === undefined || !before.is_active
      await people.upsertMember(trx, auth.tenantId, space.id, userId, role)
      if (joined) {
        await repo.recordSpaceActivity(trx, {
          tenantId: auth.tenantId,
          spaceId: space.id,
          type: 'member',
          resourceId: userId,
          title: await userName(trx, auth.tenantId, userId),
          message: 'joined the space',
          actorId: auth.userId
        })
        await emit(trx, spaceEvent(auth, space.id, 'space.member_added', { space_id: space.id, user_id: userId, role }))
      } else if (before.role !== role) {
        await emit(trx, spaceEvent(auth, space.id, 'space.member_updated', {
          space_id: space.id, user_id: userId, role, previous_role: before.role
        }))
      }
      const row = await people.findMember(trx, auth.tenantId, space.id, userId)
      if (row === undefined) throw new Error('member vanished')
      return { row, joined }
    })
    return await reply.code(joined ? 201 : 200).send(row)
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/members/:user_id', operation('remove-space-member',
    'Remove a member (a member may leave on their own)', {
      description: 'Ends a user\'s membership of the space; a member may also remove themself to leave. Their ' +
        'content stays.',
      params: SpaceUserParams
    }, requirePolicy('space', 'members')), async (trx, { auth, params: { id, user_id: userId } }) => {
    await lockForPeople(trx, auth, id, 'space:members', userId)
    if (!(await people.deactivateMember(trx, auth.tenantId, id, userId))) throw error404NotFound('member not found')
    await emit(trx, spaceEvent(auth, id, 'space.member_removed', { space_id: id, user_id: userId }))
  })

  /* Managers */

  app.get('/api/v1/spaces/manager-permissions', operation('list-space-manager-permissions',
    'Permissions that can be granted to a space manager', {
      description: 'The permissions and role bundles a space manager can be granted. Use it to build the form of ' +
        '`add-space-manager`.',
      response: { 200: ManagerPermissionsList }
    }, requirePolicy('space', 'list')), async () => ({ permissions: [...SPACE_MANAGER_PERMISSIONS] }))

  spacePageRoute(app, db, 'managers', 'list-space-managers', 'List the managers of a space (active and pending)',
    'The managers of a space, active and invited, with their permissions. Pending invites show until they expire.',
    PagedBodySpaceManager, async (trx, auth, space, q) => {
      const page = await people.listManagers(trx, auth.tenantId, space.id, q)
      return { ...page, items: await maskInvitees(page.items, managesManagers(trx, auth, space)) }
    })

  createdRoute(app, db, 'post', '/api/v1/spaces/:id/managers', operation('add-space-manager',
    'Add an active manager (role, when given, replaces permissions)', {
      description: 'Grants a user of the tenant manager permissions on the space at once; a role, when given, stands ' +
        'for its bundle of permissions. To ask someone by e-mail, use the invite.',
      params: SpaceParams,
      body: AddManagerBody,
      response: { 201: SpaceManager }
    }, requirePolicy('space', 'managers')), async (trx, { auth, params, body: b }) => {
    const space = await lockManageable(trx, auth, params.id, 'space:managers')
    refuseSelf(auth, b.user_id, 'body.user_id')
    await assertGrantHeld(trx, auth, space, b)
    if ((await people.findManager(trx, auth.tenantId, space.id, b.user_id)) !== undefined) {
      throw error409Conflict('the user already manages this space', [
        { location: 'body.user_id', message: 'already a manager', value: b.user_id }
      ], 'already_manager')
    }
    const { role, permissions } = storedGrant(b)
    const created = await people.insertManager(trx, {
      tenantId: auth.tenantId,
      spaceId: space.id,
      orgId: space.org_id,
      userId: b.user_id,
      permissions,
      role,
      invitedBy: auth.userId
    })
    await emit(trx, spaceEvent(auth, space.id, 'space.manager_added', {
      space_id: space.id, user_id: b.user_id, role, permissions: created.permissions
    }))
    await notifyManagerAdded(trx, auth, { on: 'space', id: space.id, title: space.title }, b)
    return created
  })

  createdRoute(app, db, 'post', '/api/v1/spaces/:id/managers/invite', operation('invite-space-manager',
    'Invite a manager by e-mail (pending for 7 days until accepted)', {
      description: 'Invites someone by e-mail to manage the space; the invite is pending for 7 days until the ' +
        'addressee accepts it. The grant cannot exceed the inviter\'s own.',
      params: SpaceParams,
      body: InviteManagerBody,
      response: { 201: SpaceManager }
    }, requirePolicy('space', 'managers')), async (trx, { auth, params, body: b }) => {
    const email = b.email.toLowerCase()
    const space = await lockManageable(trx, auth, params.id, 'space:managers')
    await assertGrantHeld(trx, auth, space, b)
    if ((await people.findLiveInviteByEmail(trx, auth.tenantId, space.id, email)) !== undefined) {
      throw error409Conflict('an invite to this address is already pending', [
        { location: 'body.email', message: 'already invited', value: b.email }
      ], 'invite_pending')
    }
    const { token, hash } = newInviteToken()
    const { role, permissions } = storedGrant(b)
    const created = await people.insertInvite(trx, {
      tenantId: auth.tenantId,
      spaceId: space.id,
      orgId: space.org_id,
      email,
      permissions,
      role,
      invitedBy: auth.userId,
      tokenHash: hash,
      days: INVITE_DAYS
    })
    await queueNotification(trx, {
      tenantId: auth.tenantId,
      channel: 'email',
      recipient: email,
      ...managerInvitation({ on: 'space', title: space.title, token, days: INVITE_DAYS }),
      payload: { kind: 'space.manager_invited', space_id: space.id, invite_id: created.id, invite_token: token }
    })
    await emit(trx, spaceEvent(auth, space.id, 'space.manager_invited', {
      space_id: space.id, invite_id: created.id, role, permissions: created.permissions
    }))
    return created
  })

  app.post('/api/v1/spaces/managers/accept', operation('accept-space-manager-invite',
    'Accept a manager invite: the caller becomes an active manager', {
      description: 'Turns an invite addressed to the caller\'s e-mail into an active manager grant. The token comes ' +
        'from the invitation mail.',
      body: AcceptInviteBody,
      response: { 200: SpaceManager }
    }, requirePolicy('space', 'accept')), async request => {
    const auth = request.auth
    return await withTenant(db, auth, async trx => {
      const invite = await people.lockInviteByHash(trx, auth.tenantId, hashInviteToken(request.body.token))
      if (invite === undefined) {
        throw new ApiError(404, 'invite not found', [fieldError('body.token', 'unknown invite token')])
      }
      if (invite.expired) throw error409Conflict('the invite has expired', [], 'invite_expired')
      await assertInviteRecipient(trx, auth, invite.invited_email)
      await lockLiveSpace(trx, invite.space_id, auth)
      if ((await people.findManager(trx, auth.tenantId, invite.space_id, auth.userId)) !== undefined) {
        throw error409Conflict('the caller already manages this space', [], 'already_manager')
      }
      const accepted = await people.acceptInvite(trx, auth.tenantId, invite.id, auth.userId)
      await emit(trx, spaceEvent(auth, invite.space_id, 'space.manager_added', {
        space_id: invite.space_id,
        user_id: auth.userId,
        role: accepted.role,
        permissions: accepted.permissions,
        invite_id: invite.id
      }))
      return accepted
    })
  })

  app.get('/api/v1/spaces/managers/pending', operation('list-pending-space-manager-invites',
    "Pending manager invites sent to the caller's e-mail address", {
      description: 'The manager invites waiting for the caller\'s e-mail address. Use it to show invitations in the ' +
        'app instead of only in the mail.',
      response: { 200: PendingInvites }
    }, requirePolicy('manager', 'pending')), async request => {
    const email = request.auth.email
    if (email === null || normalizeEmail(email) === '') return { items: [] }
    const items = await withTenant(db, request.auth, trx =>
      people.pendingInvitesFor(trx, request.auth.tenantId, normalizeEmail(email))
    )
    return { items }
  })

  app.get('/api/v1/spaces/:id/managers/:user_id', operation('get-space-manager', 'Get a manager of a space', {
    description: 'One manager of a space with their permissions. Answers 404 for a user who manages nothing here.',
    params: SpaceUserParams,
    response: { 200: SpaceManager }
  }, requirePolicy('space', 'read')), async request =>
    await withTenant(db, request.auth, async trx => {
      const space = await visibleOr404(trx, request.auth, request.params.id)
      const row = await people.findManager(trx, request.auth.tenantId, request.params.id, request.params.user_id)
      if (row === undefined) throw error404NotFound('manager not found')
      const [shown] = await maskInvitees([row], managesManagers(trx, request.auth, space))
      return shown
    })
  )

  app.put('/api/v1/spaces/:id/managers/:user_id', operation('update-space-manager',
    'Replace the permissions of a manager (clears the role bundle)', {
      description: 'Replaces the permissions of a manager; the role bundle is cleared.',
      params: SpaceUserParams,
      body: UpdateManagerBody,
      response: { 200: SpaceManager }
    }, requirePolicy('space', 'managers')), async request => {
    const { auth, params: { id, user_id: userId } } = request
    return await withTenant(db, auth, async trx => {
      const space = await lockManageable(trx, auth, id, 'space:managers')
      refuseSelf(auth, userId, 'path.user_id')
      const current = await people.findManager(trx, auth.tenantId, id, userId)
      if (current === undefined) throw error404NotFound('manager not found')
      const held = await heldOnSpace(trx, auth, space)
      assertGrantWithin(spaceGrantOf(current), held, 'path.user_id', OUTRANKS)
      assertGrantWithin(request.body.permissions, held, 'body.permissions', EXCEEDS)
      const updated = await people.updateManager(trx, auth.tenantId, current.id, {
        permissions: request.body.permissions,
        role: null
      })
      await emit(trx, spaceEvent(auth, id, 'space.manager_updated', {
        space_id: id, user_id: userId, permissions: updated.permissions
      }))
      return updated
    })
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/managers/:user_id', operation('remove-space-manager',
    'Remove a manager (never the last active one; a manager may step down)', {
      description: 'Ends a manager\'s grant on the space; the last active manager cannot be removed. A manager may ' +
        'step down on their own.',
      params: SpaceUserParams
    }, requirePolicy('space', 'managers')), async (trx, { auth, params: { id, user_id: userId } }) => {
    const space = await lockForPeople(trx, auth, id, 'space:managers', userId)
    const active = await people.lockActiveManagers(trx, auth.tenantId, id)
    const current = await people.findManager(trx, auth.tenantId, id, userId)
    if (current === undefined) throw error404NotFound('manager not found')
    // stepping down is always allowed; removing another needs to hold at least what they hold
    if (userId !== auth.userId) {
      assertGrantWithin(spaceGrantOf(current), await heldOnSpace(trx, auth, space), 'path.user_id', OUTRANKS)
    }
    if (current.status === 'active' && active.length <= 1) {
      throw error409Conflict('the last manager of a space cannot be removed', [], 'last_manager')
    }
    await people.revokeManager(trx, auth.tenantId, current.id)
    await emit(trx, spaceEvent(auth, id, 'space.manager_removed', { space_id: id, user_id: userId }))
  })

  /* Contacts */

  spacePageRoute(app, db, 'contacts', 'list-space-contacts', 'List the contacts linked to a space',
    'The contacts linked to a space, paged. Linking shares a contact with the space\'s people without copying it.',
    PagedBodySpaceContact, (trx, auth, space, q) => people.listContacts(trx, auth.tenantId, space.id, q))

  createdRoute(app, db, 'post', '/api/v1/spaces/:id/contacts', operation('add-space-contact',
    'Link a contact the caller can see to a space', {
      description: 'Links a contact the caller can see to the space. A contact already linked answers 409.',
      params: SpaceParams,
      body: AddContactBody,
      response: { 201: SpaceContact }
    }, requirePolicy('space', 'contacts')), async (trx, { auth, params, body }) => {
    const contactId = body.contact_id
    const space = await lockManageable(trx, auth, params.id, 'space:contacts')
    const contact = await findVisibleContact(trx, auth, contactId)
    if (contact === undefined) throw invalidField('body.contact_id', 'contact not found', contactId)
    const created = await people.insertContactLink(trx, auth.tenantId, space.id, contactId, auth.userId)
    if (created === undefined) {
      throw error409Conflict('the contact is already linked to this space', [
        { location: 'body.contact_id', message: 'already linked', value: contactId }
      ], 'already_linked')
    }
    const name = [contact.first_name, contact.last_name].filter(s => s !== null && s !== '').join(' ') || 'Contact'
    await repo.recordSpaceActivity(trx, {
      tenantId: auth.tenantId,
      spaceId: space.id,
      type: 'contact',
      resourceId: contactId,
      title: name,
      message: 'contact added to the space',
      actorId: auth.userId
    })
    await emit(trx, spaceEvent(auth, space.id, 'space.contact_added', { space_id: space.id, contact_id: contactId }))
    return created
  })

  noContentRoute(app, db, 'delete', '/api/v1/spaces/:id/contacts/:contact_id', operation('remove-space-contact',
    'Unlink a contact from a space', {
      description: 'Unlinks a contact from the space; the contact itself stays. Answers 404 when it was not linked.',
      params: SpaceContactParams
    }, requirePolicy('space', 'contacts')), async (trx, { auth, params: { id, contact_id: contactId } }) => {
    await lockManageable(trx, auth, id, 'space:contacts')
    if (!(await people.deleteContactLink(trx, auth.tenantId, id, contactId))) {
      throw error404NotFound('contact not linked to this space')
    }
    await emit(trx, spaceEvent(auth, id, 'space.contact_removed', { space_id: id, contact_id: contactId }))
  })
}
