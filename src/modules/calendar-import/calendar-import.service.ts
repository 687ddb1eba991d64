/**
 * The calendar import (docs/calendar-import.md): the units of a file made into events and series of a space in one
 * transaction, through the services of the events and series modules (POST /events, POST /events/with-series,
 * POST /events/{id}/spaces, PATCH /events/{id} and its `scope=this`, PATCH and DELETE …/series) and their
 * authorization. Everything a unit needs is read and checked first (the space, the rights on what an earlier
 * import made, the rules, the bound on events made): a refusal then stores nothing. A dry run does it all and rolls
 * it back.
 */
import type { Kysely } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { ApiError, error400BadRequest, error403Forbidden, fieldError } from '../../platform/http/errors.ts'
import { addSpace, createEvent, lockEventForWrite, patchEvent, type PatchEventBody } from '../events/index.ts'
import {
  applyScopedEdit, createEventWithSeries, deleteSeries, lockForSeriesWrite, patchSeries, positionsOf,
  type PatchSeriesBody, type SeriesRow
} from '../series/index.ts'
import { spaceForEventLink } from '../spaces/index.ts'
import { lineLocation, type CalendarEvent, type ParsedCalendar } from './calendar-import.parse.ts'
import * as repo from './calendar-import.repository.ts'
import {
  atLines, changedContent, checkedRule, contentOf, earliestAnchor, importUnits, REANCHOR_PERIODS_MAX, ruleBody,
  sameRule, seriesPlan, type Content, type ImportUnit, type SeriesPlan
} from './calendar-import.rules.ts'
import { ICS_MAX_ROWS, type CalendarImportItem, type CalendarImportReport } from './calendar-import.schemas.ts'

type Item = CalendarImportItem & { /** made in this import: a dry run shows no id for it */ fresh?: boolean }

const item = (uid: string, kind: Item['kind'], action: Item['action'], line: number, more: Partial<Item> = {}): Item =>
  ({ uid, kind, action, id: null, event_id: null, line, recurrence_id: null, reason: null, notes: [], ...more })

const iso = (d: Date | string): string => new Date(d).toISOString()
const ms = (d: Date | string | null): number | null => d === null ? null : new Date(d).getTime()

/** The 403 of an import that would change what an earlier import of the UID made, which the caller may not change. */
function refusedUid (e: CalendarEvent, what: string, err: unknown): ApiError {
  const status = err instanceof ApiError ? err.status : 0
  if (status !== 403 && status !== 404) throw err
  return new ApiError(403, `UID "${e.uid}" names ${what} you may not change: nothing was imported`, [
    fieldError(lineLocation(e.line), `line ${e.line}: UID ${e.uid}: an earlier import made ${what} of this UID, ` +
      `which needs event:edit${what === 'a series' ? ' on the whole series' : ''} to be updated`, e.uid)
  ])
}

/** What the import does with one unit, decided before anything is written. */
type Planned =
  | { kind: 'skip', unit: ImportUnit & { kind: 'skip' } }
  | {
    kind: 'skip-known'
    e: CalendarEvent
    as: 'event' | 'series'
    reason: string
    id: number | null
    overrides: CalendarEvent[]
  }
  | { kind: 'event', e: CalendarEvent, content: Content, existing?: { id: number, row: Content & Times } }
  | {
    kind: 'series'
    e: CalendarEvent
    overrides: CalendarEvent[]
    content: Content
    plan: SeriesPlan
    rule: ReturnType<typeof checkedRule>
    existing?: { series: SeriesRow, anchorId: number }
  }

interface Times { start_dt: Date | string | null, end_dt: Date | string | null, timezone: string }

