/**
 * Series use cases: making a series (with a new event or from an existing one), reading it with
 * its occurrences, editing it (cascade to occurrences without overrides, regenerating on rule
 * changes), scoped edits and deletes of occurrences (this / future / all, splitting the series),
 * publishing, the series-manager invite and the rolling-window job. Decisions: docs/series.md.
 */
import { sql, type Kysely } from 'kysely'
import { DateTime, IANAZone } from 'luxon'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import type { Database } from '../../platform/db/database.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import {
  error403Forbidden,
  error404NotFound,
  error409Conflict,
  fieldError,
  invalidField
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { newInviteToken } from '../../platform/invite-tokens.ts'
import { notifyUser, queueNotification } from '../../platform/notifications/notifications.ts'
import { managerInvitation, seriesPublished } from '../../platform/notifications/templates.ts'
import { findEventForRead, isTenantAdmin, lockEventForWrite } from '../events/events.access.ts'
import { assertSeriesGrant } from '../event-collab/grants.ts'
import { EVENT_MANAGER_ROLES, grantedPermissions, type EventPermission } from '../events/event-permissions.ts'
import * as events from '../events/events.repository.ts'
import { METADATA_MAX_BYTES, type PatchEventBody } from '../events/events.schemas.ts'
import { createEvent, mergePatch, patchEvent, withSpacesAll } from '../events/events.service.ts'
import type { EventRow } from '../events/events.table.ts'
import { findTemplate, latestTemplate } from '../events/templates.ts'
import {
  customReachable,
  exceeds,
  expand,
  intervalText,
  localDays,
  shiftWallClock,
  type Occurrence,
  type Rule
} from './recurrence.ts'
import * as repo from './series.repository.ts'
import {
  MAX_CREATE_PER_REQUEST, MAX_OCCURRENCES, MAX_PAST_MONTHS, OCCURRENCES_LIMIT_MAX, STORAGE_METADATA_KEYS, WINDOW_MONTHS,
  type CreateEventWithSeriesBody, type CreateSeriesBody, type PatchSeriesBody, type PublishSeriesBody
} from './series.schemas.ts'
import type { SeriesRow } from './series.table.ts'

type Json = Record<string, unknown>
export type Scope = 'this' | 'future' | 'all'

/** Rows a ends_on=never series may grow to over the years (the window bounds each step). */
const NEVER_MAX = 100_000

// ---- views

export async function occurrenceViews (trx: Tx, tenantId: string, rows: EventRow[], seriesTitle: string | null) {
  const views = await withSpacesAll(trx, tenantId, rows)
  // fresh objects: set in place rather than copied (hundreds of occurrences)
  for (const e of views) e.series_title = e.series_id === null ? null : seriesTitle
  return views
}

/**
 * The series as the API shows it; the series-manager fields mirror the newest invite row. The
 * invitee's e-mail is shown only to who may manage the series' managers (docs/authorization.md).
 */
export async function seriesView (trx: Tx, auth: AuthContext, row: SeriesRow, token?: string) {
  const m = await repo.latestSeriesManager(trx, row.tenant_id, row.id)
  const showInvitee =
    m?.invited_email !== null &&
    m?.invited_email !== undefined &&
    (await hasSeriesPermission(trx, auth, row, 'managers:manage'))
  const expired = m?.status === 'pending' && m.expires_at !== null && new Date(m.expires_at).getTime() < Date.now()
  return {
    ...row,
    // covers belong to occurrences; a key a series row may still hold from before is not shown
    cover_image_key: null,
    ...(m !== undefined
      ? {
          series_manager_id: m.user_id,
          series_manager_status: expired ? 'revoked' as const : m.status,
          series_manager_invited_by: m.invited_by,
          series_manager_invited_email: showInvitee ? m.invited_email : null,
          series_manager_invited_at: m.invited_at,
          series_manager_accepted_at: m.accepted_at,
          series_manager_expires_at: m.expires_at
        }
      : {}),
    ...(token !== undefined ? { series_manager_invite_token: token } : {})
  }
}

// ---- the rule

const ms = (d: Date | string | null | undefined): number => d === null || d === undefined ? NaN : new Date(d).getTime()
const localDay = (d: Date | string, zone: string): string =>
  DateTime.fromJSDate(new Date(d), { zone }).toISODate() ?? ''

function ruleOf (s: Pick<SeriesRow, 'freq' | 'interval' | 'repeat_days' | 'ends_on' | 'end_count' | 'end_date'>): Rule {
  return {
    freq: s.freq,
    interval: s.interval,
    repeatDays: s.repeat_days,
    endsOn: s.ends_on,
    endCount: s.end_count,
    endDate: s.end_date === null ? null : new Date(s.end_date)
  }
}

const anchorOf = (s: Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>) => ({
  start: new Date(s.start_dt),
  durationMs: ms(s.end_dt) - ms(s.start_dt),
  timezone: s.timezone
})

/** The rule's positions of a series: bounded by its end, its window (never) and the row bounds. */
function positionsOf (s: SeriesRow, until?: Date): Occurrence[] {
  const window = until ?? (s.window_end === null ? undefined : new Date(s.window_end))
  return expand(anchorOf(s), ruleOf(s), {
    until: s.ends_on === 'never' ? window : undefined,
    max: s.ends_on === 'never' ? NEVER_MAX : MAX_OCCURRENCES
  })
}

/** Occurrences start at most this long after the anchor (after_n, on_date), and anchors before LATEST_ANCHOR_YEAR. */
const MAX_SPAN_YEARS = 10
const LATEST_ANCHOR_YEAR = 9000
const MAX_DURATION_DAYS = 366
const spanLimit = (start: Date): Date =>
  DateTime.fromJSDate(start, { zone: 'UTC' }).plus({ years: MAX_SPAN_YEARS }).toJSDate()

const windowFrom = (now: Date): Date =>
  DateTime.fromJSDate(now, { zone: 'UTC' }).plus({ months: WINDOW_MONTHS }).toJSDate()

/** The earliest start a new series' anchor may have (MAX_PAST_MONTHS before `now`). */
const earliestAnchor = (now: Date): Date =>
  DateTime.fromJSDate(now, { zone: 'UTC' }).minus({ months: MAX_PAST_MONTHS }).toJSDate()
const DAY_MS = 86_400_000

type RuleAndAnchor = Pick<
  SeriesRow,
  'start_dt' | 'end_dt' | 'timezone' | 'freq' | 'interval' | 'repeat_days' | 'ends_on' | 'end_count' | 'end_date'
