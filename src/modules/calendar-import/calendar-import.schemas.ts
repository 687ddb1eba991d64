import { Type, type Static } from '@sinclair/typebox'
import { body, model, Nullable, QueryFlag, StringEnum, Timestamp } from '../../platform/http/schema.ts'

/** Bounds of the calendar import (docs/calendar-import.md, "Bounds"), decided before anything is written. */
export const ICS_MAX_BYTES = 1024 * 1024
export const ICS_MAX_EVENTS = 500
/**
 * Events one import makes or changes, the occurrences of its series included: each is linked to the space as
 * `POST /events/{id}/spaces` links it, some 3 ms on PostgreSQL (docs/calendar-import.md, "Bounds").
 */
export const ICS_MAX_ROWS = 1_000
export const UID_MAX = 1_000
export const URL_MAX = 2_000
/** Rate-limit tokens an import costs (as the contacts' CSV import). */
export const IMPORT_COST = 20

export const CalendarText = Type.String({
  description:
    'An iCalendar file (RFC 5545) in UTF-8, at most 1 MiB and 500 VEVENTs: each VEVENT becomes an event, one with ' +
    'an RRULE a series (its RECURRENCE-ID overrides edit or cancel single occurrences)',
  examples: [
    'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//Calendar//EN\r\nBEGIN:VEVENT\r\n' +
    'UID:standup@example.org\r\nSUMMARY:Standup\r\nDTSTART;TZID=Europe/Berlin:20270301T090000\r\n' +
    'DTEND;TZID=Europe/Berlin:20270301T091500\r\nRRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=20\r\nEND:VEVENT\r\n' +
    'END:VCALENDAR\r\n'
  ]
})

export const CalendarUrlBody = body({
  url: Type.String({
    minLength: 1,
    maxLength: URL_MAX,
    description:
      'Where the iCalendar file is fetched (once, by GET): an https URL of a public address; ' +
      'AUTOMATION_WEBHOOK_ALLOW opens others, as for webhooks. No redirect is followed; the answer is read up to ' +
      '1 MiB within 10 s'
  }),
  dry_run: Type.Optional(Type.Boolean({
    default: false,
    description: '`true`: answers what the import would do, and stores nothing (as `?dry_run=true`)'
  }))
})
export type CalendarUrlBody = Static<typeof CalendarUrlBody>

export const CalendarImportQuery = Type.Object({
  dry_run: Type.Optional(QueryFlag('`true`: answers what the import would do, and stores nothing', { default: false }))
})

export const IMPORT_ACTIONS = ['create', 'update', 'unchanged', 'skip'] as const
export type ImportAction = typeof IMPORT_ACTIONS[number]

export const CalendarImportItem = Type.Object({
  uid: Type.String({ description: 'The UID of the VEVENT' }),
  kind: StringEnum(['event', 'series'] as const, {
    description: 'event: a single VEVENT, or an override (RECURRENCE-ID) of one occurrence; series: a recurring VEVENT'
  }),
  action: StringEnum(IMPORT_ACTIONS, {
    description:
      'create: made by this import; update: an earlier import of the UID changed (or an occurrence moved, renamed or ' +
      'cancelled); unchanged: already as the file says; skip: not imported (`reason` says why)'
  }),
  id: Nullable(Type.Integer({
    description: 'The event (kind event) or the series (kind series); null when skipped, and for what a dry run ' +
      'would create'
  })),
  event_id: Nullable(Type.Integer({
    description: 'An event to address it by: the event itself, or the first occurrence of the series ' +
      '(GET /events/{id}/series)'
  })),
  line: Type.Integer({ description: 'The line of the file where its VEVENT begins (BEGIN:VEVENT)' }),
  recurrence_id: Nullable(Timestamp('The occurrence an override (RECURRENCE-ID) addresses')),
  reason: Nullable(Type.String({ description: 'Why it was skipped, or what an update of an occurrence did' })),
  notes: Type.Array(Type.String(), {
    description: 'How the VEVENT was read: a time zone that is not IANA (read as UTC), a floating time, a series ' +
      're-anchored within the last 12 months'
  })
})
export type CalendarImportItem = Static<typeof CalendarImportItem>

export const CalendarImportReport = model('CalendarImportReport', {
  dry_run: Type.Boolean({ description: 'true: nothing was stored; the report says what the import would do' }),
  created: Type.Integer({ description: 'Items created' }),
  updated: Type.Integer({ description: 'Items updated' }),
  unchanged: Type.Integer({ description: 'Items already as the file says' }),
  skipped: Type.Integer({ description: 'Items not imported' }),
  items: Type.Array(CalendarImportItem, { description: 'One per VEVENT of the file, in the order of the file' })
})
export type CalendarImportReport = Static<typeof CalendarImportReport>
