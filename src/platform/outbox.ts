/**
 * Domain events. A module records what happened in the same transaction as the change
 * (`emit(trx, …)`, or `emitMany(trx, […])` for a bulk change), so a rolled-back request leaves no
 * event and a committed one is never lost. The automation engine consumes the outbox in id order.
 *
 * Every event is also an entry of the tenant audit log, written beside it (audit.ts).
 *
 * Topic names are `<aggregate>.<verb>` (`event.published`, `contact.created`); template-qualified
 * names (`announcement.published`) are derived by the consumer from the payload's `template`.
 */
import { currentAuditActor, recordAudit, type AuditChange } from './audit.ts'
import { rowChunks } from './db/chunks.ts'
import type { Tx } from './db/tenant.ts'

export interface DomainEvent {
  tenantId: string
  topic: string
  aggregateType: string
  aggregateId: string | number
  actorId: string | null
  payload: Record<string, unknown>
  /** automation chain depth: an event caused by an automation action carries depth + 1 */
  depth?: number
}

/** Who a domain event is recorded as: the caller (their tenant and id). */
export interface EventActor { readonly tenantId: string, readonly userId: string | null }

/**
 * A module's domain events of one aggregate type: `(actor, aggregateId, topic, payload)` → DomainEvent, so that a
 * service writes `await emit(trx, spaceEvent(auth, space.id, 'space.member_added', { … }))`. `Topic` lists the
 * module's topics in one place (docs/automation.md names the ones rules may trigger on).
 */
export function domainEvents<Topic extends string> (aggregateType: string) {
  return (
    actor: EventActor,
    aggregateId: string | number,
    topic: Topic,
    payload: Record<string, unknown>
  ): DomainEvent => ({ tenantId: actor.tenantId, topic, aggregateType, aggregateId, actorId: actor.userId, payload })
}

/** The contact a domain event concerns: a contact's own event, or the `contact_id` its payload names. */
function contactOf (event: DomainEvent): string | number | null {
  if (event.aggregateType === 'contact') return event.aggregateId
  const id = event.payload.contact_id
  return typeof id === 'string' || typeof id === 'number' ? id : null
}

/**
 * Records domain events in the tenant audit log (src/platform/audit.ts): one entry per event, its topic the action,
 * its aggregate the resource, its payload the fields, its actor the request's or the work's with the event's user.
 */
async function auditEvents (trx: Tx, events: readonly DomainEvent[]): Promise<void> {
  const current = currentAuditActor()
  await recordAudit(trx, events.map((e): AuditChange => ({
    tenantId: e.tenantId,
    action: e.topic,
    resourceType: e.aggregateType,
    resourceId: e.aggregateId,
    contactId: contactOf(e),
    fields: e.payload,
    actor: { ...current, id: e.actorId ?? current.id }
  })))
}

function rowOf (event: DomainEvent) {
  return {
    tenant_id: event.tenantId,
    topic: event.topic,
    aggregate_type: event.aggregateType,
    aggregate_id: String(event.aggregateId),
    actor_id: event.actorId,
    payload: JSON.stringify(event.payload),
    depth: event.depth ?? 0
  }
}

/**
 * Appends one domain event to the outbox.
 *
 * @example
 *   await emit(trx, { tenantId, topic: 'contact.created', aggregateType: 'contact', aggregateId: row.id, actorId:
 * auth.userId, payload: { contact: row } })
 */
export async function emit (trx: Tx, event: DomainEvent): Promise<void> {
  await trx.insertInto('outbox').values(rowOf(event)).execute()
  await auditEvents(trx, [event])
}

/** Bind parameters of one outbox row: the columns of rowOf. */
const PARAMS_PER_ROW = 7

/**
 * Appends domain events to the outbox, one row each, in the order given (ids increase along the
 * list, as with one `emit` after the other): multi-row `INSERT … VALUES`, rows in list order, one
 * statement per chunk of rows that fits PostgreSQL's 65 535 bind parameters (9 362 events), the
 * chunks one after the other. VALUES rather than INSERT…SELECT from `unnest` of arrays: the service
 * runs on Citus, where INSERT…SELECT from a function becomes a COPY that row-level security refuses.
 *
 * @example
 *   await emitMany(trx, created.map(c => ({ tenantId, topic: 'attendee.added', aggregateType: 'event', aggregateId:
 * eventId, actorId: auth.userId, payload: { contact_id: c.contact_id } })))
 */
export async function emitMany (trx: Tx, events: readonly DomainEvent[]): Promise<void> {
  for (const chunk of rowChunks(events.map(rowOf), PARAMS_PER_ROW)) {
    await trx.insertInto('outbox').values(chunk).execute()
  }
  await auditEvents(trx, events)
}