>

/**
 * The window end of an ends_on=never series that materialises at most MAX_CREATE_PER_REQUEST
 * positions from `from` on: `windowEnd`, or the start of the first position past that count (the
 * window job extends it later, at most as many again per run).
 */
function cappedWindow (s: RuleAndAnchor, from: Date, windowEnd: Date): Date {
  const positions = expand(anchorOf(s), ruleOf(s), { until: windowEnd, max: NEVER_MAX })
  const first = positions.findIndex(p => p.start.getTime() >= from.getTime())
  if (first < 0) return windowEnd
  return positions[first + MAX_CREATE_PER_REQUEST]?.start ?? windowEnd
}

/** A metadata object without the keys that carry storage keys (they belong to one event's cover upload). */
function withoutStorageKeys (metadata: Json): Json {
  const out = { ...metadata }
  for (const k of STORAGE_METADATA_KEYS) Reflect.deleteProperty(out, k)
  return out
}

/** 400 when a series body's metadata holds a storage-key field (`body.metadata.cover_image`). */
function refuseStorageKeys (metadata: Json | null | undefined): void {
  if (metadata === null || metadata === undefined) return
  for (const k of STORAGE_METADATA_KEYS) {
    if (Object.hasOwn(metadata, k)) {
      throw invalidField(
        `body.metadata.${k}`,
        'set by the cover upload (PUT /events/{id}/cover) only, never in a series body'
      )
    }
  }
}

interface RuleInput {
  freq?: Rule['freq'] | undefined
  interval?: number | undefined
  repeat_days?: number[] | null | undefined
  ends_on?: Rule['endsOn'] | undefined
  end_count?: number | null | undefined
  end_date?: string | null | undefined
}

/**
 * Checks a rule against its anchor (400 naming the field, `prefix` = `body.` or `body.series.`)
 * and returns the stored rule columns.
 */
