/**
 * Space rules that span statements or tables: creation with managers and parents, drafts of a
 * published space, publish (with the public directory and the optional notification), delete,
 * archive, and the hierarchy without cycles.
 */
import crypto from 'node:crypto'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import { checkTimezone } from '../../platform/http/validation.ts'
import {
  error403Forbidden, error404NotFound, error409Conflict, fieldError, invalidField
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { notifyOnPublish } from '../../platform/notifications/notifications.ts'
import { spacePublished } from '../../platform/notifications/templates.ts'
import { canManageSpace } from './spaces.access.repository.ts'
import * as repo from './spaces.repository.ts'
import { insertManager } from './spaces.people.repository.ts'
import {
  FULL_ROLE, PUBLIC, type CreateSpaceBody, type NotificationOptions, type SpaceChanges, type SpaceManagerPermission
} from './spaces.schemas.ts'
import type { SpaceDraft } from './spaces.table.ts'
import { spaceEvent } from './spaces.events.ts'

/**
 * Locks a space the caller may change: 404 when invisible, 403 when visible but not theirs to
 * manage, 412 when If-Match names another revision.
 */
export async function lockManageable (
  trx: Tx,
  auth: AuthContext,
  id: number,
  permission: SpaceManagerPermission,
  ifMatch?: string
) {
  const row = await repo.lockVisible(trx, auth, id)
  if (row === undefined) throw error404NotFound('space not found')
  if (!(await canManageSpace(trx, auth, row, permission))) {
    throw error403Forbidden('only the creator, a space manager or an admin may do this')
  }
  checkIfMatch(ifMatch, row.revision)
  return row
}

/**
 * The space an event is linked to or unlinked from (`POST`/`DELETE /events/{id}/spaces`; the rule
 * of `POST /spaces/{id}/events`): 404 when the caller may not see it (nothing of it is told), 403
 * when they see it but may not add events to it (tenant admin, creator, or an active manager
 * holding `space:events`; members only read), 409 when `adding` to an archived space.
 */
export async function spaceForEventLink (trx: Tx, auth: AuthContext, spaceId: number, adding: boolean) {
  const row = await repo.findVisible(trx, auth, spaceId)
  if (row === undefined) throw error404NotFound('space not found')
  if (!(await canManageSpace(trx, auth, row, 'space:events'))) {
    throw error403Forbidden(
      'only the creator, a space manager holding space:events or an admin may link events to this space'
    )
  }
  if (adding && row.status === 'archived') {
    throw error409Conflict('an archived space cannot take events', [], 'space_archived')
  }
  return row
}

/** Reads a visible space or answers 404. */
export async function visibleOr404 (trx: Tx, auth: AuthContext, id: number) {
  const row = await repo.findVisible(trx, auth, id)
  if (row === undefined) throw error404NotFound('space not found')
  return row
}

async function reread (trx: Tx, tenantId: string, id: number) {
  const row = await repo.findSpace(trx, tenantId, id)
  if (row === undefined) throw error404NotFound('space not found')
  return row
}

/** Checks that the caller may put a space under `parentId` and that no cycle results. */
async function attachParent (
  trx: Tx,
  auth: AuthContext,
  spaceId: number,
  parentId: number,
  location: string
): Promise<boolean> {
  const parent = await repo.findVisible(trx, auth, parentId)
  if (parent === undefined) throw invalidField(location, 'parent space not found', parentId)
  if (!(await canManageSpace(trx, auth, parent, 'space:edit'))) {
    throw error403Forbidden('only a manager of the parent space may add a child to it')
  }
  if (await repo.isSelfOrAncestor(trx, auth.tenantId, parentId, spaceId)) {
    throw invalidField(location, 'the parent is the space itself or one of its descendants (cycle)', parentId)
  }
  return await repo.addParent(trx, auth.tenantId, spaceId, parentId)
}

export async function createSpace (trx: Tx, auth: AuthContext, input: CreateSpaceBody) {
  checkTimezone(input.timezone, 'body.timezone')
  const id = await repo.insertSpace(trx, auth, {
    title: input.title,
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
    ...(input.visibility !== undefined ? { visibility: input.visibility } : {}),
    ...(input.position !== undefined ? { position: input.position } : {})
  })
  await insertManager(trx, {
    tenantId: auth.tenantId,
    spaceId: id,
    orgId: auth.orgId,
    userId: auth.userId,
    permissions: [],
    role: FULL_ROLE,
    invitedBy: auth.userId
  })
  if ((input.parent_ids ?? []).length > 0) {
    await repo.lockHierarchy(trx, auth.tenantId)
    for (const [i, parentId] of (input.parent_ids ?? []).entries()) {
      await attachParent(trx, auth, id, parentId, `body.parent_ids[${i}]`)
    }
  }
  await emit(trx, spaceEvent(auth, id, 'space.created', {
    space_id: id, title: input.title, parent_ids: input.parent_ids ?? []
  }))
  return await reread(trx, auth.tenantId, id)
}

/**
 * Changes a space. A space never published takes the changes at once; a published space keeps its
 * published form and collects the changes as a pending draft until publish.
 */
export async function changeSpace (
  trx: Tx,
  auth: AuthContext,
  id: number,
  changes: SpaceChanges,
  ifMatch: string | undefined
) {
  checkTimezone(changes.timezone, 'body.timezone')
  const row = await lockManageable(trx, auth, id, 'space:edit', ifMatch)
  if (row.status === 'archived') throw error409Conflict('an archived space cannot be changed', [], 'space_archived')
  const fields = Object.keys(changes)
  if (fields.length === 0) return row
  if (row.status === 'draft') {
    await repo.updateSpace(trx, auth.tenantId, id, changes)
  } else {
    await repo.updateSpace(trx, auth.tenantId, id, { draft: { ...(row.draft ?? {}), ...changes } })
  }
  await emit(trx, spaceEvent(auth, id, 'space.updated', { space_id: id, fields, pending: row.status !== 'draft' }))
  return await reread(trx, auth.tenantId, id)
}

/** POST /edit: opens a draft of a published space (kept when one exists). */
export async function openDraft (trx: Tx, auth: AuthContext, id: number) {
  const row = await lockManageable(trx, auth, id, 'space:edit')
  if (row.status === 'archived') throw error409Conflict('an archived space cannot be edited', [], 'space_archived')
  if (row.status === 'published' && row.draft === null) {
    await repo.updateSpace(trx, auth.tenantId, id, { draft: {} })
    return await reread(trx, auth.tenantId, id)
  }
  return row
}

/** POST /discard: drops the pending changes of a published space; nothing pending is a no-op. */
export async function discardDraft (trx: Tx, auth: AuthContext, id: number): Promise<void> {
  const row = await lockManageable(trx, auth, id, 'space:edit')
  if (row.status === 'draft') {
    throw error409Conflict('the space was never published: delete it instead of discarding', [], 'space_state_conflict')
  }
  if (row.draft === null) return
  await repo.updateSpace(trx, auth.tenantId, id, { draft: null })
  await emit(trx, spaceEvent(auth, id, 'space.draft_discarded', { space_id: id }))
}

function newHandle (title: string): string {
  const slug = title.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '')
  return `${slug === '' ? 'space' : slug}-${crypto.randomBytes(4).toString('hex')}`
}

