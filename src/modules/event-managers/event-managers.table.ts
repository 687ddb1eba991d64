import type { Selectable } from 'kysely'
import type { ManagerGrantColumns } from '../../platform/db/columns.ts'

/** A grant on one event (`event_id`) or on every occurrence of a series (`series_id`), or an invitation to one. */
export interface EventManagersTable extends ManagerGrantColumns {
  event_id: number | null
  series_id: number | null
}

export type EventManagerRow = Selectable<EventManagersTable>

export interface EventManagersTables {
  event_managers: EventManagersTable
}