function checkRule (
  input: RuleInput,
  base: Partial<SeriesRow> & Pick<SeriesRow, 'start_dt' | 'end_dt' | 'timezone'>,
  prefix: string,
  anchorAt: { start: string; end: string }
) {
  const freq = input.freq ?? base.freq
  if (freq === undefined) throw invalidField(`${prefix}freq`, 'required')
  const interval = input.interval ?? base.interval ?? 1
  const endsOn = input.ends_on ?? base.ends_on ?? 'never'
  const repeatDays = 'repeat_days' in input ? (input.repeat_days ?? null) : (base.repeat_days ?? null)
  const endCount =
    endsOn !== 'after_n' ? null : 'end_count' in input ? (input.end_count ?? null) : (base.end_count ?? null)
  const endDateInput =
    endsOn !== 'on_date' ? null : 'end_date' in input ? (input.end_date ?? null) : (base.end_date ?? null)
  const endDate = endDateInput === null ? null : new Date(endDateInput)
  const zone = base.timezone
  if (new Date(base.start_dt).getUTCFullYear() >= LATEST_ANCHOR_YEAR) {
    throw invalidField(anchorAt.start, `a series starts before the year ${LATEST_ANCHOR_YEAR}`, base.start_dt)
  }
  if (ms(base.end_dt) - ms(base.start_dt) > MAX_DURATION_DAYS * 86_400_000) {
    throw invalidField(anchorAt.end, `an occurrence lasts at most ${MAX_DURATION_DAYS} days`, base.end_dt)
  }
  if (freq === 'weekly' || freq === 'custom') {
    if (repeatDays === null || repeatDays.length === 0) {
      throw invalidField(`${prefix}repeat_days`, `required (ISO weekdays 1-7) when freq is ${freq}`, repeatDays)
    }
    if (
      freq === 'custom' &&
      !customReachable(DateTime.fromJSDate(new Date(base.start_dt), { zone }).weekday, interval, repeatDays)
    ) {
      throw invalidField(
        `${prefix}repeat_days`,
        `no listed weekday is ever reached every ${interval} days from the anchor`,
        repeatDays
      )
    }
  }
  if (endsOn === 'after_n' && endCount === null) {
    throw invalidField(`${prefix}end_count`, 'required when ends_on is after_n', endCount)
  }
  if (endsOn === 'on_date') {
    if (endDate === null) throw invalidField(`${prefix}end_date`, 'required when ends_on is on_date', endDateInput)
    if (localDay(endDate, zone) < localDay(base.start_dt, zone)) {
      throw invalidField(`${prefix}end_date`, 'expected a date on or after the first start', endDateInput)
    }
  }
  const rule: Rule = {
    freq,
    interval,
    repeatDays: freq === 'weekly' || freq === 'custom' ? repeatDays : null,
    endsOn,
    endCount,
    endDate
  }
  if (endsOn === 'on_date' && exceeds(anchorOf(base), rule, MAX_OCCURRENCES)) {
    throw invalidField(
      `${prefix}end_date`,
      `the rule yields more than ${MAX_OCCURRENCES} occurrences; choose an earlier end_date or ends_on never`,
      endDateInput
    )
  }
  if (endsOn === 'after_n' || endsOn === 'on_date') {
    const last = expand(anchorOf(base), rule, { max: MAX_OCCURRENCES }).at(-1)
    if (last !== undefined && last.start.getTime() > spanLimit(new Date(base.start_dt)).getTime()) {
      throw invalidField(
        `${prefix}${endsOn === 'after_n' ? 'end_count' : 'end_date'}`,
        `the last occurrence would start more than ${MAX_SPAN_YEARS} years after the first`,
        endsOn === 'after_n' ? endCount : endDateInput
      )
    }
  }
  return {
    freq,
    interval,
    repeat_days: rule.repeatDays === null ? null : [...new Set(rule.repeatDays)].sort((a, b) => a - b),
    ends_on: endsOn,
    end_count: endCount,
    end_date: endDate
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Where a JSON value holds a lone UTF-16 surrogate (in a key or a string), which jsonb cannot store. */
function loneSurrogateAt (v: unknown, location: string): string | undefined {
  if (typeof v === 'string') return LONE_SURROGATE.test(v) ? location : undefined
  if (v === null || typeof v !== 'object') return undefined
  for (const [k, x] of Object.entries(v)) {
    const here = Array.isArray(v) ? `${location}[${k}]` : `${location}.${k}`
    if (LONE_SURROGATE.test(k)) return here
    const found = loneSurrogateAt(x, here)
    if (found !== undefined) return found
  }
  return undefined
}

function checkTimezone (tz: string | undefined, location: string): void {
  if (tz !== undefined && !IANAZone.isValidZone(tz)) throw invalidField(location, 'expected an IANA time zone name', tz)
}

// ---- occurrences

/** What the new occurrences of a series share: its content (the template's initial state, the metadata's JSON). */
function occurrenceContent (s: SeriesRow): repo.OccurrenceContent {
  const template = findTemplate(s.template, s.template_version) ?? latestTemplate(s.template)
  return {
    org_id: s.org_id,
    creator_id: s.creator_id,
    title: s.title,
    description: s.description,
    address: s.address,
    latitude: s.latitude,
    longitude: s.longitude,
    timezone: s.timezone,
    keywords: s.keywords,
    metadata: JSON.stringify(withoutStorageKeys(s.metadata)),
    visibility: s.visibility,
    status: s.status,
    published_at: s.status === 'published' ? (s.published_at ?? new Date()) : null,
    version: s.version,
    template: s.template,
    template_version: s.template_version,
    state: template?.state_machine?.initial ?? null,
    // a cover belongs to one event: a new occurrence has none (PUT /events/{id}/cover gives it its own)
    cover_image_key: null,
    series_id: s.id
  }
}

interface SyncResult {
  rows: EventRow[]
  removed: Array<{ id: number; start_dt: Date | null; series_index: number | null }>
  added: number
}

/**
 * Makes the live occurrences of `s` match its rule from `from` on. Rows are matched to positions
 * by their original slot's local date (the slot under `old`, the series before the change), so a
 * row keeps its id, attendees and overrides while the rule still has its day; a row with times of
 * its own (moved) keeps them. Unmatched rows are soft-deleted and reported; new positions get rows.
 * Only rows from the first slot at or after `from` are read and returned (`rows`); at most
 * MAX_CREATE_PER_REQUEST positions may be wanted (the callers cap rule and window first).
 */
async function syncOccurrences (trx: Tx, s: SeriesRow, old: SeriesRow, from: Date): Promise<SyncResult> {
  const tenantId = s.tenant_id
  const dayIn = localDays(s.timezone)
  const excluded = new Set(s.exdates.map(d => dayIn(new Date(d))))
  const positions = positionsOf(s)
  const wanted = positions.filter(p => p.start.getTime() >= from.getTime() && !excluded.has(dayIn(p.start)))
  const oldSlots = old === s ? positions : positionsOf(old)
  const byDay = new Map(wanted.map(p => [dayIn(p.start), p]))
  const dayInOld = old.timezone === s.timezone ? dayIn : localDays(old.timezone)
  // the callers bound the work before it starts (checkRule, cappedWindow): this is the backstop
  if (wanted.length > MAX_CREATE_PER_REQUEST) {
    throw new Error(`series ${s.id}: ${wanted.length} positions to materialise, more than ${MAX_CREATE_PER_REQUEST}`)
  }
  // rows of earlier slots are left alone: only those from the first slot at or after `from` are read
  const firstIndex = oldSlots.findIndex(p => p.start.getTime() >= from.getTime())
  const rows = await repo.lockOccurrenceRows(trx, tenantId, s.id, firstIndex < 0 ? oldSlots.length : firstIndex)
  const removed: SyncResult['removed'] = []
  const moves: repo.SlotMove[] = []
  const kept = new Set<number>()
  for (const row of rows) {
    const slot = row.series_index === null ? undefined : oldSlots[row.series_index]
    const slotStart = slot?.start ?? (row.start_dt === null ? undefined : new Date(row.start_dt))
    if (slotStart === undefined || slotStart.getTime() < from.getTime()) continue
    const p = byDay.get(dayInOld(slotStart))
    if (p === undefined || kept.has(p.index)) {
      removed.push({ id: row.id, start_dt: row.start_dt, series_index: row.series_index })
      continue
    }
    kept.add(p.index)
    const moved =
      slot === undefined || ms(row.start_dt) !== slot.start.getTime() || ms(row.end_dt) !== slot.end.getTime()
    const retime =
      !moved &&
      (ms(row.start_dt) !== p.start.getTime() || ms(row.end_dt) !== p.end.getTime() || row.timezone !== s.timezone)
    if (row.series_index !== p.index || retime) {
      moves.push({
        id: row.id,
        seriesIndex: p.index,
        times: retime ? { start: p.start, end: p.end, timezone: s.timezone } : undefined
      })
    }
  }
  // the rows are locked: the live rows after the writes are the locked ones less the removed,
  // the moved ones as written and the new ones (no second read)
  await repo.deleteOccurrences(trx, tenantId, removed.map(r => r.id))
  const written = await repo.moveOccurrences(trx, tenantId, moves)
  const inserted = await repo.insertOccurrences(
    trx,
    tenantId,
    occurrenceContent(s),
    wanted.filter(p => !kept.has(p.index))
  )
  const live = new Map(rows.map(r => [r.id, r]))
  for (const r of removed) live.delete(r.id)
  for (const r of [...written, ...inserted]) live.set(r.id, r)
  return { rows: [...live.values()].sort(bySeriesIndex), removed, added: inserted.length }
}

/** The order of lockOccurrenceRows: series_index (nulls last), then id. */
function bySeriesIndex (a: EventRow, b: EventRow): number {
  const ia = a.series_index ?? Infinity
  const ib = b.series_index ?? Infinity
  return ia !== ib ? ia - ib : a.id - b.id
}

/**
 * A metadata object holding the row's own storage-key entries (`cover_image`), to keep them through
 * a metadata cascade: a cover and its key belong to one event and are never copied to another.
 * Built from immutable functions only (`jsonb_set`, not `jsonb_build_object`): Citus runs the update
 * on the shards and refuses a CASE or COALESCE over a function that is not immutable.
 */
const ownStorageEntries = sql.join(
  STORAGE_METADATA_KEYS.map(
    k => sql`coalesce(jsonb_set('{}'::jsonb, array[${sql.lit(k)}]::text[], metadata -> ${sql.lit(k)}), '{}'::jsonb)`
  ),
  sql` || `
)

/**
 * Writes the series' content onto its occurrences; title, description and metadata skip overridden ones; covers are
 * never written.
 */
async function cascadeContent (trx: Tx, s: SeriesRow, fields: ReadonlySet<string>): Promise<void> {
  const base = trx.updateTable('events')
    .where('tenant_id', '=', s.tenant_id).where('series_id', '=', s.id)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
  const all: events.EventUpdate = {}
  for (const f of ['address', 'latitude', 'longitude', 'keywords', 'visibility'] as const) {
    if (fields.has(f)) (all as Record<string, unknown>)[f] = s[f]
  }
  const write = async (qb: typeof base, values: events.EventUpdate) => {
    if (Object.keys(values).length === 0) return
    await qb.set({ ...values, revision: sql`revision + 1`, updated_at: sql`now()` }).execute()
  }
  await write(base, all)
  if (fields.has('title')) await write(base.where('title_override', 'is', null), { title: s.title })
  if (fields.has('description')) {
    await write(base.where('description_override', 'is', null), { description: s.description })
  }
  if (fields.has('metadata')) {
    const shared = JSON.stringify(withoutStorageKeys(s.metadata))
    await base
      .where('metadata_override', 'is', null)
      .set({
        metadata: sql`${shared}::jsonb || ${ownStorageEntries}`,
        revision: sql`revision + 1`,
        updated_at: sql`now()`
      })
      .execute()
    // overridden occurrences: the series' metadata under their own keys
    await base
      .where('metadata_override', 'is not', null)
      .set({
        metadata: sql`${shared}::jsonb || metadata_override || ${ownStorageEntries}`,
        revision: sql`revision + 1`,
        updated_at: sql`now()`
      })
      .execute()
  }
}

// ---- create

async function record (trx: Tx, auth: AuthContext, s: SeriesRow, topic: string, extra: Json = {}): Promise<void> {
  await emit(trx, {
    tenantId: auth.tenantId,
    topic,
    aggregateType: 'series',
    aggregateId: s.id,
    actorId: auth.userId,
    payload: { series_id: s.id, title: s.title, status: s.status, template: s.template, ...extra }
  })
}

/** Makes `anchor` position 0 of a new series with `input`'s rule and materialises the occurrences. */
async function seriesFromAnchor (
  trx: Tx,
  auth: AuthContext,
  anchor: EventRow,
  input: RuleInput,
  prefix: string,
  now: Date
) {
  const startAt = prefix === 'body.series.' ? 'body.start_dt' : 'path.id'
  if (anchor.start_dt === null) throw invalidField(startAt, 'a series needs an anchor with a start_dt', null)
  const start = new Date(anchor.start_dt)
  if (start.getTime() < earliestAnchor(now).getTime()) {
    throw invalidField(startAt, `a series starts at most ${MAX_PAST_MONTHS} months before now`, anchor.start_dt)
  }
  const end = anchor.end_dt === null ? start : new Date(anchor.end_dt)
  const base = { start_dt: start, end_dt: end, timezone: anchor.timezone }
  const rule = checkRule(
    input,
    base,
    prefix,
    prefix === 'body.series.' ? { start: 'body.start_dt', end: 'body.end_dt' } : { start: 'path.id', end: 'path.id' }
  )
  const s = await repo.insertSeries(trx, auth.tenantId, {
    org_id: anchor.org_id,
    creator_id: anchor.creator_id,
    title: anchor.title,
    description: anchor.description,
    address: anchor.address,
    latitude: anchor.latitude,
    longitude: anchor.longitude,
    start_dt: start,
    end_dt: end,
    timezone: anchor.timezone,
    keywords: anchor.keywords,
    // the anchor's cover (key and metadata) stays the anchor's: nothing of it goes to the series
    metadata: JSON.stringify(withoutStorageKeys(anchor.metadata)),
    visibility: anchor.visibility,
    status: anchor.status === 'published' ? 'published' : 'draft',
    published_at: anchor.published_at,
    version: anchor.version,
    template: anchor.template,
    template_version: anchor.template_version,
    cover_image_key: null,
    ...rule,
    duration: intervalText(end.getTime() - start.getTime()),
    window_end:
      rule.ends_on === 'never'
        ? cappedWindow({ ...base, ...rule }, start, windowFrom(now.getTime() > start.getTime() ? now : start))
        : null
  })
  await events.updateEvent(trx, auth.tenantId, anchor.id, {
    series_id: s.id,
    series_index: 0,
    ...(anchor.end_dt === null ? { end_dt: end } : {})
  })
  const { rows } = await syncOccurrences(trx, s, s, start)
  if (s.window_end !== null) await repo.setWindow(trx, auth.tenantId, s.id, new Date(s.window_end))
  await record(trx, auth, s, 'series.created', { anchor_event_id: anchor.id, occurrences: rows.length })
  return { series: s, rows }
}

export async function createEventWithSeries (
  trx: Tx,
  auth: AuthContext,
  input: CreateEventWithSeriesBody,
  now = new Date()
) {
  const { series, $schema: _s, ...fields } = input
  refuseStorageKeys(fields.metadata)
  if (series !== undefined && series !== null && (fields.start_dt === undefined || fields.start_dt === null)) {
    throw invalidField('body.start_dt', 'required when a series is given')
  }
  const event = await createEvent(trx, auth, fields)
  const limit = OCCURRENCES_LIMIT_MAX
  if (series === undefined || series === null) {
    const [view] = await occurrenceViews(trx, auth.tenantId, [event], null)
    if (view === undefined) throw new Error('created event not found')
    return { event: view, occurrences: [], total: 0, page: 1, limit, total_pages: 0 }
  }
  const made = await seriesFromAnchor(trx, auth, event, series, 'body.series.', now)
  // one page in the answer (the anchor first); the rest through GET /events/{id}/series/occurrences
  const views = await occurrenceViews(trx, auth.tenantId, made.rows.slice(0, limit), made.series.title)
  const view = views.find(v => v.id === event.id)
  if (view === undefined) throw new Error('anchor not found among the occurrences')
  const total = made.rows.length
  return { event: view, occurrences: views, total, page: 1, limit, total_pages: totalPages(total, limit) }
}

/** The first OCCURRENCES_LIMIT_MAX occurrences (the anchor first) and how many the series has. */
export async function convertToSeries (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  input: CreateSeriesBody,
  now = new Date()
) {
  const anchor = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: false })
  if (anchor.series_id !== null) throw error409Conflict('the event already belongs to a series')
  const made = await seriesFromAnchor(trx, auth, anchor, input, 'body.', now)
  return {
    items: await occurrenceViews(trx, auth.tenantId, made.rows.slice(0, OCCURRENCES_LIMIT_MAX), made.series.title),
    total: made.rows.length,
    limit: OCCURRENCES_LIMIT_MAX
  }
}

