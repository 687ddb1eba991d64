/**
 * Event managers: list, get, add (permissions or a role bundle, optional notification), replace
 * permissions, remove; invites by e-mail (token shown once, stored hashed, 7 days), accept by token
 * (event and series invites), and the caller's pending invites. Writes need the event permission
 * `managers:manage`. The creator's access is never changed here.
 *
 * Who may grant what (docs/event-collaboration.md): a grant never exceeds what the granter holds
 * (`event-managers.grants.ts`); nobody adds or changes their own grant; a manager holding permissions the caller
 * lacks is neither changed nor removed by them; series-level rows (`series_id` set) need
 * series-level rights. Invitee e-mails are shown only to callers holding `managers:manage`.
 * A manager's ETag is a digest of its row (`managerEtag`), sent by get, add and PUT; PUT and
 * DELETE honour If-Match (412, nothing changed).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { ApiError, error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { checkIfMatchTag, ifMatchOf } from '../../platform/http/conditional.ts'
import { idempotentWrite } from '../../platform/http/idempotency.ts'
import { KeysetPageQuery } from '../../platform/http/schema.ts'
import { answerPage, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { queueNotification } from '../../platform/notifications/notifications.ts'
import { managerInvitation } from '../../platform/notifications/templates.ts'
import { emit } from '../../platform/outbox.ts'
import {
  EVENT_MANAGER_ROLES, EventParams, type EventRow, grantedPermissions, hasEventPermission, isEventManagerRole,
  lockEventForWrite, readEvent, rootEventId
} from '../events/index.ts'
import { assertSeriesGrant, assertWithin, heldOnEvent } from './event-managers.grants.ts'
import {
  AcceptInviteBody, AddManagerBody, EventManager, INVITE_TTL_DAYS, InviteManagerBody, ManagerParams,
  PagedBodyEventManager, PendingInvitesBody, UpdateManagerBody
} from './event-managers.schemas.ts'
import * as repo from './event-managers.repository.ts'
import { maskInvitees, notifyManagerAdded, OUTRANKS, refuseSelf } from '../../platform/manager-grants.ts'
import { assertInviteRecipient, normalizeEmail } from '../../platform/invite-tokens.ts'
import { requirePolicy } from '../policy/index.ts'

const operation = operationsTagged('Event managers')

/** The stored grant: a role bundle replaces the permissions (stored expanded, for display). */
function grantOf (b: { permissions?: string[] | null | undefined; role?: string | null | undefined }): {
  permissions: string[]
  role: string | null
} {
  if (b.role !== undefined && b.role !== null && isEventManagerRole(b.role)) {
    return { permissions: [...EVENT_MANAGER_ROLES[b.role]], role: b.role }
  }
  const permissions = b.permissions ?? []
  if (permissions.length === 0) {
    throw invalidField('body.permissions', 'expected at least one permission, or a role', b.permissions)
  }
  return { permissions, role: null }
}

function refuseCreator (event: EventRow, userId: string): void {
  if (event.creator_id === userId) {
    throw error409Conflict("the creator's access to the event cannot be changed", [
      fieldError('path.user_id', "the event's creator", userId)
    ], 'creator_grant_fixed')
  }
}

const EXCEEDS = 'a grant may not exceed your own rights on the event'

/** Whether the caller may manage the event's managers (and so see invitees' e-mails), asked when needed. */
const managesManagers = (trx: Tx, auth: AuthContext, event: EventRow) => async (): Promise<boolean> =>
  await hasEventPermission(trx, auth, event, 'managers:manage')

/**
 * The caller may act on an existing manager row: its grant must lie within what the caller holds
 * (at series level for a series row), and so must `next`, the grant replacing it.
 */
async function assertMayTouch (
  trx: Tx,
  auth: AuthContext,
  event: EventRow,
  row: { series_id: number | null; role: string | null; permissions: string[] },
  next?: string[]
): Promise<void> {
  if (row.series_id !== null) {
    await assertSeriesGrant(trx, auth, row.series_id, grantedPermissions(row), 'path.user_id')
    if (next !== undefined) await assertSeriesGrant(trx, auth, row.series_id, next, 'body.permissions')
    return
  }
  const held = await heldOnEvent(trx, auth, event)
  assertWithin(grantedPermissions(row), held, 'path.user_id', OUTRANKS)
  if (next !== undefined) assertWithin(next, held, 'body.permissions', EXCEEDS)
}

