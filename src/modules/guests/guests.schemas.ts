/**
 * The schemas of the guests' own routes (docs/guests.md). Strings are bounded here; what a guest can get wrong
 * (a missing name, an address that is none) is checked by the routes, which answer it in the guest's language.
 */
import { Type } from '@sinclair/typebox'
import { GUEST_ANSWERS, Question } from '../attendees/index.ts'
import { body, IntId, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { LOCALES } from '../../platform/i18n/i18n.ts'
import { ATTENDEE_STATUSES } from '../../platform/db/columns.ts'

/** The longest name and address a registration keeps. */
export const NAME_MAX = 200
export const EMAIL_MAX = 320

/** Answers to the registration questions, by question id (validated against the form in force). */
const Answers = Type.Record(Type.String({ maxLength: 40 }), Type.Union([
  Type.String({ maxLength: 5000 }),
  Type.Number(),
  Type.Boolean(),
  Type.Array(Type.String({ maxLength: 40 }), { maxItems: 50 }),
  Type.Null()
]), { maxProperties: 60, description: 'By question id (GET /events/{id}/registration/form): docs/guests.md' })

const Token = Type.String({ maxLength: 200, description: 'The token of the link mailed to the guest' })
const Status = StringEnum(ATTENDEE_STATUSES, { description: 'The guest\'s status (docs/event-collaboration.md)' })

export const GuestTokenQuery = Type.Object({ token: Token })
export const GuestTokenBody = body({ token: Token }, { examples: [{ token: 'k3Jw…' }] })
export const GuestAnswerBody = body({
  token: Token,
  status: StringEnum(GUEST_ANSWERS, { description: 'confirmed (I come), tentative (maybe) or declined (I do not)' })
}, { examples: [{ token: 'k3Jw…', status: 'confirmed' }] })
export const GuestAnswersBody = body({ token: Token, answers: Answers }, {
  examples: [{ token: 'k3Jw…', answers: { diet: 'veg', photos: true } }]
})
export const GuestUpdatesBody = body({
  token: Token,
  subscribed: Type.Boolean({ description: 'false: no more mails about changes of the event' })
}, { examples: [{ token: 'k3Jw…', subscribed: false }] })

/** The event as its guests see it: what their invitation says, nothing of its people or settings. */
const GuestEvent = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  description: Nullable(Type.String()),
  start_dt: Nullable(Timestamp()),
  end_dt: Nullable(Timestamp()),
  timezone: Type.String(),
  address: Nullable(Type.String()),
  cancelled: Type.Boolean(),
  when: Type.String({ description: 'Date and time in the event\'s zone, in the guest\'s language' })
})

export const GuestRegistration = model('GuestRegistration', {
  event: GuestEvent,
  guest: Type.Object({
    name: Nullable(Type.String()),
    email: Nullable(Type.String())
  }),
  status: Status,
  waitlist_position: Nullable(Type.Integer({ minimum: 1 })),
  responded_at: Nullable(Timestamp()),
  updates: Type.Boolean({ description: 'Whether the guest gets mails about changes of the event' }),
  locale: StringEnum(LOCALES),
  answers: Type.Array(StringEnum(GUEST_ANSWERS), { description: 'The answers the guest may give now' }),
  can_cancel: Type.Boolean({ description: 'Whether the guest holds a place to give up' }),
  questions: Type.Array(Question, { description: 'The registration questions in force' }),
  given: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'The guest\'s answers, by question id' })),
  can_change_answers: Type.Boolean({ description: 'Whether the answers may still change (until registrations close)' })
}, {
  examples: [{
    event: {
      id: 42,
      title: 'Summer choir concert',
      description: null,
      start_dt: '2027-06-12T17:00:00.000Z',
      end_dt: '2027-06-12T19:00:00.000Z',
      timezone: 'Europe/Berlin',
      address: 'Town hall, Main St 1',
      cancelled: false,
      when: 'Saturday, June 12, 2027, 7:00 – 9:00 PM GMT+2'
    },
    guest: { name: 'Ann Lee', email: 'ann@example.org' },
    status: 'waitlisted',
    waitlist_position: 2,
    responded_at: '2027-05-02T10:00:00.000Z',
    updates: true,
    locale: 'en',
    answers: ['confirmed', 'tentative', 'declined'],
    can_cancel: true,
    questions: [{ id: 'diet', type: 'single_choice', label: 'Diet', options: [{ id: 'veg', label: 'Vegetarian' }] }],
    given: { diet: 'veg' },
    can_change_answers: true
  }]
})

export const PublicRegistrationParams = Type.Object({ id: IntId })
export const PublicRegistrationBody = body({
  name: Type.String({ maxLength: 1000, description: `The guest's name (1 to ${NAME_MAX} characters)` }),
  email: Type.String({ maxLength: 1000, description: 'The address the confirmation is mailed to' }),
  locale: Type.Optional(StringEnum(LOCALES, { description: 'The guest\'s language (default: Accept-Language)' })),
  answers: Type.Optional(Answers),
  website: Type.Optional(Type.String({
    maxLength: 1000,
    description: 'Leave empty: a field people do not see on the form (a registration that fills it is dropped)'
  }))
}, { examples: [{ name: 'Ann Lee', email: 'ann@example.org', locale: 'en' }] })

export const RegistrationAccepted = model('RegistrationAccepted', {
  status: Type.Literal('accepted'),
  message: Type.String({ description: 'What happens next, in the guest\'s language' })
}, {
  examples: [{
    status: 'accepted',
    message: 'Thank you! Check your mailbox: the mail we sent you says what happens next.'
  }]
})

export const GuestOutcome = model('GuestOutcome', {
  event_id: Type.Integer(),
  status: Status,
  waitlist_position: Nullable(Type.Integer({ minimum: 1 })),
  changed: Type.Boolean({ description: 'false: the request changed nothing (the same answer again)' })
}, { examples: [{ event_id: 42, status: 'confirmed', waitlist_position: null, changed: true }] })