// ---- read

async function seriesOfRow (trx: Tx, tenantId: string, row: EventRow, lock: boolean): Promise<SeriesRow> {
  const s = row.series_id === null ? undefined : await repo.findSeries(trx, tenantId, row.series_id, lock)
  if (s === undefined) throw error404NotFound('the event is not an occurrence of a series')
  return s
}

/**
 * Series-level rights (docs/series.md, "Permissions"): a tenant admin, the series' creator, or an
 * active series manager (an `event_managers` row with this `series_id`) whose grant includes
 * `permission`. Each of them holds the permission on every occurrence too (the creator of the
 * series creates every occurrence; a series-manager row applies to every occurrence), so a
 * series-wide change never touches an occurrence its caller could not change on its own.
 */
export async function hasSeriesPermission (
  trx: Tx,
  auth: AuthContext,
  s: Pick<SeriesRow, 'id' | 'creator_id'>,
  permission: EventPermission
): Promise<boolean> {
  if (isTenantAdmin(auth) || s.creator_id === auth.userId) return true
  const grants = await repo.activeSeriesGrants(trx, auth.tenantId, s.id, auth.userId)
  return grants.some(m => grantedPermissions(m).has(permission))
}

/** 403 unless the caller holds `permission` at series level (a change beyond the addressed occurrence). */
async function requireSeriesPermission (
  trx: Tx,
  auth: AuthContext,
  s: SeriesRow,
  permission: EventPermission
): Promise<void> {
  if (!(await hasSeriesPermission(trx, auth, s, permission))) {
    throw error403Forbidden(
      `missing series permission ${permission}: changing more than this occurrence needs it for the whole series (admin, series creator or series manager)`
    )
  }
}

