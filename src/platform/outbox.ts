/**
 * Domain events. A module records what happened in the same transaction as the change
 * (`emit(trx, …)`, or `emitMany(trx, […])` for a bulk change), so a rolled-back request leaves no
 * event and a committed one is never lost. The automation engine consumes the outbox in id order.
 *
 * Topic names are `<aggregate>.<verb>` (`event.published`, `contact.created`); template-qualified
 * names (`announcement.published`) are derived by the consumer from the payload's `template`.
 */
import { sql } from 'kysely'
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
 *   await emit(trx, { tenantId, topic: 'contact.created', aggregateType: 'contact', aggregateId: row.id, actorId: auth.userId, payload: { contact: row } })
 */
export async function emit (trx: Tx, event: DomainEvent): Promise<void> {
  await trx.insertInto('outbox').values(rowOf(event)).execute()
}

/**
 * Appends domain events to the outbox, one row each, in the order given (ids increase along the
 * list, as with one `emit` after the other): one INSERT whatever their number, each column sent
 * as one array (so the statement stays the same and within any limit on bind parameters).
 *
 * @example
 *   await emitMany(trx, created.map(c => ({ tenantId, topic: 'attendee.added', aggregateType: 'event', aggregateId: eventId, actorId: auth.userId, payload: { contact_id: c.contact_id } })))
 */
export async function emitMany (trx: Tx, events: readonly DomainEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map(rowOf)
  const column = <K extends keyof ReturnType<typeof rowOf>>(k: K) => rows.map(r => r[k])
  await trx.insertInto('outbox')
    .columns(['tenant_id', 'topic', 'aggregate_type', 'aggregate_id', 'actor_id', 'payload', 'depth'])
    .expression(sql`select e.tenant_id, e.topic, e.aggregate_type, e.aggregate_id, e.actor_id, e.payload, e.depth
      from unnest(${column('tenant_id')}::text[], ${column('topic')}::text[], ${column('aggregate_type')}::text[], ${column('aggregate_id')}::text[],
                  ${column('actor_id')}::text[], ${column('payload')}::jsonb[], ${column('depth')}::int[]) with ordinality
        as e (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth, n)
      order by e.n`)
    .execute()
}
