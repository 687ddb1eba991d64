/**
 * What the events module is given by modules built on it: they import the events module, so it imports none of
 * them (docs/architecture.md, "Who calls whom"). src/app.ts passes them when it registers the module
 * (`eventsModule(needs)`).
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { Event, PatchEventBody } from './events.schemas.ts'
import type { EventRow } from './events.table.ts'

/** The registration settings in force and the counts `GET /events/{id}` reports. */
export type RegistrationFigures = Pick<Event,
  'capacity' | 'waitlist_enabled' | 'requires_approval' | 'registration_inherited' | 'confirmed_count' |
  'waitlist_count' | 'pending_count' | 'no_show_count' | 'seats_left'>

/** The series edit scope of `PATCH /events/{id}?scope=`. */
export type EditScope = 'this' | 'future' | 'all'

export interface EventsNeeds {
  /** the attendees module's `registrationFigures`: what `GET /events/{id}` adds to the event */
  registrationFigures: (trx: Tx, event: EventRow) => Promise<RegistrationFigures>
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