/**
 * Locks an occurrence (with `permission` on it) and its series; `level` 'series' also asks for
 * the permission at series level (every change beyond the addressed occurrence).
 */
async function lockForSeriesWrite (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  permission: EventPermission,
  level: 'series' | 'occurrence',
  ifMatch?: string
) {
  const row = await lockEventForWrite(trx, auth, eventId, permission, { includeDraftClones: true })
  const occurrence = row.published_id === null ? row : await events.lockById(trx, auth.tenantId, row.published_id)
  const series = await seriesOfRow(trx, auth.tenantId, occurrence, true)
  if (level === 'series') await requireSeriesPermission(trx, auth, series, permission)
  checkIfMatch(ifMatch, series.revision)
  return { occurrence, series }
}

const totalPages = (total: number, limit: number) => Math.ceil(total / limit)

export async function getSeries (trx: Tx, auth: AuthContext, eventId: number, page: number, limit: number) {
  const row = await findEventForRead(trx, auth, eventId, { includeDraftClones: true })
  const s = await seriesOfRow(trx, auth.tenantId, row, false)
  const { items, total } = await repo.pageOccurrences(trx, auth, s.id, { page, limit })
  return {
    series: await seriesView(trx, auth, s),
    occurrences: await occurrenceViews(trx, auth.tenantId, items, s.title),
    ...(await repo.attendeeCounts(trx, auth.tenantId, s.id)),
    total,
    page,
    limit,
    total_pages: totalPages(total, limit)
  }
}

export async function listOccurrences (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  page: number,
  limit: number,
  cursor?: string
) {
  const row = await findEventForRead(trx, auth, eventId, { includeDraftClones: true })
  const s = await seriesOfRow(trx, auth.tenantId, row, false)
  const found = await repo.pageOccurrences(trx, auth, s.id, { page, limit, cursor })
  return {
    items: await occurrenceViews(trx, auth.tenantId, found.items, s.title),
    page: found.page,
    limit,
    total: found.total,
    total_pages: totalPages(found.total, limit),
    next_cursor: found.next_cursor
  }
}

// ---- edit

const RULE_FIELDS = ['freq', 'interval', 'repeat_days', 'ends_on', 'end_count', 'end_date'] as const
/** Cascaded content; no storage key (`cover_image_key` is not a field of the body: 400). */
const CONTENT = ['title', 'description', 'address', 'latitude', 'longitude', 'keywords', 'visibility'] as const

/** Applies a series patch to a locked series: content cascade, then the rule and times (regeneration from `now`). */
async function applySeriesPatch (trx: Tx, auth: AuthContext, s: SeriesRow, input: PatchSeriesBody, now: Date) {
  checkTimezone(input.timezone, 'body.timezone')
  const start = input.start_dt !== undefined ? new Date(input.start_dt) : new Date(s.start_dt)
  const end = input.end_dt !== undefined
    ? new Date(input.end_dt)
    : new Date(start.getTime() + ms(s.end_dt) - ms(s.start_dt))
  if (end.getTime() < start.getTime()) {
    throw invalidField(
      input.end_dt !== undefined ? 'body.end_dt' : 'body.start_dt',
      'expected end_dt >= start_dt',
      input.end_dt ?? input.start_dt
    )
  }
  const timezone = input.timezone ?? s.timezone
  const ruleChanged = RULE_FIELDS.some(f => f in input)
  const timesChanged = start.getTime() !== ms(s.start_dt) || end.getTime() !== ms(s.end_dt) || timezone !== s.timezone
  // an anchor moves back at most a day, or to MAX_PAST_MONTHS before now: the rule's positions are counted from it
  if (timesChanged && start.getTime() < Math.min(earliestAnchor(now).getTime(), ms(s.start_dt) - DAY_MS)) {
    throw invalidField(
      'body.start_dt',
      `a series starts at most ${MAX_PAST_MONTHS} months before now (or moves back by a day at most)`,
      input.start_dt
    )
  }
  const rule =
    ruleChanged || timesChanged
      ? checkRule(input, { ...s, start_dt: start, end_dt: end, timezone }, 'body.', {
        start: 'body.start_dt',
        end: 'body.end_dt'
      })
      : undefined
  const values: repo.SeriesUpdate = { ...rule }
  const fields = new Set<string>()
  for (const f of CONTENT) {
    if (f in input) {
      (values as Record<string, unknown>)[f] = f === 'keywords' ? (input.keywords ?? []) : input[f]
      fields.add(f)
    }
  }
  if ('metadata' in input) {
    refuseStorageKeys(input.metadata)
    const bad = loneSurrogateAt(input.metadata, 'body.metadata')
    if (bad !== undefined) throw invalidField(bad, 'expected text without lone UTF-16 surrogates')
    values.metadata = JSON.stringify(
      input.metadata === null ? {} : withoutStorageKeys(mergePatch(s.metadata, input.metadata) as Json)
    )
    if (Buffer.byteLength(values.metadata) > METADATA_MAX_BYTES) {
      throw invalidField('body.metadata', `expected at most ${METADATA_MAX_BYTES} bytes of JSON`)
    }
    fields.add('metadata')
  }
  if (timesChanged) {
    Object.assign(values, {
      start_dt: start,
      end_dt: end,
      timezone,
      duration: intervalText(end.getTime() - start.getTime())
    })
  }
  if (rule !== undefined) {
    const windowEnd =
      s.window_end === null ? windowFrom(now.getTime() > start.getTime() ? now : start) : new Date(s.window_end)
    values.window_end =
      rule.ends_on === 'never'
        ? cappedWindow({ ...rule, start_dt: start, end_dt: end, timezone }, now, windowEnd)
        : null
  }
  if (Object.keys(values).length === 0) return { series: s, removed: [], added: 0 }
  const updated = await repo.updateSeries(trx, auth.tenantId, s.id, values)
  await cascadeContent(trx, updated, fields)
  let sync: Pick<SyncResult, 'removed' | 'added'> = { removed: [], added: 0 }
  if (ruleChanged || timesChanged) {
    sync = await syncOccurrences(trx, updated, s, now)
    await repo.setWindow(trx, auth.tenantId, s.id, updated.window_end === null ? null : new Date(updated.window_end))
  }
  await record(trx, auth, updated, 'series.updated', {
    fields: Object.keys(values),
    removed_occurrences: sync.removed.map(r => r.id),
    added_occurrences: sync.added
  })
  return { series: updated, ...sync }
}