/**
 * Keeps the public directory in step with a space: a published public space is in it, and so is one unpublished
 * since (a draft that was published: its anonymous feed keeps answering its subscribers, docs/spaces.md "Unpublish").
 */
async function syncPublicDirectory (trx: Tx, tenantId: string, id: number): Promise<void> {
  const row = await reread(trx, tenantId, id)
  const listed = row.status === 'published' || (row.status === 'draft' && row.published_at !== null)
  if (listed && row.visibility === PUBLIC) {
    const handle = row.public_handle ?? newHandle(row.title)
    if (row.public_handle === null) {
      await repo.setPublicHandle(trx, tenantId, id, handle)
    }
    await repo.registerPublic(trx, tenantId, id, handle)
  } else {
    await repo.unregisterPublic(trx, tenantId, id)
  }
}

/**
 * Publishes a new draft space, or promotes the pending changes of a published one. Nothing
 * pending is a no-op (still 204): no version, no event, no notification.
 */
export async function publishSpace (
  trx: Tx,
  auth: AuthContext,
  id: number,
  options: NotificationOptions
): Promise<boolean> {
  const row = await lockManageable(trx, auth, id, 'space:publish')
  if (row.status === 'archived') throw error409Conflict('an archived space cannot be published', [], 'space_archived')
  const draftNow = row.status === 'draft'
  if (!draftNow && row.draft === null) return false
  const draft: SpaceDraft = draftNow ? {} : (row.draft ?? {})
  await repo.updateSpace(trx, auth.tenantId, id, {
    ...draft,
    status: 'published',
    cancel_in_feeds: false,
    draft: null,
    published_at: new Date(),
    version: row.version + 1
  })
  await syncPublicDirectory(trx, auth.tenantId, id)
  const title = draft.title ?? row.title
  await emit(trx, spaceEvent(auth, id, 'space.published', {
    space_id: id,
    version: row.version + 1,
    // a space unpublished since (POST …/unpublish) is a draft again, but not published for the first time
    first_publish: row.published_at === null,
    fields: Object.keys(draft),
    notify: options.notify === true
  }))
  await notifyOnPublish(trx, {
    tenantId: auth.tenantId,
    actor: auth,
    creatorId: row.creator_id,
    request: options,
    template: spacePublished({ spaceId: id, title, message: options.message }),
    payload: { user_id: row.creator_id, actor_id: auth.userId }
  })
  return true
}

