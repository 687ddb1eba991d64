/**
 * The rules of a public registration (docs/guests.md, "Public registration") that both of its doors share: the JSON
 * route (`POST /api/v1/public/events/{id}/registrations`, guests.registration.routes.ts) and the form of the event's
 * public page (guests.page.routes.ts). What a guest can get wrong (the name, the address) and whether the event takes
 * a registration now are answered as problems in the guest's language naming the field; the page also shows, before
 * anyone types, why it takes none (`registrationWindow`).
 */
import type { ApiError } from '../../platform/http/errors.ts'
import { formatWhen, type Locale, type MessageKey } from '../../platform/i18n/i18n.ts'
import { isEmailAddress } from '../../platform/notifications/notifications.ts'
import { eventState, guestSettings, registrationOf, seatCounts, seatsLeft } from '../attendees/index.ts'
import type { EventRow } from '../events/index.ts'
import { guestProblem } from './guests.access.ts'
import { EMAIL_MAX, NAME_MAX } from './guests.schemas.ts'

type Trx = Parameters<typeof registrationOf>[0]
type Settings = NonNullable<Awaited<ReturnType<typeof guestSettings>>>

/** "First Last" → first name and the rest (one word: no last name). */
export function splitName (name: string): { firstName: string, lastName: string | null } {
  const words = name.trim().split(/\s+/)
  if (words.length === 1) return { firstName: words[0] ?? name.trim(), lastName: null }
  return { firstName: words.slice(0, -1).join(' '), lastName: words[words.length - 1] ?? null }
}

/** The fields of a registration a guest can get wrong, in their language; the name and address as kept. */
export function checkFields (b: { name: string, email: string }, locale: Locale) {
  const name = b.name.replace(/\s+/g, ' ').trim()
  if (name === '') throw guestProblem(400, locale, 'error.required', 'body.name')
  if (name.length > NAME_MAX) throw guestProblem(400, locale, 'error.too_long', 'body.name', { max: NAME_MAX })
  const email = b.email.trim()
  if (email === '') throw guestProblem(400, locale, 'error.required', 'body.email')
  if (email.length > EMAIL_MAX || !isEmailAddress(email) || !/@[^@]+\.[^@]+$/.test(email)) {
    throw guestProblem(400, locale, 'error.email_invalid', 'body.email')
  }
  return { name, email }
}

/** Whether the honeypot field (`website`, hidden on a form) was filled: such a registration is dropped unanswered. */
export const filledHoneypot = (website: string | undefined): boolean => website !== undefined && website.trim() !== ''

/** Why an event takes no public registration now, in the order they are checked. */
export const CLOSED_REASONS = ['off', 'cancelled', 'over', 'not_open', 'closed', 'full'] as const
export type ClosedReason = typeof CLOSED_REASONS[number]

const CLOSED_MESSAGES: Readonly<Record<ClosedReason, MessageKey>> = {
  off: 'error.registration_off',
  cancelled: 'error.event_cancelled',
  over: 'error.event_over',
  not_open: 'error.registration_not_open',
  closed: 'error.registration_closed',
  full: 'error.event_full'
}

/** Whether and until when an event takes public registrations, and the seats left. */
export interface RegistrationWindow {
  /** the settings in force (the series' while the event follows them); undefined only for a vanished event */
  settings: Settings | undefined
  /** null: the event takes a registration now */
  reason: ClosedReason | null
  opensAt: Date | null
  /** when registrations close: the setting, else the event's start (null: an event without a start) */
  closesAt: Date | null
  /** seats still free; null: no capacity */
  seatsLeft: number | null
  /** a guest past the capacity waits on the waitlist (instead of being refused) */
  waitlist: boolean
}

/** The registration window of an event now (the one refusal the registration routes answer, if any). */
export async function registrationWindow (trx: Trx, event: EventRow, now = new Date()): Promise<RegistrationWindow> {
  const settings = await guestSettings(trx, event.tenant_id, event.id)
  const reg = await registrationOf(trx, event)
  const seats = reg.capacity === null ? null : seatsLeft(reg, await seatCounts(trx, event.tenant_id, event.id))
  const state = eventState(event, now)
  const opensAt = settings?.registration_opens_at ?? null
  const closesAt = settings?.registration_closes_at ?? event.start_dt
  const reason: ClosedReason | null =
    settings === undefined || !settings.public_registration
      ? 'off'
      : state.cancelled
        ? 'cancelled'
        : state.ended
          ? 'over'
          : opensAt !== null && opensAt > now
            ? 'not_open'
            : closesAt !== null && closesAt <= now
              ? 'closed'
              : !reg.waitlist_enabled && seats === 0 ? 'full' : null
  return { settings, reason, opensAt, closesAt, seatsLeft: seats, waitlist: reg.waitlist_enabled }
}

/** Why the event takes no registration, as the guest reads it. */
export function closedProblem (reason: ClosedReason, window: Pick<RegistrationWindow, 'opensAt'>,
  event: Pick<EventRow, 'timezone'>, locale: Locale): ApiError {
  const values = reason === 'not_open' && window.opensAt !== null
    ? { opens: formatWhen(locale, window.opensAt, null, event.timezone) }
    : undefined
  return guestProblem(409, locale, CLOSED_MESSAGES[reason], 'path.id', values)
}

/** Whether the locked event takes a public registration now: a problem in the guest's language when not. */
export async function checkOpen (trx: Trx, event: EventRow, locale: Locale, now = new Date()): Promise<Settings> {
  const window = await registrationWindow(trx, event, now)
  if (window.reason !== null) throw closedProblem(window.reason, window, event, locale)
  return window.settings as Settings
}