async function planUnit (
  trx: Tx,
  auth: AuthContext,
  unit: ImportUnit,
  known: { events: Map<string, repo.ImportedEvent>, series: Map<string, repo.ImportedSeries> },
  now: Date,
  budget: { periods: number }
): Promise<Planned> {
  if (unit.kind === 'skip') return { kind: 'skip', unit }
  const e = unit.kind === 'event' ? unit.event : unit.master
  const skip = (reason: string, id: number | null = null): Planned =>
    ({ kind: 'skip-known', e, as: unit.kind, reason, id, overrides: unit.kind === 'series' ? unit.overrides : [] })
  const content = contentOf(e)
  const event = known.events.get(e.uid)
  const series = known.series.get(e.uid)
  if (unit.kind === 'event') {
    if (series !== undefined) return skip('an earlier import made a series of this UID; it is not made a single event')
    if (event === undefined) return { kind: 'event', e, content }
    if (event.is_deleted) return skip('deleted since an earlier import: not made again', event.id)
    if (event.status === 'archived') return skip('archived: not changed', event.id)
    if (event.series_id !== null) return skip('part of a series since an earlier import: not changed', event.id)
    let row
    try {
      row = await lockEventForWrite(trx, auth, event.id, 'event:edit', { includeDraftClones: false })
    } catch (err) {
      throw refusedUid(e, 'an event', err)
    }
    return { kind: 'event', e, content, existing: { id: event.id, row } }
  }
  if (event !== undefined) {
    return skip('an earlier import made a single event of this UID; it is not made a series', event.id)
  }
  let existing: { series: SeriesRow, anchorId: number } | undefined
  if (series !== undefined) {
    if (series.is_deleted) return skip('deleted since an earlier import: not made again', series.id)
    const anchor = (await repo.liveOccurrences(trx, auth.tenantId, series.id))[0]
    if (anchor === undefined) return skip('every occurrence was deleted since an earlier import', series.id)
    try {
      const locked = await lockForSeriesWrite(trx, auth, anchor.id, 'event:edit', 'series')
      existing = { series: locked.series, anchorId: anchor.id }
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) return skip('archived: not changed', series.id)
      throw refusedUid(e, 'a series', err)
    }
  }
  const earliest = earliestAnchor(now)
  // an existing series may keep an anchor older than the allowed past (a patch may leave it)
  const from = existing === undefined || new Date(existing.series.start_dt) >= earliest
    ? earliest
    : new Date(existing.series.start_dt)
  const cancelled = unit.overrides.filter(o => o.cancelled).map(o => o.recurrenceId?.value as Date)
  const plan = seriesPlan(e, from, cancelled, budget)
  if (typeof plan === 'string') return skip(plan, existing?.series.id ?? null)
  return { kind: 'series', e, overrides: unit.overrides, content, plan, rule: checkedRule(e, plan, now), existing }
}

/** The space of an import, checked once, and the link of an event to it (as `POST /events/{id}/spaces`). */
interface Target {
  spaceId: number
  link: (eventId: number) => Promise<void>
}

/** Makes or updates a single event and links it to the space. */
async function importEvent (trx: Tx, auth: AuthContext, target: Target, p: Planned & { kind: 'event' }) {
  const { spaceId } = target
  const { e, content } = p
  const times = { start_dt: iso(e.start as Date), end_dt: iso(e.end as Date), timezone: e.timezone }
  if (p.existing === undefined) {
    const row = await createEvent(trx, auth, { ...content, ...times })
    await repo.setEventUid(trx, auth.tenantId, row.id, e.uid)
    await target.link(row.id)
    return item(e.uid, 'event', 'create', e.line, { id: row.id, event_id: row.id, notes: e.notes, fresh: true })
  }
  const { id, row } = p.existing
  const patch: Record<string, unknown> = {}
  for (const f of changedContent(row, content)) patch[f] = content[f]
  if (ms(row.start_dt) !== ms(times.start_dt) || ms(row.end_dt) !== ms(times.end_dt) || row.timezone !== e.timezone) {
    Object.assign(patch, times)
  }
  if (Object.keys(patch).length > 0) await patchEvent(trx, auth, id, patch as PatchEventBody, undefined)
  const linked = (await repo.notInSpace(trx, auth.tenantId, spaceId, [id])).length > 0
  if (linked) await target.link(id)
  const changed = Object.keys(patch).length > 0
  return item(e.uid, 'event', changed || linked ? 'update' : 'unchanged', e.line, {
    id,
    event_id: id,
    notes: e.notes,
    reason: !changed && linked ? 'linked to this space' : null
  })
}