export async function patchSeries (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  input: PatchSeriesBody,
  ifMatch: string | undefined,
  now = new Date()
) {
  const { series } = await lockForSeriesWrite(trx, auth, eventId, 'event:edit', 'series', ifMatch)
  const result = await applySeriesPatch(trx, auth, series, input, now)
  return {
    ...(await seriesView(trx, auth, result.series)),
    removed_occurrences: result.removed,
    added_occurrences: result.added
  }
}

/** Ends `s` right before position `k` (after_n: k occurrences; otherwise on the local day of position k - 1). */
async function endBefore (trx: Tx, s: SeriesRow, k: number): Promise<SeriesRow> {
  const positions = positionsOf(s)
  const prev = positions[k - 1]
  const values: repo.SeriesUpdate = s.ends_on === 'after_n'
    ? { end_count: k }
    : { ends_on: 'on_date', end_date: prev?.start ?? new Date(s.start_dt), end_count: null, window_end: null }
  await repo.setWindow(trx, s.tenant_id, s.id, null)
  return await repo.updateSeries(trx, s.tenant_id, s.id, values)
}

/**
 * Splits a series at an occurrence (position k ≥ 1): the old series ends before it, a new series
 * (same rule and content) starts at its slot and takes the occurrences from k on, the exclusions
 * after it and copies of the series-level managers and attendees.
 */
async function splitAt (trx: Tx, auth: AuthContext, s: SeriesRow, k: number): Promise<SeriesRow> {
  const positions = positionsOf(s)
  const slot = positions[k]
  if (slot === undefined) throw error409Conflict('the occurrence is no longer part of the rule')
  const zone = s.timezone
  const cut = localDay(slot.start, zone)
  const { id: _id, tenant_id: _t, created_at: _c, updated_at: _u, revision: _r, ...rest } = s
  const next = await repo.insertSeries(trx, auth.tenantId, {
    ...rest,
    cover_image_key: null,
    metadata: JSON.stringify(withoutStorageKeys(s.metadata)),
    start_dt: slot.start,
    end_dt: slot.end,
    end_count: s.ends_on === 'after_n' && s.end_count !== null ? Math.max(1, s.end_count - k) : s.end_count,
    exdates: s.exdates.filter(d => localDay(d, zone) >= cut)
  })
  const newAnchor = await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', auth.tenantId).where('series_id', '=', s.id).where('series_index', '=', k)
    .where('is_deleted', '=', false).where('published_id', 'is', null)
    .executeTakeFirstOrThrow()
  await endBefore(trx, s, k)
  await repo.updateSeries(trx, auth.tenantId, s.id, { exdates: s.exdates.filter(d => localDay(d, zone) < cut) })
  await trx
    .updateTable('events')
    .set({
      series_id: next.id,
      series_index: sql`series_index - ${k}`,
      revision: sql`revision + 1`,
      updated_at: sql`now()`
    })
    .where('tenant_id', '=', auth.tenantId)
    .where('series_id', '=', s.id)
    .where('series_index', '>=', k)
    .execute()
  // the series' managers and series-level attendees, copied to the new series: read, then written as VALUES
  // (an INSERT … SELECT into a table with an identity column runs as a COPY on Citus, which row-level security refuses)
  const managers = await trx
    .selectFrom('event_managers')
    .select([
      'tenant_id',
      'org_id',
      'user_id',
      'permissions',
      'role',
      'status',
      'invited_email',
      'invited_by',
      'invited_at',
      'accepted_at'
    ])
    .where('tenant_id', '=', auth.tenantId)
    .where('series_id', '=', s.id)
    .where('status', '=', 'active')
    .execute()
  for (const chunk of rowChunks(managers.map(m => ({ ...m, event_id: newAnchor.id, series_id: next.id })), 12)) {
    // a user already managing the new anchor directly keeps that row
    await trx.insertInto('event_managers').values(chunk).onConflict(oc => oc.doNothing()).execute()
  }
  const attendees = await trx.selectFrom('attendees')
    .select(['tenant_id', 'contact_id', 'org_id', 'status', 'notes', 'invited_at'])
    .where('tenant_id', '=', auth.tenantId).where('series_id', '=', s.id).where('event_id', 'is', null)
    .execute()
  for (const chunk of rowChunks(attendees.map(a => ({ ...a, series_id: next.id })), 7)) {
    await trx.insertInto('attendees').values(chunk).execute()
  }
  if (next.window_end !== null) await repo.setWindow(trx, auth.tenantId, next.id, new Date(next.window_end))
  await record(trx, auth, next, 'series.split', { from_series_id: s.id, at_index: k })
  return next
}

const positionOf = (row: EventRow): number => row.series_index ?? 0