/**
 * `POST /spaces/{id}/unpublish` (docs/spaces.md, "Unpublish"): a published space goes back to draft. Its public page
 * answers 404; its anonymous calendar feed keeps answering its subscribers with no event, or with its public events
 * cancelled (`cancel_in_feeds`). It is seen again only by its creator, its managers and tenant admins, and keeps its
 * members, managers, contacts, events, handle and version; `POST …/publish` publishes it again. Pending changes become
 * its content (a draft space is changed in place). 409 unless published.
 */
export async function unpublishSpace (
  trx: Tx,
  auth: AuthContext,
  id: number,
  options: { cancel_in_feeds?: boolean | undefined }
): Promise<void> {
  const row = await lockManageable(trx, auth, id, 'space:publish')
  if (row.status !== 'published') {
    throw error409Conflict('only a published space can be unpublished', [
      fieldError('path.id', `status ${row.status}`, id)
    ], 'space_state_conflict')
  }
  const pending: SpaceDraft = row.draft ?? {}
  const cancelInFeeds = options.cancel_in_feeds ?? false
  // it stays in the public directory (its handle and its feed's address): the public page shows published spaces only
  await repo.updateSpace(trx, auth.tenantId, id, {
    ...pending, status: 'draft', draft: null, cancel_in_feeds: cancelInFeeds
  })
  // its pending changes may have made it private: then it leaves the directory
  await syncPublicDirectory(trx, auth.tenantId, id)
  await emit(trx, spaceEvent(auth, id, 'space.unpublished', {
    space_id: id, version: row.version, fields: Object.keys(pending), cancel_in_feeds: cancelInFeeds
  }))
}

export async function archiveSpace (trx: Tx, auth: AuthContext, id: number): Promise<void> {
  const row = await lockManageable(trx, auth, id, 'space:edit')
  if (row.status === 'archived') return
  await repo.updateSpace(trx, auth.tenantId, id, { status: 'archived' })
  await repo.unregisterPublic(trx, auth.tenantId, id)
  await emit(trx, spaceEvent(auth, id, 'space.archived', { space_id: id }))
}

/** Soft delete: the row stays (is_deleted) for the events that reference it; children become roots. */
export async function deleteSpace (trx: Tx, auth: AuthContext, id: number, ifMatch: string | undefined): Promise<void> {
  await lockManageable(trx, auth, id, 'space:edit', ifMatch)
  await repo.lockHierarchy(trx, auth.tenantId)
  await repo.updateSpace(trx, auth.tenantId, id, { is_deleted: true })
  await repo.detachChildren(trx, auth.tenantId, id)
  await repo.unregisterPublic(trx, auth.tenantId, id)
  await emit(trx, spaceEvent(auth, id, 'space.deleted', { space_id: id }))
}

export async function addParentLink (trx: Tx, auth: AuthContext, id: number, parentId: number): Promise<void> {
  await lockManageable(trx, auth, id, 'space:edit')
  await repo.lockHierarchy(trx, auth.tenantId)
  if (await attachParent(trx, auth, id, parentId, 'body.parent_id')) {
    await repo.updateSpace(trx, auth.tenantId, id, {})
    await emit(trx, spaceEvent(auth, id, 'space.updated', { space_id: id, fields: ['parent_ids'], pending: false }))
  }
}

export async function removeParentLink (trx: Tx, auth: AuthContext, id: number, parentId: number): Promise<void> {
  await lockManageable(trx, auth, id, 'space:edit')
  if (!(await repo.removeParent(trx, auth.tenantId, id, parentId))) {
    throw error404NotFound('the space is not under this parent')
  }
  await repo.updateSpace(trx, auth.tenantId, id, {})
  await emit(trx, spaceEvent(auth, id, 'space.updated', { space_id: id, fields: ['parent_ids'], pending: false }))
}