/** The series' patch of a plan: the content that differs, and the times and rule when they differ. */
function seriesPatch (p: Planned & { kind: 'series' }, s: SeriesRow): PatchSeriesBody {
  const patch: Record<string, unknown> = {}
  for (const f of changedContent(s, p.content)) patch[f] = p.content[f]
  if (!sameRule(s, p.plan, p.rule)) {
    Object.assign(patch, { start_dt: iso(p.plan.start), end_dt: iso(p.plan.end), timezone: p.plan.timezone },
      ruleBody(p.plan))
  }
  return patch as PatchSeriesBody
}

/** A series' rule positions and its live occurrences by position: what a RECURRENCE-ID addresses. */
async function slotsOf (trx: Tx, tenantId: string, seriesId: number) {
  const s = await repo.findSeries(trx, tenantId, seriesId)
  const byIndex = new Map((await repo.liveOccurrences(trx, tenantId, seriesId)).map(r => [r.series_index, r]))
  const positions = positionsOf(s)
  const at = (rid: Date) => {
    const slot = positions.find(q => q.start.getTime() === rid.getTime())
    return { slot, row: slot === undefined ? undefined : byIndex.get(slot.index) }
  }
  return { series: s, at }
}

/**
 * Deletes (scope=this) the live occurrences the cancelled overrides (STATUS:CANCELLED) address, before the series is
 * patched: the dates they leave out are then in its exdates already. Their items, by override.
 */
async function cancelOccurrences (trx: Tx, auth: AuthContext, p: Planned & { kind: 'series' }, seriesId: number) {
  const done = new Map<CalendarEvent, Item>()
  const cancelled = p.overrides.filter(o => o.cancelled && o.recurrenceId?.range !== true)
  if (cancelled.length === 0) return done
  const slots = await slotsOf(trx, auth.tenantId, seriesId)
  for (const o of cancelled) {
    const rid = o.recurrenceId?.value as Date
    const { row } = slots.at(rid)
    if (row === undefined) continue
    await deleteSeries(trx, auth, row.id, 'this')
    done.set(o, item(o.uid, 'event', 'update', o.line, {
      id: row.id,
      event_id: row.id,
      recurrence_id: iso(rid),
      notes: o.notes,
      reason: 'STATUS:CANCELLED: the occurrence is deleted (scope=this)'
    }))
  }
  return done
}

/** Applies the overrides of a series to its occurrences (scope=this edits); one item each, in the file's order. */
async function applyOverrides (trx: Tx, auth: AuthContext, p: Planned & { kind: 'series' }, seriesId: number,
  fresh: boolean, cancelled: ReadonlyMap<CalendarEvent, Item>) {
  const { series: s, at: slotAt } = await slotsOf(trx, auth.tenantId, seriesId)
  const items: Item[] = []
  for (const o of p.overrides) {
    const rid = o.recurrenceId?.value as Date
    const at = { recurrence_id: iso(rid), notes: o.notes, fresh }
    const skip = (reason: string): number => items.push(item(o.uid, 'event', 'skip', o.line, { ...at, reason }))
    if (o.recurrenceId?.range === true) { skip('RANGE=THISANDFUTURE is not supported'); continue }
    const { slot, row } = slotAt(rid)
    const ids = row === undefined ? {} : { id: row.id, event_id: row.id }
    if (o.cancelled) {
      const done = cancelled.get(o)
      if (done !== undefined) items.push(done)
      else skip('STATUS:CANCELLED: the series leaves this date out (EXDATE)')
      continue
    }
    if (slot === undefined) {
      skip(rid < new Date(s.start_dt)
        ? 'RECURRENCE-ID is before the first date of the series'
        : 'RECURRENCE-ID is not a date of the series')
      continue
    }
    if (row === undefined) { skip('the occurrence of this date was deleted (or is an EXDATE)'); continue }
    const content = contentOf(o)
    const patch: Record<string, unknown> = {}
    if (o.title !== undefined && content.title !== row.title) patch.title = content.title
    if (o.description !== undefined && content.description !== row.description) patch.description = content.description
    if (o.address !== undefined && content.address !== row.address) patch.address = content.address
    if (o.start !== undefined) {
      const start = o.start
      // without DTEND or DURATION the occurrence keeps its length
      const length = (ms(row.end_dt) ?? 0) - (ms(row.start_dt) ?? 0)
      const end = o.hasEnd && o.end !== undefined ? o.end : new Date(start.getTime() + length)
      if (ms(row.start_dt) !== start.getTime() || ms(row.end_dt) !== end.getTime()) {
        Object.assign(patch, { start_dt: iso(start), end_dt: iso(end) })
      }
    }
    if (Object.keys(patch).length > 0) {
      try {
        await applyScopedEdit(trx, auth, row.id, 'this', patch as PatchEventBody)
      } catch (err) {
        throw atLines(err, o, { rdates: [], exdates: [] }, 'body.')
      }
    }
    items.push(item(o.uid, 'event', Object.keys(patch).length > 0 ? 'update' : 'unchanged', o.line, { ...at, ...ids }))
  }
  return items
}