/** A series patch from an occurrence patch: times move by the occurrence's wall-clock shift. */
function seriesPatchFrom (s: SeriesRow, occurrence: EventRow, patch: PatchEventBody): PatchSeriesBody {
  const out: Record<string, unknown> = {}
  for (const f of [
    'title',
    'description',
    'address',
    'latitude',
    'longitude',
    'keywords',
    'metadata',
    'visibility',
    'timezone'
  ] as const) {
    if (f in patch) out[f] = patch[f]
  }
  const zone = s.timezone
  if (patch.start_dt !== undefined && patch.start_dt !== null && occurrence.start_dt !== null) {
    out.start_dt = shiftWallClock(
      new Date(s.start_dt),
      zone,
      new Date(occurrence.start_dt),
      new Date(patch.start_dt)
    ).toISOString()
  }
  if (patch.end_dt !== undefined && patch.end_dt !== null && occurrence.end_dt !== null) {
    out.end_dt = shiftWallClock(
      new Date(s.end_dt),
      zone,
      new Date(occurrence.end_dt),
      new Date(patch.end_dt)
    ).toISOString()
  } else if (out.start_dt !== undefined) {
    out.end_dt = new Date(new Date(out.start_dt as string).getTime() + ms(s.end_dt) - ms(s.start_dt)).toISOString()
  }
  return out as PatchSeriesBody
}

/**
 * `PATCH /events/{id}?scope=`: `this` edits the occurrence alone (title, description and metadata
 * become its overrides, times its own); `all` edits the series (every occurrence, overrides of the
 * edited fields cleared); `future` splits the series at this occurrence and edits the new one.
 * An event outside any series is patched as usual whatever the scope.
 */
export async function applyScopedEdit (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  scope: Scope,
  patch: PatchEventBody,
  ifMatch?: string,
  now = new Date()
): Promise<EventRow> {
  const first = await lockEventForWrite(trx, auth, eventId, 'event:edit', { includeDraftClones: true })
  const occurrence = first.published_id === null ? first : await events.lockById(trx, auth.tenantId, first.published_id)
  if (occurrence.series_id === null) return await patchEvent(trx, auth, eventId, patch, ifMatch)
  if (scope === 'this') {
    const before = await patchEvent(trx, auth, eventId, patch, ifMatch)
    const overrides: events.EventUpdate = {}
    if (patch.title !== undefined) overrides.title_override = patch.title
    if ('description' in patch) overrides.description_override = patch.description ?? null
    if (patch.metadata !== undefined) {
      overrides.metadata_override =
        patch.metadata === null ? null : JSON.stringify(mergePatch(before.metadata_override ?? {}, patch.metadata))
    }
    if (Object.keys(overrides).length === 0) return before
    return await events.updateEvent(trx, auth.tenantId, before.id, overrides)
  }
  if ('template' in patch) {
    throw error409Conflict('the template of an event is immutable', [
      fieldError('body.template', 'must be omitted', patch.template)
    ])
  }
  let s = await seriesOfRow(trx, auth.tenantId, occurrence, true)
  // future and all change more than this occurrence
  await requireSeriesPermission(trx, auth, s, 'event:edit')
  checkIfMatch(ifMatch, first.revision)
  if (scope === 'future' && positionOf(occurrence) > 0) s = await splitAt(trx, auth, s, positionOf(occurrence))
  const current = await events.lockById(trx, auth.tenantId, occurrence.id)
  const seriesPatch = seriesPatchFrom(s, current, patch)
  await applySeriesPatch(trx, auth, s, seriesPatch, now)
  // scope all/future: the edited fields win over the occurrences' own values
  const clear: events.EventUpdate = {}
  if (patch.title !== undefined) clear.title_override = null
  if ('description' in patch) clear.description_override = null
  if (Object.keys(clear).length > 0) {
    const fresh = await repo.findSeries(trx, auth.tenantId, s.id, false)
    await trx
      .updateTable('events')
      .set({
        ...clear,
        ...(patch.title !== undefined ? { title: fresh?.title } : {}),
        ...('description' in patch ? { description: fresh?.description ?? null } : {}),
        revision: sql`revision + 1`,
        updated_at: sql`now()`
      })
      .where('tenant_id', '=', auth.tenantId)
      .where('series_id', '=', s.id)
      .where('is_deleted', '=', false)
      .where('published_id', 'is', null)
      .execute()
  }
  if (patch.priority !== undefined) {
    await trx
      .updateTable('events')
      .set({ priority: patch.priority, revision: sql`revision + 1`, updated_at: sql`now()` })
      .where('tenant_id', '=', auth.tenantId)
      .where('series_id', '=', s.id)
      .where('is_deleted', '=', false)
      .where('published_id', 'is', null)
      .execute()
  }
  return await events.lockById(trx, auth.tenantId, occurrence.id)
}

// ---- delete

export async function deleteSeries (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  scope: Scope,
  ifMatch?: string
): Promise<void> {
  // this: the occurrence alone (its slot joins the exdates); future and all need the series-level right
  const { occurrence, series: s } = await lockForSeriesWrite(
    trx,
    auth,
    eventId,
    'event:delete',
    scope === 'this' ? 'occurrence' : 'series'
  )
  checkIfMatch(ifMatch, occurrence.revision)
  const k = positionOf(occurrence)
  const live = trx
    .updateTable('events')
    .where('tenant_id', '=', auth.tenantId)
    .where('series_id', '=', s.id)
    .where('is_deleted', '=', false)
  if (scope === 'this') {
    const slot = positionsOf(s)[k]
    const exdate = slot?.start ?? (occurrence.start_dt === null ? undefined : new Date(occurrence.start_dt))
    await repo.updateSeries(trx, auth.tenantId, s.id, {
      exdates: [...s.exdates, ...(exdate !== undefined ? [exdate] : [])]
    })
    await trx
      .deleteFrom('events')
      .where('tenant_id', '=', auth.tenantId)
      .where('published_id', '=', occurrence.id)
      .execute()
    await events.updateEvent(trx, auth.tenantId, occurrence.id, { is_deleted: true })
  } else if (scope === 'future' && k > 0) {
    await endBefore(trx, s, k)
    await live
      .where('series_index', '>=', k)
      .set({ is_deleted: true, revision: sql`revision + 1`, updated_at: sql`now()` })
      .execute()
  } else {
    await repo.updateSeries(trx, auth.tenantId, s.id, { is_deleted: true, window_end: null })
    await repo.setWindow(trx, auth.tenantId, s.id, null)
    await live.set({ is_deleted: true, revision: sql`revision + 1`, updated_at: sql`now()` }).execute()
  }
  await record(trx, auth, s, 'series.occurrences_deleted', { scope, event_id: occurrence.id, series_index: k })
}

