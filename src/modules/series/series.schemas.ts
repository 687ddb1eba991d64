import { ATTENDEE_STATUSES } from '../../platform/db/columns.ts'
import { CursorParam, NextCursorField } from '../../platform/http/cursor.ts'
import { Type, type Static } from '@sinclair/typebox'
import { body, DateTimeInput, IntId, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import {
  ADDRESS_MAX, CreateEventBody, DESCRIPTION_MAX, Event, KEYWORD_MAX, KEYWORDS_MAX, METADATA_MAX_KEYS,
  PublishEventBody, STORAGE_METADATA_KEYS, TIMEZONE_MAX, TITLE_MAX
} from '../events/index.ts'
import { ENDS_ON, FREQS } from './series.recurrence.ts'
import { RRULE_MAX_LENGTH } from './series.rrule.ts'

/** Bounds chosen by us (docs/series.md). */
export const MAX_OCCURRENCES = 500
export const WINDOW_MONTHS = 12
export const INTERVAL_MAX = 366
export const OCCURRENCES_LIMIT_MAX = 200
export const OCCURRENCES_LIMIT_DEFAULT = 50
/** Occurrence rows one request (or one window-job run per series) may create. */
export const MAX_CREATE_PER_REQUEST = 500
/** A new series' anchor starts at most this many months before now. */
export const MAX_PAST_MONTHS = 12
/**
 * Metadata keys that carry a storage key (written by the cover upload only): never taken in a series body, never
 * cascaded.
 */
export { STORAGE_METADATA_KEYS }
/** Every attendee status (the attendees table's): `attendee_counts` has a key for each, 0 when absent. */
export { ATTENDEE_STATUSES }
export const SERIES_STATUSES = ['draft', 'published', 'archived'] as const

const RepeatDays = Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
  minItems: 1,
  maxItems: 7,
  uniqueItems: true,
  description: 'ISO weekdays, 1 = Monday … 7 = Sunday (weekly and custom)'
})

/** Dates a rule adds (RDATE) or leaves out (EXDATE): at most this many each. */
export const RULE_DATES_MAX = 100

const RuleDates = (description: string) => Type.Optional(Nullable(Type.Array(DateTimeInput(), {
  maxItems: RULE_DATES_MAX,
  description: `${description}; at most ${RULE_DATES_MAX}; replaces the series' list`
})))

/** The recurrence rule fields (POST /events/{id}/series, the `series` of with-series, PATCH). */
const ruleFields = {
  freq: Type.Optional(StringEnum(FREQS, {
    description:
      "daily, weekly (on repeat_days), monthly (the anchor's day of month, clamped to the month end), custom " +
      '(every interval days, on repeat_days); rrule: the rule is `rrule` (shown, never needed in a body). ' +
      'Required unless rrule is given'
  })),
  rrule: Type.Optional(Nullable(Type.String({
    minLength: 1,
    maxLength: RRULE_MAX_LENGTH,
    description:
      'An RFC 5545 recurrence rule (the value of an RRULE line), e.g. FREQ=MONTHLY;BYDAY=2TU or ' +
      'FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=3;COUNT=5: FREQ DAILY, WEEKLY, MONTHLY or YEARLY, INTERVAL, COUNT or ' +
      'UNTIL, BYDAY (ordinals such as 2TU, -1FR), BYMONTHDAY, BYMONTH, BYYEARDAY, BYWEEKNO, BYSETPOS, WKST. ' +
      'Instead of freq, interval, repeat_days and ends_on; expanded in the series time zone'
  }))),
  rdates: RuleDates('Starts added to the rule (RDATE), each after start_dt'),
  exdates: RuleDates('Starts the rule leaves out (EXDATE)'),
  interval: Type.Optional(
    Type.Integer({ minimum: 1, maximum: INTERVAL_MAX, default: 1, description: 'Every N units of freq' })
  ),
  ends_on: Type.Optional(
    StringEnum(ENDS_ON, { description: 'never (a rolling window), on_date, after_n', default: 'never' })
  ),
  repeat_days: Type.Optional(Nullable(RepeatDays)),
  end_count: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: MAX_OCCURRENCES,
        description: `Occurrences including the anchor (after_n); at most ${MAX_OCCURRENCES}`
      })
    )
  ),
  end_date: Type.Optional(Nullable(DateTimeInput('Last start date, its whole day in the series time zone (on_date)')))
}

