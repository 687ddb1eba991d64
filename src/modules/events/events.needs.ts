/**
 * What the events module is given by modules built on it: they import the events module, so it imports none of
 * them (docs/architecture.md, "Who calls whom"). src/app.ts passes them when it registers the module
 * (`eventsModule(needs)`).
 */
import type { RawBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Counting } from '../../platform/db/kept-counts.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { Event, PatchEventBody } from './events.schemas.ts'
import type { EventRow } from './events.table.ts'

/** The registration settings in force and the counts `GET /events/{id}` reports. */
export type RegistrationFigures = Pick<Event,
  'capacity' | 'waitlist_enabled' | 'requires_approval' | 'registration_inherited' | 'confirmed_count' |
  'waitlist_count' | 'pending_count' | 'no_show_count' | 'seats_left'>

/** The series edit scope of `PATCH /events/{id}?scope=`. */
export type EditScope = 'this' | 'future' | 'all'

/**
 * The registration figures `GET /events/{id}` adds to the event, read in the event's own statement: a column of the
 * settings in force and the attendee counts of the event whose id `root` gives, and that column's value as fields.
 */
export interface EventFigures {
  /** the trigger whose presence says the counts are kept rather than counted (kept-counts.ts, `countingOf`) */
  keptBy: string
  column: (tenantId: string, root: RawBuilder<number>, counting: Counting) => RawBuilder<unknown>
  read: (value: unknown) => RegistrationFigures
}

export interface EventsNeeds {
  /** the attendees module's `eventFigures`: what `GET /events/{id}` adds to the event */
  eventFigures: EventFigures
  /** the series module's `applyScopedEdit`: `PATCH /events/{id}?scope=` (this, future, all) */
  applyScopedEdit: (
    trx: Tx, auth: AuthContext, eventId: number, scope: EditScope, patch: PatchEventBody, ifMatch?: string
  ) => Promise<EventRow>
  /**
   * the spaces module's `spaceForEventLink`: the space an event is linked to or unlinked from, as the caller may
   * use it (404 invisible, 403 without `space:events`, 409 `adding` to an archived space)
   */
  spaceForEventLink: SpaceForEventLink
}

export type SpaceForEventLink = (trx: Tx, auth: AuthContext, spaceId: number, adding: boolean) => Promise<unknown>
