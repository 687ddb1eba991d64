/**
 * Who is told when a published event moves: every write of the title, time, zone or place of a published event
 * (an edit without a draft, a draft published onto it, a series edit of its occurrences) calls the listener that
 * src/app.ts set, in the write's transaction. The attendees module's listener mails the guests whose calendar holds
 * the event (docs/guests.md, "Mails"); the events module imports none of the modules built on it.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import * as repo from './events.repository.ts'
import type { EventRow } from './events.table.ts'

export type PublishedEventListener = (trx: Tx, rows: EventRow[]) => Promise<void>

let listener: PublishedEventListener | undefined

/** Sets the listener of changes of published events (src/app.ts, once). */
export function onPublishedEventChange (fn: PublishedEventListener): void { listener = fn }

/** The fields whose change a guest is told of. */
const TOLD = ['title', 'start_dt', 'end_dt', 'timezone', 'address'] as const

/** `updateEvent` of the repository, and the listener told when it wrote a told field of a published event. */
export async function updateEvent (
  trx: Tx,
  tenantId: string,
  id: number,
  values: repo.EventUpdate
): Promise<EventRow> {
  const row = await repo.updateEvent(trx, tenantId, id, values)
  const published = row.published_id === null && row.status === 'published' && !row.is_deleted
  if (listener !== undefined && published && TOLD.some(k => k in values)) await listener(trx, [row])
  return row
}

/** Tells the listener of rows another module wrote (a series' occurrences): those published and live. */
export async function tellPublishedChanges (trx: Tx, rows: readonly EventRow[]): Promise<void> {
  const published = rows.filter(r => r.published_id === null && r.status === 'published' && !r.is_deleted)
  if (listener !== undefined && published.length > 0) await listener(trx, published)
}
