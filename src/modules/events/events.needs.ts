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

/**
 * The registration settings in force for an event (its series' while it follows them), as a clone copies them:
 * capacity, waitlist, approval and the public registration (docs/guests.md).
 */
export interface RegistrationCopy {
  capacity: number | null
  waitlist_enabled: boolean
  requires_approval: boolean
  public_registration: boolean
  registration_opens_at: Date | null
  registration_closes_at: Date | null
  registration_limit_per_email: number
  double_opt_in: boolean
}

/**
 * What `POST /events/{id}/clone` copies of what the modules built on events own. `source` is the event as the caller
 * reads it (a draft clone's parts are its published row's); `clone` the new event, written in the same transaction.
 */
export interface CloneParts {
  /** the attendees module's `registrationToCopy`: the registration settings in force for `source` */
  registration: (trx: Tx, source: EventRow) => Promise<RegistrationCopy>
  /**
   * the attendees module's `copyQuestions`: the registration questions in force for `source` as the first version of
   * `clone`'s own form; whether there were any
   */
  questions: (trx: Tx, auth: AuthContext, source: EventRow, clone: EventRow) => Promise<boolean>
  /**
   * the event-managers module's `copyManagers`: the active managers of `source` (not its pending invitations, not
   * the managers of its series, not the caller, who creates the clone) as active managers of `clone`, each with
   * its role and permissions and an `event.manager_added`; their user ids
   */
  managers: (trx: Tx, auth: AuthContext, source: EventRow, clone: EventRow) => Promise<string[]>
}

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
  /** what a clone copies of the attendees' and the managers' modules (`POST /events/{id}/clone`) */
  cloneParts: CloneParts
}

export type SpaceForEventLink = (trx: Tx, auth: AuthContext, spaceId: number, adding: boolean) => Promise<unknown>
