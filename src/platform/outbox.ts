/**
 * Domain events. A module records what happened in the same transaction as the change
 * (`emit(trx, …)`), so a rolled-back request leaves no event and a committed one is never lost.
 * The automation engine consumes the outbox in id order.
 *
 * Topic names are `<aggregate>.<verb>` (`event.published`, `contact.created`); template-qualified
 * names (`announcement.published`) are derived by the consumer from the payload's `template`.
 */
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

/**
 * Appends one domain event to the outbox.
 *
 * @example
 *   await emit(trx, { tenantId, topic: 'contact.created', aggregateType: 'contact', aggregateId: row.id, actorId: auth.userId, payload: { contact: row } })
 */
export async function emit (trx: Tx, event: DomainEvent): Promise<void> {
  await trx.insertInto('outbox').values({
    tenant_id: event.tenantId,
    topic: event.topic,
    aggregate_type: event.aggregateType,
    aggregate_id: String(event.aggregateId),
    actor_id: event.actorId,
    payload: JSON.stringify(event.payload),
    depth: event.depth ?? 0
  }).execute()
}
