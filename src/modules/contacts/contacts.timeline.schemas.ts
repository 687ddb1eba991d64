/** Wire schemas of `GET /api/v1/contacts/{id}/timeline` (docs/contacts.md, "Timeline"). */
import { Type, type Static } from '@sinclair/typebox'
import { NextCursorField } from '../../platform/http/cursor.ts'
import { limitAndCursor, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'

export const TIMELINE_KINDS = ['attendance', 'manager', 'automation'] as const
export type TimelineKind = typeof TIMELINE_KINDS[number]

export const TIMELINE_LIMIT_MAX = 100

export const TimelineQuery = Type.Object({
  kind: Type.Optional(StringEnum(TIMELINE_KINDS, { description: 'Only items of this kind; absent = all' })),
  ...limitAndCursor(TIMELINE_LIMIT_MAX, 'Items', 'newest first')
})
export type TimelineQuery = Static<typeof TimelineQuery>

const TimelineEvent = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  start_dt: Nullable(Timestamp())
}, { description: 'The event (an occurrence, for a series that the contact attends or manages as a whole: absent)' })

const TimelineSeries = Type.Object({
  id: Type.Integer(),
  title: Type.String()
}, { description: 'The series, for a row of the whole series (no event)' })

const TimelineRule = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String()
}, { description: 'The automation rule that ran' })

export const TimelineItem = Type.Object({
  at: Timestamp('When it happened (see docs/contacts.md, "Timeline", per kind and status)'),
  kind: StringEnum(TIMELINE_KINDS, {
    description: 'attendance: the contact at an event; manager: the linked user as an event manager; ' +
      'automation: a run whose trigger named the contact'
  }),
  id: Type.String({ description: 'The row: an attendee, manager or execution id' }),
  status: Type.String({
    description: 'attendance: the attendee status (checked_in, no_show, declined, confirmed, …); manager: active or ' +
      'revoked; automation: the execution status (queued, running, succeeded, failed)'
  }),
  event: Type.Optional(TimelineEvent),
  series: Type.Optional(TimelineSeries),
  role: Type.Optional(Nullable(Type.String({ description: 'manager: the role bundle; null for permissions alone' }))),
  rule: Type.Optional(TimelineRule),
  trigger_type: Type.Optional(Type.String({ description: 'automation: what triggered the run' }))
})

export const TimelineOutputBody = model('TimelineOutputBody', {
  items: Type.Array(TimelineItem, { description: 'Newest first (then kind and id, descending)' }),
  next_cursor: NextCursorField
})