/** Makes or updates a series, applies its overrides, links its occurrences to the space. */
async function importSeries (trx: Tx, auth: AuthContext, target: Target, p: Planned & { kind: 'series' },
  now: Date): Promise<Item[]> {
  const { e, plan } = p
  let seriesId: number
  let anchorId: number
  let action: Item['action']
  // a new series leaves the cancelled dates out from the start (its exdates)
  let cancelled = new Map<CalendarEvent, Item>()
  if (p.existing === undefined) {
    let made
    try {
      made = await createEventWithSeries(trx, auth, {
        ...p.content,
        start_dt: iso(plan.start),
        end_dt: iso(plan.end),
        timezone: plan.timezone,
        series: ruleBody(plan)
      }, now)
    } catch (err) {
      throw atLines(err, e, plan, 'body.series.')
    }
    anchorId = made.event.id
    seriesId = made.event.series_id as number
    await repo.setSeriesUid(trx, auth.tenantId, seriesId, e.uid)
    action = 'create'
  } else {
    seriesId = p.existing.series.id
    anchorId = p.existing.anchorId
    cancelled = await cancelOccurrences(trx, auth, p, seriesId)
    const current = cancelled.size === 0 ? p.existing.series : await repo.findSeries(trx, auth.tenantId, seriesId)
    const patch = seriesPatch(p, current)
    action = Object.keys(patch).length > 0 ? 'update' : 'unchanged'
    if (action === 'update') {
      try {
        await patchSeries(trx, auth, anchorId, patch, undefined, now)
      } catch (err) {
        throw atLines(err, e, plan, 'body.')
      }
    }
  }
  const fresh = action === 'create'
  const overrides = await applyOverrides(trx, auth, p, seriesId, fresh, cancelled)
  const live = (await repo.liveOccurrences(trx, auth.tenantId, seriesId)).map(r => r.id)
  const unlinked = await repo.notInSpace(trx, auth.tenantId, target.spaceId, live)
  for (const id of unlinked) await target.link(id)
  const linkedOnly = action === 'unchanged' && unlinked.length > 0
  const master = item(e.uid, 'series', linkedOnly ? 'update' : action, e.line, {
    id: seriesId,
    event_id: live[0] ?? anchorId,
    notes: [...e.notes, ...plan.notes],
    reason: linkedOnly ? `${unlinked.length} occurrence${unlinked.length === 1 ? '' : 's'} linked to this space` : null,
    fresh
  })
  return [master, ...overrides]
}

/**
 * Imports the units of a parsed file into a space, in the caller's transaction: 404/403/409 for the space as
 * `POST /events/{id}/spaces` answers them, 403 when a unit would change what the caller may not, 400 naming the line
 * of a rule the series module refuses or `body` past ICS_MAX_ROWS events; then the writes, in the order of the file.
 */
