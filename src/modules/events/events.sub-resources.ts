/**
 * What the modules of an event's sub-resources (attendees, event managers, event content) ask of an event, built on
 * events.access.repository.ts: read it (with or without an event permission), a domain event about it, remove a
 * sub-resource under its lock, write access to what a series holds. Sub-resources always hang off the published
 * row: a draft clone's id addresses its published event (`rootEventId`). An event is locked for a write with
 * `lockEventForWrite` (404 invisible, 403 without the permission, 409 archived or deleted).
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { DomainEvent } from '../../platform/outbox.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import type { EventPermission } from './events.permissions.ts'
import {
  findEventForRead, firstVisibleOccurrence, hasEventPermission, lockEventForWrite, rootEventId
} from './events.access.repository.ts'
import type { EventRow } from './events.table.ts'

/** A visible event whose sub-resources may be read by anyone who sees it. */
export async function readEvent (trx: Tx, auth: AuthContext, id: number): Promise<EventRow> {
  return await findEventForRead(trx, auth, id, { includeDraftClones: true })
}

/** A visible event whose sub-resource needs an event permission to read (attendees): 403 without it. */
export async function readEventWith (
  trx: Tx,
  auth: AuthContext,
  id: number,
  permission: EventPermission
): Promise<EventRow> {
  const row = await readEvent(trx, auth, id)
  if (!(await hasEventPermission(trx, auth, row, permission))) {
    throw error403Forbidden(`missing event permission ${permission}`)
  }
  return row
}

/** A domain event about an event (its published row), by the caller: `event_id` first in the payload. */
export function eventDomainEvent (
  auth: AuthContext,
  event: EventRow,
  topic: string,
  payload: Record<string, unknown>
): DomainEvent {
  const eventId = rootEventId(event)
  return {
    tenantId: auth.tenantId,
    topic,
    aggregateType: 'event',
    aggregateId: eventId,
    actorId: auth.userId,
    payload: { event_id: eventId, ...payload }
  }
}

/**
 * Removes a sub-resource of an event as `lockEventForWrite` allows it: `remove` deletes it from the event's root
 * and says whether there was one (404 `missing` otherwise). The event, for the domain event the removal writes.
 */
export async function removeFromEvent (
  trx: Tx,
  auth: AuthContext,
  id: number,
  permission: EventPermission,
  missing: string,
  remove: (root: number) => Promise<boolean>
): Promise<EventRow> {
  const event = await lockEventForWrite(trx, auth, id, permission)
  if (!(await remove(rootEventId(event)))) throw error404NotFound(missing)
  return event
}

/**
 * Write access to something held by a series (series links, series attachments): the caller must
 * hold `permission` on the first occurrence of the series they can see. 404 when they see none.
 */
export async function writeSeries (
  trx: Tx,
  auth: AuthContext,
  seriesId: number,
  permission: EventPermission
): Promise<EventRow> {
  const first = await firstVisibleOccurrence(trx, auth, seriesId)
  if (first === undefined) throw error404NotFound('series not found')
  return await lockEventForWrite(trx, auth, first, permission)
}