export const CreateSeriesBody = body(ruleFields)
export type CreateSeriesBody = Static<typeof CreateSeriesBody>

const { template: _t, template_version: _v, $schema: _s, ...eventFields } = CreateEventBody.properties
export const CreateEventWithSeriesBody = body({
  ...eventFields,
  series: Type.Optional(
    Nullable(
      Type.Object(ruleFields, { additionalProperties: false, description: 'Recurrence rule; omitted = a single event' })
    )
  )
})
export type CreateEventWithSeriesBody = Static<typeof CreateEventWithSeriesBody>

export const PatchSeriesBody = body({
  title: Type.Optional(Type.String({ minLength: 1, maxLength: TITLE_MAX })),
  description: Type.Optional(Nullable(Type.String({ maxLength: DESCRIPTION_MAX }))),
  address: Type.Optional(Nullable(Type.String({ maxLength: ADDRESS_MAX }))),
  start_dt: Type.Optional(
    DateTimeInput('New start of the anchor: moves the time of day of every occurrence that has no times of its own')
  ),
  end_dt: Type.Optional(DateTimeInput('New end of the anchor: the length of every occurrence')),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: TIMEZONE_MAX })),
  latitude: Type.Optional(Nullable(Type.Number({ minimum: -90, maximum: 90 }))),
  longitude: Type.Optional(Nullable(Type.Number({ minimum: -180, maximum: 180 }))),
  keywords: Type.Optional(
    Nullable(Type.Array(Type.String({ minLength: 1, maxLength: KEYWORD_MAX }), { maxItems: KEYWORDS_MAX }))
  ),
  metadata: Type.Optional(
    Nullable(
      Type.Object(
        {},
        { additionalProperties: true, maxProperties: METADATA_MAX_KEYS, description: 'Merged (RFC 7396)' }
      )
    )
  ),
  visibility: Type.Optional(Type.Union([10, 20, 30, 40].map(v => Type.Literal(v)))),
  freq: ruleFields.freq,
  rrule: ruleFields.rrule,
  rdates: ruleFields.rdates,
  exdates: ruleFields.exdates,
  interval: Type.Optional(Type.Integer({ minimum: 1, maximum: INTERVAL_MAX })),
  repeat_days: ruleFields.repeat_days,
  ends_on: Type.Optional(StringEnum(ENDS_ON)),
  end_count: ruleFields.end_count,
  end_date: ruleFields.end_date
})
export type PatchSeriesBody = Static<typeof PatchSeriesBody>

