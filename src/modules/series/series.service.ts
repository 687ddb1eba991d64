/**
 * Series use cases: making a series (with a new event or from an existing one), reading it with
 * its occurrences, editing it (cascade to occurrences without overrides, regenerating on rule
 * changes), scoped edits and deletes of occurrences (this / future / all, splitting the series),
 * publishing, the series-manager invite and the rolling-window job. Decisions: docs/series.md.
 * The rule is series.rule.ts, occurrence rows series.occurrences.ts, rights series.access.ts.
 */
import type { Kysely } from 'kysely'
import { DateTime } from 'luxon'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import { error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { newInviteToken } from '../../platform/invite-tokens.ts'
import { notifyOnPublish, queueNotification } from '../../platform/notifications/notifications.ts'
import { managerInvitation, seriesPublished } from '../../platform/notifications/templates.ts'
import { emit } from '../../platform/outbox.ts'
import { assertSeriesGrant } from '../event-managers/index.ts'
import {
  createEvent, EVENT_MANAGER_ROLES, type EventRow, findEventForRead, lockById as lockEventById, lockEventForWrite,
  patchEvent, type PatchEventBody, updateEvent, withSpacesAll
} from '../events/index.ts'
import { hasSeriesPermission, lockForSeriesWrite, requireSeriesPermission, seriesOfRow } from './series.access.ts'
import * as domain from './series.events.ts'
import { cascadeContent, syncOccurrences, type SyncResult } from './series.occurrences.ts'
import * as occurrences from './series.occurrences.repository.ts'
import * as repo from './series.repository.ts'
import {
  cappedWindow, clearedOverrides, effectiveScope, endBeforeValues, exdatesAfterDelete, newSeriesRow,
  occurrenceOverrides, positionOf, refuseStorageKeys, rruleOfSeries, seriesChange, seriesPatchFrom, splitPlan,
  windowFrom, type RuleInput, type Scope
} from './series.rule.ts'
import {
  OCCURRENCES_LIMIT_MAX, WINDOW_MONTHS,
  type CreateEventWithSeriesBody, type CreateSeriesBody, type PatchSeriesBody, type PublishSeriesBody
} from './series.schemas.ts'
import type { SeriesRow } from './series.table.ts'

export type { Scope } from './series.rule.ts'

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
    rrule: rruleOfSeries(row),
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

const totalPages = (total: number, limit: number) => Math.ceil(total / limit)

// ---- create

/** Makes `anchor` position 0 of a new series with `input`'s rule and materialises the occurrences. */
async function seriesFromAnchor (
  trx: Tx,
  auth: AuthContext,
  anchor: EventRow,
  input: RuleInput,
  prefix: string,
  now: Date
) {
  const row = newSeriesRow(anchor, input, prefix, now)
  const s = await repo.insertSeries(trx, auth.tenantId, row)
  await updateEvent(trx, auth.tenantId, anchor.id, {
    series_id: s.id,
    series_index: 0,
    ...(anchor.end_dt === null ? { end_dt: row.end_dt } : {})
  })
  const { rows } = await syncOccurrences(trx, s, s, row.start_dt)
  if (s.window_end !== null) await repo.setWindow(trx, auth.tenantId, s.id, new Date(s.window_end))
  await emit(trx, domain.seriesCreated(auth, s, anchor.id, rows.length))
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
  if (anchor.series_id !== null) {
    throw error409Conflict('the event already belongs to a series', [], 'already_in_series')
  }
  const made = await seriesFromAnchor(trx, auth, anchor, input, 'body.', now)
  return {
    items: await occurrenceViews(trx, auth.tenantId, made.rows.slice(0, OCCURRENCES_LIMIT_MAX), made.series.title),
    total: made.rows.length,
    limit: OCCURRENCES_LIMIT_MAX
  }
}

// ---- read

export async function getSeries (trx: Tx, auth: AuthContext, eventId: number, page: number, limit: number) {
  const row = await findEventForRead(trx, auth, eventId, { includeDraftClones: true })
  const s = await seriesOfRow(trx, auth.tenantId, row, false)
  const { items, total } = await occurrences.pageOccurrences(trx, auth, s.id, { page, limit })
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
  const found = await occurrences.pageOccurrences(trx, auth, s.id, { page, limit, cursor })
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

/** Applies a series patch to a locked series: content cascade, then the rule and times (regeneration from `now`). */
async function applySeriesPatch (trx: Tx, auth: AuthContext, s: SeriesRow, input: PatchSeriesBody, now: Date) {
  const { values, fields, regenerate } = seriesChange(s, input, now)
  if (Object.keys(values).length === 0) return { series: s, removed: [], added: 0 }
  const updated = await repo.updateSeries(trx, auth.tenantId, s.id, values)
  await cascadeContent(trx, updated, fields)
  let sync: Pick<SyncResult, 'removed' | 'added'> = { removed: [], added: 0 }
  if (regenerate) {
    sync = await syncOccurrences(trx, updated, s, now)
    await repo.setWindow(trx, auth.tenantId, s.id, updated.window_end === null ? null : new Date(updated.window_end))
  }
  await emit(trx, domain.seriesUpdated(auth, updated, Object.keys(values), sync.removed.map(r => r.id), sync.added))
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
  const values = endBeforeValues(s, k)
  await repo.setWindow(trx, s.tenant_id, s.id, null)
  return await repo.updateSeries(trx, s.tenant_id, s.id, values)
}

/**
 * Splits a series at an occurrence (position k ≥ 1): the old series ends before it, a new series
 * (same rule and content) starts at its slot and takes the occurrences from k on, the exclusions
 * after it and copies of the series-level managers and attendees.
 */
async function splitAt (trx: Tx, auth: AuthContext, s: SeriesRow, k: number): Promise<SeriesRow> {
  const plan = splitPlan(s, k)
  const next = await repo.insertSeries(trx, auth.tenantId, plan.next)
  const newAnchorId = await occurrences.occurrenceIdAt(trx, auth.tenantId, s.id, k)
  await endBefore(trx, s, k)
  await repo.updateSeries(trx, auth.tenantId, s.id, { exdates: plan.exdatesBefore })
  await occurrences.moveOccurrencesToSeries(trx, auth.tenantId, s.id, next.id, k)
  await repo.copySeriesManagers(trx, auth.tenantId, s.id, next.id, newAnchorId)
  await repo.copySeriesAttendees(trx, auth.tenantId, s.id, next.id)
  if (next.window_end !== null) await repo.setWindow(trx, auth.tenantId, next.id, new Date(next.window_end))
  await emit(trx, domain.seriesSplit(auth, next, s.id, k))
  return next
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
  const occurrence = first.published_id === null ? first : await lockEventById(trx, auth.tenantId, first.published_id)
  if (occurrence.series_id === null) return await patchEvent(trx, auth, eventId, patch, ifMatch)
  const reach = effectiveScope(scope, positionOf(occurrence))
  if (reach === 'this') {
    const before = await patchEvent(trx, auth, eventId, patch, ifMatch)
    const overrides = occurrenceOverrides(patch, before.metadata_override)
    if (Object.keys(overrides).length === 0) return before
    return await updateEvent(trx, auth.tenantId, before.id, overrides)
  }
  if ('template' in patch) {
    throw error409Conflict('the template of an event is immutable', [
      fieldError('body.template', 'must be omitted', patch.template)
    ], 'template_immutable')
  }
  let s = await seriesOfRow(trx, auth.tenantId, occurrence, true)
  // future and all change more than this occurrence
  await requireSeriesPermission(trx, auth, s, 'event:edit')
  checkIfMatch(ifMatch, first.revision)
  if (reach === 'future') s = await splitAt(trx, auth, s, positionOf(occurrence))
  const current = await lockEventById(trx, auth.tenantId, occurrence.id)
  await applySeriesPatch(trx, auth, s, seriesPatchFrom(s, current, patch), now)
  // scope all/future: the edited fields win over the occurrences' own values
  const clear = clearedOverrides(patch)
  if (Object.keys(clear).length > 0) {
    const fresh = await repo.findSeries(trx, auth.tenantId, s.id, false)
    await occurrences.updateLiveOccurrences(trx, auth.tenantId, s.id, {
      ...clear,
      ...(patch.title !== undefined ? { title: fresh?.title } : {}),
      ...('description' in patch ? { description: fresh?.description ?? null } : {})
    })
  }
  if (patch.priority !== undefined) {
    await occurrences.updateLiveOccurrences(trx, auth.tenantId, s.id, { priority: patch.priority })
  }
  return await lockEventById(trx, auth.tenantId, occurrence.id)
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
  const reach = effectiveScope(scope, k)
  if (reach === 'this') {
    await repo.updateSeries(trx, auth.tenantId, s.id, { exdates: exdatesAfterDelete(s, occurrence) })
    await occurrences.deleteDraftClone(trx, auth.tenantId, occurrence.id)
    await updateEvent(trx, auth.tenantId, occurrence.id, { is_deleted: true })
  } else if (reach === 'future') {
    await endBefore(trx, s, k)
    await occurrences.deleteOccurrencesFrom(trx, auth.tenantId, s.id, k)
  } else {
    await repo.updateSeries(trx, auth.tenantId, s.id, { is_deleted: true, window_end: null })
    await repo.setWindow(trx, auth.tenantId, s.id, null)
    await occurrences.deleteAllOccurrences(trx, auth.tenantId, s.id)
  }
  await emit(trx, domain.occurrencesDeleted(auth, s, scope, occurrence.id, k))
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
  if (s.status === 'archived') throw error409Conflict('the series is archived', [], 'series_archived')
  const at = new Date()
  const published = await repo.updateSeries(trx, auth.tenantId, s.id, {
    status: 'published',
    published_at: at,
    version: s.version + 1
  })
  await occurrences.publishOccurrences(trx, auth.tenantId, s.id, at)
  await emit(trx, domain.seriesPublished(auth, published, input.notify ?? false))
  await notifyOnPublish(trx, {
    tenantId: auth.tenantId,
    actor: auth,
    creatorId: published.creator_id,
    request: input,
    template: seriesPublished({
      seriesId: published.id,
      eventId,
      version: published.version,
      title: published.title,
      message: input.message
    })
  })
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
  const anchorId = await occurrences.anchorIdOf(trx, auth.tenantId, s.id)
  const { token, hash } = newInviteToken()
  const now = new Date()
  const expires = new Date(now.getTime() + INVITE_DAYS * 24 * 3_600_000)
  await repo.revokePendingSeriesInvites(trx, auth.tenantId, s.id, now)
  await repo.insertSeriesInvite(trx, auth.tenantId, {
    event_id: anchorId,
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
  })
  const updated = await repo.updateSeries(trx, auth.tenantId, s.id, {
    series_manager_id: null,
    series_manager_status: 'pending',
    series_manager_invited_by: auth.userId,
    series_manager_invited_email: email,
    series_manager_invited_at: now,
    series_manager_accepted_at: null,
    series_manager_expires_at: expires
  })
  await emit(trx, domain.managerInvited(auth, updated, email))
  await queueNotification(trx, {
    tenantId: auth.tenantId,
    channel: 'email',
    recipient: email,
    ...managerInvitation({ on: 'series', title: s.title, token, days: INVITE_DAYS }),
    payload: { kind: 'series.manager_invited', series_id: s.id, event_id: anchorId, actor_id: auth.userId }
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
  const due = await withSystem(db, async trx => await repo.dueWindows(trx, dueBefore, DUE_PER_RUN))
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

const WINDOW_JOB_MS = 60 * 60 * 1000
const FIRST_RUN_MS = 10_000

/**
 * Extends the rolling windows in the background (src/workers.ts): once shortly after the start (windows may have
 * fallen due while the service was down), then hourly; a pass still running when the next is due is not doubled.
 * Answers the stop.
 */
export function startSeriesWindows (
  db: Kysely<Database>,
  log: { error: (obj: unknown, msg: string) => void }
): () => Promise<void> {
  let running: Promise<void> | undefined
  const tick = (): void => {
    if (running !== undefined) return
    running = extendSeriesWindows(db, new Date())
      .then(() => {}, (err: unknown) => { log.error({ err }, 'series window extension failed') })
      .finally(() => { running = undefined })
  }
  const first = setTimeout(tick, FIRST_RUN_MS)
  const timer = setInterval(tick, WINDOW_JOB_MS)
  first.unref()
  timer.unref()
  return async () => {
    clearTimeout(first)
    clearInterval(timer)
    await running
  }
}