export async function runImport (trx: Tx, auth: AuthContext, spaceId: number, units: readonly ImportUnit[],
  now: Date): Promise<Item[]> {
  const space = await spaceForEventLink(trx, auth, spaceId, true)
  // every link is checked as POST /events/{id}/spaces checks it (event:edit on the event); the space's side once
  const target: Target = {
    spaceId,
    link: async (eventId) => { await addSpace(trx, auth, eventId, spaceId, async () => space) }
  }
  if (units.some(u => u.kind === 'series') && !auth.permissions.has('series:write')) {
    throw error403Forbidden('missing permission series:write: the file has recurring events')
  }
  const uids = [...new Set(units.map(u => u.kind === 'series' ? u.master.uid : u.event.uid))]
  const known = {
    events: new Map((await repo.eventsByUid(trx, auth.tenantId, uids)).map(r => [r.uid, r])),
    series: new Map((await repo.seriesByUid(trx, auth.tenantId, uids)).map(r => [r.uid, r]))
  }
  const planned: Planned[] = []
  const budget = { periods: REANCHOR_PERIODS_MAX }
  let rows = 0
  for (const u of units) {
    const p = await planUnit(trx, auth, u, known, now, budget)
    planned.push(p)
    // counted as the units are planned: a file of large series stops at the first past the bound
    rows += p.kind === 'event' ? 1 : p.kind === 'series' ? p.rule.rows : 0
    if (rows > ICS_MAX_ROWS) {
      throw error400BadRequest(`the calendar makes more than ${ICS_MAX_ROWS} events (occurrences included); ` +
        'nothing was imported', [
        fieldError('body', `expected at most ${ICS_MAX_ROWS} events and occurrences an import, got ${rows} by the ` +
          `VEVENT of line ${p.kind === 'event' || p.kind === 'series' ? p.e.line : 0}`, rows)
      ])
    }
  }
  const items: Item[] = []
  for (const p of planned) {
    if (p.kind === 'skip') {
      const u = p.unit
      items.push(item(u.event.uid, u.as, 'skip', u.event.line, {
        reason: u.reason,
        notes: u.event.notes,
        recurrence_id: u.event.recurrenceId === undefined ? null : iso(u.event.recurrenceId.value)
      }))
    } else if (p.kind === 'skip-known') {
      items.push(item(p.e.uid, p.as, 'skip', p.e.line, { id: p.id, reason: p.reason, notes: p.e.notes }))
      for (const o of p.overrides) {
        items.push(item(o.uid, 'event', 'skip', o.line, {
          reason: `its series is skipped: ${p.reason}`,
          notes: o.notes,
          recurrence_id: o.recurrenceId === undefined ? null : iso(o.recurrenceId.value)
        }))
      }
    } else if (p.kind === 'event') {
      items.push(await importEvent(trx, auth, target, p))
    } else {
      items.push(...await importSeries(trx, auth, target, p, now))
    }
  }
  return items
}

/**
 * The space's check of `POST /events/{id}/spaces` on its own (404 invisible, 403 without `space:events`, 409 archived),
 * before a URL is fetched: the service calls out only for a caller who may import into the space.
 */
export async function checkSpace (db: Kysely<Database>, auth: AuthContext, spaceId: number): Promise<void> {
  await withTenant(db, auth, async trx => { await spaceForEventLink(trx, auth, spaceId, true) })
}

/** Thrown to roll a dry run back, with its report. */
class DryRun extends Error {
  constructor (readonly items: Item[]) {
    super('dry run')
  }
}

/**
 * `POST /spaces/{id}/calendar-import`: the import in one transaction of the caller's tenant (a dry run rolled back),
 * answered as its report. The file is parsed and grouped before the transaction (no connection held for it).
 */
export async function importCalendar (
  db: Kysely<Database>,
  auth: AuthContext,
  spaceId: number,
  calendar: ParsedCalendar,
  dryRun: boolean,
  now = new Date()
): Promise<Omit<CalendarImportReport, '$schema'>> {
  const units = importUnits(calendar.events)
  let items: Item[]
  try {
    items = await withTenant(db, auth, async trx => {
      const made = await runImport(trx, auth, spaceId, units, now)
      if (dryRun) throw new DryRun(made)
      return made
    })
  } catch (err) {
    if (!(err instanceof DryRun)) throw err
    items = err.items.map(i => i.fresh === true ? { ...i, id: null, event_id: null } : i)
  }
  const count = (action: Item['action']): number => items.filter(i => i.action === action).length
  return {
    dry_run: dryRun,
    created: count('create'),
    updated: count('update'),
    unchanged: count('unchanged'),
    skipped: count('skip'),
    items: items.map(({ fresh: _f, ...rest }) => rest)
  }
}