const seriesProperties = {
  id: Type.Integer(),
  title: Type.String(),
  status: StringEnum(SERIES_STATUSES),
  visibility: Type.Integer(),
  timezone: Type.String({ description: 'IANA time zone of the rule' }),
  creator_id: Type.String(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  version: Type.Integer({ description: 'Number of publishes' }),
  revision: Type.Integer({ description: 'Number of writes (the ETag)' }),
  is_deleted: Type.Boolean(),
  freq: StringEnum(FREQS),
  interval: Type.Integer(),
  duration: Type.String({ description: 'Length of each occurrence, a PostgreSQL interval (01:30:00)' }),
  ends_on: StringEnum(ENDS_ON),
  end_count: Nullable(Type.Integer()),
  end_date: Nullable(Timestamp()),
  start_dt: Nullable(Timestamp()),
  end_dt: Nullable(Timestamp()),
  repeat_days: Nullable(Type.Array(Type.Integer())),
  exdates: Type.Array(Timestamp(), {
    description: 'Starts the rule leaves out (EXDATE): given, or of occurrences removed one by one'
  }),
  rrule: Type.String({
    description: 'The RFC 5545 rule (RRULE value) of the series: its own, or the one freq, interval, repeat_days ' +
      'and ends_on stand for'
  }),
  rdates: Type.Array(Timestamp(), { description: 'Starts added to the rule (RDATE)' }),
  window_end: Nullable(Timestamp('ends_on never: occurrences exist up to here (a rolling window)')),
  description: Nullable(Type.String()),
  address: Nullable(Type.String()),
  cover_image_key: Nullable(
    Type.String({
      description: 'Always null: covers belong to each occurrence (PUT /events/{id}/cover), never to a series'
    })
  ),
  latitude: Nullable(Type.Number()),
  longitude: Nullable(Type.Number()),
  keywords: Type.Array(Type.String()),
  metadata: Type.Object({}, { additionalProperties: true }),
  template: Type.String(),
  template_version: Type.Integer(),
  org_id: Nullable(Type.String()),
  published_at: Nullable(Timestamp()),
  published_id: Nullable(Type.Integer()),
  series_manager_id: Nullable(Type.String()),
  series_manager_status: Nullable(StringEnum(['pending', 'active', 'revoked'] as const)),
  series_manager_invited_by: Nullable(Type.String()),
  series_manager_invited_email: Nullable(Type.String()),
  series_manager_invite_token: Type.Optional(
    Type.String({ description: 'The plain invite token: only in the invite response' })
  ),
  series_manager_invited_at: Nullable(Timestamp()),
  series_manager_accepted_at: Nullable(Timestamp()),
  series_manager_expires_at: Nullable(Timestamp())
}
export const EventSeries = model('EventSeries', seriesProperties)

const RemovedOccurrence = Type.Object({
  id: Type.Integer(),
  start_dt: Nullable(Timestamp()),
  series_index: Nullable(Type.Integer())
})
export const EventSeriesUpdate = model('EventSeriesUpdate', {
  ...seriesProperties,
  removed_occurrences: Type.Array(RemovedOccurrence, {
    description: 'Occurrences the rule change removed (soft-deleted; their attendees are kept on them)'
  }),
  added_occurrences: Type.Integer({ description: 'Occurrences the rule change created' })
})

const AttendeeCounts = Type.Object(Object.fromEntries(ATTENDEE_STATUSES.map(s => [s, Type.Integer()])), {
  description: 'Attendees by status (occurrence rows and series-level rows): every status, 0 when none'
})

export const SeriesWithOccurrences = model('SeriesWithOccurrences', {
  series: EventSeries,
  occurrences: Type.Array(Event),
  attendee_counts: AttendeeCounts,
  total_attendees: Type.Integer({ description: 'Unique contacts attending any occurrence' }),
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
  total_pages: Type.Integer()
})

export const PagedOccurrences = model('PagedOccurrences', {
  items: Type.Array(Event),
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  total_pages: Type.Integer(),
  next_cursor: NextCursorField
})

/** Event without its `$id`: a schema may hold one named copy of Event only. */
const EventItem = Type.Object(Event.properties, { additionalProperties: false, description: 'An Event' })

export const EventWithSeries = model('EventWithSeries', {
  event: Event,
  occurrences: Type.Array(EventItem, {
    description:
      `The first page of occurrences (at most ${OCCURRENCES_LIMIT_MAX}), the anchor first; ` +
      'empty without a series. The rest: GET /events/{id}/series/occurrences'
  }),
  total: Type.Integer({ description: 'Occurrences the series has (0 without a series)' }),
  page: Type.Integer({ description: 'Always 1' }),
  limit: Type.Integer({ description: `Occurrences in this answer at most (${OCCURRENCES_LIMIT_MAX})` }),
  total_pages: Type.Integer({
    description: `Pages of GET /events/{id}/series/occurrences at limit ${OCCURRENCES_LIMIT_MAX}`
  })
})

export const OccurrencesQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
  limit: Type.Integer({
    minimum: 1,
    maximum: OCCURRENCES_LIMIT_MAX,
    default: OCCURRENCES_LIMIT_DEFAULT,
    description: `Occurrences per page (1 to ${OCCURRENCES_LIMIT_MAX})`
  }),
  cursor: CursorParam
})

export const DeleteSeriesQuery = Type.Object({
  scope: StringEnum(['this', 'future', 'all'] as const, {
    description: 'this occurrence, this and the following, or the whole series'
  })
})

export const SeriesManagerBody = body({ email: Type.String({ format: 'email', minLength: 3, maxLength: 320 }) })

export const PublishSeriesBody = PublishEventBody
export type PublishSeriesBody = Static<typeof PublishSeriesBody>

export const SeriesParams = Type.Object({ id: IntId })