async function emitManager (
  trx: Tx,
  auth: AuthContext,
  event: EventRow,
  topic: string,
  payload: Record<string, unknown>
): Promise<void> {
  const eventId = rootEventId(event)
  await emit(trx, {
    tenantId: auth.tenantId,
    topic,
    aggregateType: 'event',
    aggregateId: eventId,
    actorId: auth.userId,
    payload: { event_id: eventId, template: event.template, ...payload }
  })
}

export async function managersRoutes (app: App, { db }: AppContext): Promise<void> {
  /**
   * Answers 201 with the grant `write` makes on the event of the path (event permission managers:manage), written in
   * the transaction that claims the Idempotency-Key.
   */
  async function answerGrant<T> (
    request: FastifyRequest & { params: { id: number } },
    reply: FastifyReply,
    write: (trx: Tx, event: EventRow) => Promise<T>
  ): Promise<FastifyReply> {
    const row = await idempotentWrite(db, request, async trx =>
      await write(trx, await lockEventForWrite(trx, request.auth, request.params.id, 'managers:manage'))
    )
    return await reply.code(201).send(row)
  }

  app.get('/api/v1/events/managers/pending', operation('list-pending-event-manager-invites',
    "Unexpired pending manager invites (events and series) addressed to the caller's e-mail", {
      description: 'The unexpired manager invites of events and series addressed to the caller\'s e-mail. Use it to ' +
        'show invitations in the app.',
      response: { 200: PendingInvitesBody }
    }, requirePolicy('manager', 'pending')), async request => {
    const auth = request.auth
    if (auth.email === null || normalizeEmail(auth.email) === '') return { items: [] }
    const email = normalizeEmail(auth.email)
    const items = await withTenant(
      db,
      auth,
      async trx =>
        await repo.withDisplayNames(trx, auth.tenantId, await repo.pendingInvitesFor(trx, auth.tenantId, email))
    )
    return { items }
  })

  app.post('/api/v1/events/managers/accept', operation('accept-event-manager-invite',
    'Accept a manager invite (event or series) by token: 404 unknown, 409 used or revoked, 410 expired, ' +
    '403 another e-mail', {
      description: 'Turns an invite addressed to the caller\'s e-mail into an active manager grant on the event or ' +
        'series. The token comes from the invitation mail.',
      body: AcceptInviteBody,
      response: { 200: EventManager }
    }, requirePolicy('manager', 'accept'), { config: { idempotency: 'transaction' } }), async request => {
    const auth = request.auth
    return await idempotentWrite(db, request, async trx => {
      const invite = await repo.lockInviteByHash(trx, auth.tenantId, repo.hashInviteToken(request.body.token))
      if (invite === undefined) {
        throw new ApiError(404, 'unknown invite token', [fieldError('body.token', 'unknown invite token')])
      }
      if (invite.status === 'revoked') throw error409Conflict('the invite was revoked', [], 'invite_revoked')
      if (invite.status === 'active') {
        throw error409Conflict('the invite was already accepted', [], 'invite_already_accepted')
      }
      if (invite.expired) {
        throw new ApiError(
          410, `the invite expired; ask for a new one (invites last ${INVITE_TTL_DAYS} days)`, [], {}, 'invite_expired'
        )
      }
      await assertInviteRecipient(trx, auth, invite.invited_email)
      if (
        await repo.hasGrant(
          trx,
          auth.tenantId,
          { eventId: invite.event_id, seriesId: invite.series_id },
          auth.userId,
          invite.id
        )
      ) {
        throw error409Conflict('you already manage this event or series', [], 'already_manager')
      }
      const row = await repo.activateInvite(trx, auth.tenantId, invite.id, auth.userId)
      const aggregate =
        row.event_id !== null ? { type: 'event', id: row.event_id } : { type: 'series', id: row.series_id ?? 0 }
      await emit(trx, {
        tenantId: auth.tenantId,
        topic: `${aggregate.type}.manager_accepted`,
        aggregateType: aggregate.type,
        aggregateId: aggregate.id,
        actorId: auth.userId,
        payload: { event_id: row.event_id, series_id: row.series_id, user_id: auth.userId, manager_id: row.id }
      })
      return await repo.withDisplayName(trx, auth.tenantId, row)
    })
  })

  app.get('/api/v1/events/:id/managers', operation('list-event-managers',
    'List the managers of an event (active and pending)', {
      description: 'The managers of an event, active and invited, with their permissions.',
      params: EventParams,
      querystring: KeysetPageQuery,
      response: { 200: PagedBodyEventManager }
    }, requirePolicy('manager', 'read')), async request => {
    const { auth, query: q } = request
    return await answerPage(db, request, async trx => {
      const event = await readEvent(trx, auth, request.params.id)
      const page = await repo.listManagers(trx, auth.tenantId, rootEventId(event), q)
      return {
        ...page,
        items: await maskInvitees(
          await repo.withDisplayNames(trx, auth.tenantId, page.items),
          managesManagers(trx, auth, event)
        )
      }
    })
  })

  app.get('/api/v1/events/:id/managers/:user_id', operation('get-event-manager', 'Get a manager of an event', {
    description: 'One manager of an event with their permissions and ETag.',
    params: ManagerParams,
    response: { 200: EventManager }
  }, requirePolicy('manager', 'read')), async (request, reply) => {
    const auth = request.auth
    return await withTenant(db, auth, async trx => {
      const event = await readEvent(trx, auth, request.params.id)
      const row = await repo.findManager(trx, auth.tenantId, rootEventId(event), request.params.user_id)
      if (row === undefined) throw error404NotFound('manager not found')
      void reply.header('etag', repo.managerEtag(row))
      const named = await repo.withDisplayName(trx, auth.tenantId, row)
      const [shown] = await maskInvitees([named], managesManagers(trx, auth, event))
      return shown
    })
  })

  app.post('/api/v1/events/:id/managers', operation('add-event-manager',
    'Add an active manager (a role replaces permissions; optional notification)', {
      description: 'Grants a user of the tenant manager permissions on the event at once, optionally notifying them. ' +
        'A role stands for its bundle of permissions.',
      params: EventParams,
      body: AddManagerBody,
      response: { 201: EventManager }
    }, requirePolicy('manager', 'grant'), { config: { idempotency: 'transaction' } }), async (request, reply) => {
    const { auth, body: b } = request
    return await answerGrant(request, reply, async (trx, event) => {
      const grant = grantOf(b)
      if (event.creator_id === b.user_id) {
        throw error409Conflict('the creator already has every permission on the event', [
          fieldError('body.user_id', "the event's creator", b.user_id)
        ], 'creator_grant_fixed')
      }
      refuseSelf(auth, b.user_id, 'body.user_id')
      assertWithin(
        grant.permissions,
        await heldOnEvent(trx, auth, event),
        b.role !== undefined && b.role !== null ? 'body.role' : 'body.permissions',
        EXCEEDS
      )
      if ((await repo.findManager(trx, auth.tenantId, rootEventId(event), b.user_id, true)) !== undefined) {
        throw error409Conflict('the user already manages this event', [
          fieldError('body.user_id', 'already a manager', b.user_id)
        ], 'already_manager')
      }
      const created = await repo.insertManager(trx, {
        tenantId: auth.tenantId,
        eventId: rootEventId(event),
        orgId: event.org_id,
        userId: b.user_id,
        ...grant,
        invitedBy: auth.userId
      })
      await emitManager(trx, auth, event, 'event.manager_added', {
        user_id: b.user_id,
        role: grant.role,
        permissions: grant.permissions
      })
      await notifyManagerAdded(trx, auth, { on: 'event', id: rootEventId(event), title: event.title }, b)
      void reply.header('etag', repo.managerEtag(created))
      return await repo.withDisplayName(trx, auth.tenantId, created)
    })
  })

  app.post('/api/v1/events/:id/managers/invite', operation('invite-event-manager',
    `Invite a manager by e-mail: a pending row with a token valid ${INVITE_TTL_DAYS} days, ` +
    'returned once as invite_token and sent by e-mail; re-inviting the address refreshes it', {
      description: 'Invites someone by e-mail to manage the event; the token is valid 7 days, shown once here and ' +
        'mailed. Inviting the same address again refreshes it.',
      params: EventParams,
      body: InviteManagerBody,
      response: { 201: EventManager }
    }, requirePolicy('manager', 'grant'), { config: { idempotency: 'transaction' } }), async (request, reply) => {
    const { auth, body: b } = request
    return await answerGrant(request, reply, async (trx, event) => {
      const eventId = rootEventId(event)
      const grant = grantOf(b)
      const grantAt = b.role !== undefined && b.role !== null ? 'body.role' : 'body.permissions'
      const held = await heldOnEvent(trx, auth, event)
      assertWithin(grant.permissions, held, grantAt, EXCEEDS)
      if (await repo.emailIsActiveManager(trx, auth.tenantId, eventId, b.email)) {
        throw error409Conflict('a user with this e-mail already manages the event', [
          fieldError('body.email', 'already a manager', b.email)
        ], 'already_manager')
      }
      const { token, hash } = repo.newInviteToken()
      const existing = await repo.lockPendingInvite(trx, auth.tenantId, eventId, b.email)
      if (existing !== undefined) {
        // refreshing replaces that invite's grant and token: the caller must outrank it, and a
        // series invite (series_id set) needs series-level rights
        if (existing.series_id !== null) {
          await assertSeriesGrant(trx, auth, existing.series_id, grantedPermissions(existing), 'body.email')
          await assertSeriesGrant(trx, auth, existing.series_id, grant.permissions, grantAt)
        } else {
          assertWithin(
            grantedPermissions(existing),
            held,
            'body.email',
            'a pending invite to this address grants permissions you do not hold, so you may not replace it'
          )
        }
      }
      const invite =
        existing === undefined
          ? await repo.insertInvite(trx, {
            tenantId: auth.tenantId,
            eventId,
            orgId: event.org_id,
            email: b.email,
            ...grant,
            invitedBy: auth.userId,
            tokenHash: hash
          })
          : await repo.refreshInvite(trx, auth.tenantId, existing.id, {
            ...grant,
            invitedBy: auth.userId,
            tokenHash: hash
          })
      await emitManager(trx, auth, event, 'event.manager_invited', {
        manager_id: invite.id,
        email: b.email,
        role: grant.role,
        permissions: grant.permissions,
        renewed: existing !== undefined
      })
      await queueNotification(trx, {
        tenantId: auth.tenantId,
        channel: 'email',
        recipient: b.email,
        ...managerInvitation({ on: 'event', title: event.title, token, days: INVITE_TTL_DAYS, message: b.message }),
        priority: b.priority ?? 'normal',
        payload: { kind: 'event.manager_invited', event_id: eventId, manager_id: invite.id, actor_id: auth.userId }
      })
      return { ...invite, display_name: null, invite_token: token }
    })
  })

  app.put('/api/v1/events/:id/managers/:user_id', operation('update-event-manager',
    'Replace the permissions of a manager (a role, when given, replaces them)', {
      description: 'Replaces the permissions of a manager; a role, when given, replaces them with its bundle.',
      params: ManagerParams,
      body: UpdateManagerBody,
      response: { 200: EventManager }
    }, requirePolicy('manager', 'grant')), async (request, reply) => {
    const auth = request.auth
    const userId = request.params.user_id
    return await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, request.params.id, 'managers:manage')
      refuseCreator(event, userId)
      refuseSelf(auth, userId, 'path.user_id')
      const current = await repo.findManager(trx, auth.tenantId, rootEventId(event), userId, true)
      if (current === undefined) throw error404NotFound('manager not found')
      checkIfMatchTag(ifMatchOf(request), repo.managerEtag(current))
      const grant =
        request.body.role !== undefined && request.body.role !== null
          ? grantOf(request.body)
          : { permissions: request.body.permissions, role: null }
      await assertMayTouch(trx, auth, event, current, grant.permissions)
      const updated = await repo.updatePermissions(trx, auth.tenantId, current.id, grant.permissions, grant.role)
      await emitManager(trx, auth, event, 'event.manager_updated', {
        user_id: userId,
        role: grant.role,
        permissions: grant.permissions
      })
      void reply.header('etag', repo.managerEtag(updated))
      return await repo.withDisplayName(trx, auth.tenantId, updated)
    })
  })

  noContentRoute(app, db, 'delete', '/api/v1/events/:id/managers/:user_id', operation('remove-event-manager',
    'Remove a manager (revokes the grant; never the creator)', {
      description: 'Ends a manager\'s grant on the event. The creator cannot be removed.',
      params: ManagerParams
    }, requirePolicy('manager', 'grant')), async (trx, request) => {
    const auth = request.auth
    const userId = request.params.user_id
    const event = await lockEventForWrite(trx, auth, request.params.id, 'managers:manage')
    refuseCreator(event, userId)
    const current = await repo.findManager(trx, auth.tenantId, rootEventId(event), userId, true)
    if (current === undefined) throw error404NotFound('manager not found')
    checkIfMatchTag(ifMatchOf(request), repo.managerEtag(current))
    // stepping down is always allowed (it only gives up rights)
    if (userId !== auth.userId) await assertMayTouch(trx, auth, event, current)
    await repo.revokeManager(trx, auth.tenantId, current.id)
    await emitManager(trx, auth, event, 'event.manager_removed', { user_id: userId })
  })
}