// ---- publish

export async function publishSeries (
  trx: Tx,
  auth: AuthContext,
  eventId: number,
  input: PublishSeriesBody,
  ifMatch?: string
): Promise<void> {
  const { series: s } = await lockForSeriesWrite(trx, auth, eventId, 'event:publish', 'series', ifMatch)
  if (s.status === 'archived') throw error409Conflict('the series is archived')
  const at = new Date()
  const published = await repo.updateSeries(trx, auth.tenantId, s.id, {
    status: 'published',
    published_at: at,
    version: s.version + 1
  })
  await trx
    .updateTable('events')
    .set({
      status: 'published',
      published_at: at,
      version: sql`version + 1`,
      revision: sql`revision + 1`,
      updated_at: sql`now()`
    })
    .where('tenant_id', '=', auth.tenantId)
    .where('series_id', '=', s.id)
    .where('is_deleted', '=', false)
    .where('published_id', 'is', null)
    .where('status', '<>', 'archived')
    .execute()
  await record(trx, auth, published, 'series.published', { version: published.version, notify: input.notify ?? false })
  if (input.notify === true) {
    await notifyUser(trx, {
      tenantId: auth.tenantId,
      userId: published.creator_id,
      actor: auth,
      channels: input.channels ?? ['email'],
      template: seriesPublished({
        seriesId: published.id,
        eventId,
        version: published.version,
        title: published.title,
        message: input.message
      }),
      priority: input.priority ?? 'normal'
    })
  }
}

// ---- series manager

export const INVITE_DAYS = 7

/**
 * Invites a manager of every occurrence by e-mail: an `event_managers` row (series_id set,
 * event_id = the anchor, pending, 7 days) that `POST /events/managers/accept` activates. A pending
 * invite sent before is revoked. The plain token is returned once.
 */
export async function inviteSeriesManager (trx: Tx, auth: AuthContext, eventId: number, email: string) {
  // a series manager manages every occurrence: only a caller with that right on the whole series grants it
  const { series: s } = await lockForSeriesWrite(trx, auth, eventId, 'managers:manage', 'series')
  // the invite grants every permission: the inviter must hold them all at series level
  await assertSeriesGrant(trx, auth, s.id, EVENT_MANAGER_ROLES['event_manager:full'], 'body.email')
  const anchor = await trx.selectFrom('events').select('id')
    .where('tenant_id', '=', auth.tenantId).where('series_id', '=', s.id).where('published_id', 'is', null)
    .orderBy('is_deleted').orderBy('series_index').limit(1).executeTakeFirstOrThrow()
  const { token, hash } = newInviteToken()
  const now = new Date()
  const expires = new Date(now.getTime() + INVITE_DAYS * 24 * 3_600_000)
  await trx
    .updateTable('event_managers')
    .set({ status: 'revoked', updated_at: now })
    .where('tenant_id', '=', auth.tenantId)
    .where('series_id', '=', s.id)
    .where('status', '=', 'pending')
    .where('invited_email', 'is not', null)
    .execute()
  await trx.insertInto('event_managers').values({
    tenant_id: auth.tenantId,
    event_id: anchor.id,
    series_id: s.id,
    org_id: s.org_id,
    user_id: null,
    role: 'event_manager:full',
    status: 'pending',
    invited_email: email,
    invited_by: auth.userId,
    invited_at: now,
    invite_token_hash: hash,
    expires_at: expires
  }).execute()
  const updated = await repo.updateSeries(trx, auth.tenantId, s.id, {
    series_manager_id: null,
    series_manager_status: 'pending',
    series_manager_invited_by: auth.userId,
    series_manager_invited_email: email,
    series_manager_invited_at: now,
    series_manager_accepted_at: null,
    series_manager_expires_at: expires
  })
  await record(trx, auth, updated, 'series.manager_invited', { email })
  await queueNotification(trx, {
    tenantId: auth.tenantId,
    channel: 'email',
    recipient: email,
    ...managerInvitation({ on: 'series', title: s.title, token, days: INVITE_DAYS }),
    payload: { kind: 'series.manager_invited', series_id: s.id, event_id: anchor.id, actor_id: auth.userId }
  })
  return await seriesView(trx, auth, updated, token)
}

// ---- rolling windows

/** Due when less than this is left before the window end. */
const EXTEND_WHEN_LEFT_MONTHS = WINDOW_MONTHS - 1
/** Series looked at per run, and rows one run creates at most (the rest is due at the next run). */
const DUE_PER_RUN = 1000
const MAX_CREATE_PER_RUN = 50_000

/**
 * Extends the window of every ends_on=never series due at `now` to `now` + the horizon, creating
 * the occurrences in between (each series in its own tenant-scoped transaction), at most
 * MAX_CREATE_PER_REQUEST per series and MAX_CREATE_PER_RUN in all; a series left behind stays due.
 * Returns the number of occurrences created.
 */
export async function extendSeriesWindows (db: Kysely<Database>, now: Date = new Date()): Promise<number> {
  const dueBefore = DateTime.fromJSDate(now, { zone: 'UTC' }).plus({ months: EXTEND_WHEN_LEFT_MONTHS }).toJSDate()
  const due = await withSystem(
    db,
    async trx =>
      await trx
        .selectFrom('series_windows')
        .select(['tenant_id', 'series_id', 'window_end'])
        .where('window_end', '<', dueBefore)
        .orderBy('window_end')
        .limit(DUE_PER_RUN)
        .execute()
  )
  let created = 0
  for (const d of due) {
    if (created >= MAX_CREATE_PER_RUN) break
    created += await withTenant(db, { tenantId: d.tenant_id }, async (trx) => {
      const s = await repo.findSeries(trx, d.tenant_id, d.series_id, true)
      if (s === undefined || s.ends_on !== 'never') {
        await repo.setWindow(trx, d.tenant_id, d.series_id, null)
        return 0
      }
      const from = s.window_end === null ? new Date(s.start_dt) : new Date(s.window_end)
      // at most MAX_CREATE_PER_REQUEST rows per series and run: a window far behind catches up over several runs
      const updated = await repo.updateSeries(trx, d.tenant_id, s.id, {
        window_end: cappedWindow(s, from, windowFrom(now))
      })
      const { added } = await syncOccurrences(trx, updated, s, from)
      await repo.setWindow(trx, d.tenant_id, s.id, new Date(updated.window_end ?? now))
      return added
    })
  }
  return created
}
