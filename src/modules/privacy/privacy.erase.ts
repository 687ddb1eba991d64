/**
 * Erasure of a contact (GDPR article 17; docs/privacy.md, "Erasure"), in one transaction: the contact goes, its
 * attendances stay anonymous (the events' counts and capacity unchanged), and every row that names it is deleted or
 * scrubbed in place (privacy.redact.ts). A second erase of the same id answers the report of the first from
 * `erasures`; nothing is written again.
 */
import type { RawBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { recordAudit } from '../../platform/audit.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { settleWaitlist } from '../attendees/index.ts'
import { canManage } from '../contacts/index.ts'
import { lockEventsById } from '../events/index.ts'
import * as repo from './privacy.erase.repository.ts'
import { PersonalValues, scrubJson, scrubJsonText, stringsOf } from './privacy.redact.ts'
import type { ErasureCounts } from './privacy.table.ts'

/** The answer of an erasure: what each place held, and when and by whom it was erased (ids and counts only). */
export interface ErasureReport {
  contact_id: string
  erased_at: Date
  erased_by: string
  counts: ErasureCounts
}

type ContactRow = NonNullable<Awaited<ReturnType<typeof repo.lockVisibleContact>>>
type Attendance = Awaited<ReturnType<typeof repo.lockAttendances>>[number]

/** The contact's fields whose values are searched for and replaced in the text of other rows. */
const VALUE_FIELDS = [
  'first_name', 'middle_name', 'last_name', 'nickname', 'email', 'phone_primary', 'phone_secondary', 'phone_work',
  'phone_primary_e164', 'phone_secondary_e164', 'phone_work_e164', 'job_title', 'address_line1', 'address_line2',
  'postal_code', 'website', 'avatar_url', 'notes'
] as const satisfies ReadonlyArray<keyof ContactRow>

/** What identifies the person in the text of a row found by value (short or common values would find others). */
export const NEEDLE_FIELDS = [
  'email', 'phone_primary', 'phone_secondary', 'phone_work', 'phone_primary_e164', 'phone_secondary_e164',
  'phone_work_e164'
] as const satisfies ReadonlyArray<keyof ContactRow>

/** The person's values: the contact's fields and tags, the notes and answers of its attendances. */
function personalValues (contact: ContactRow, attendances: readonly Attendance[]): PersonalValues {
  const name = [contact.first_name, contact.last_name].filter(v => v !== null).join(' ')
  return new PersonalValues([
    ...VALUE_FIELDS.map(f => contact[f]),
    name,
    ...contact.tags,
    ...attendances.flatMap(a => [a.notes, ...stringsOf(a.answers)])
  ])
}

const reportOf = (row: { contact_id: string, erased_at: Date, erased_by: string, counts: ErasureCounts }) =>
  ({ contact_id: row.contact_id, erased_at: row.erased_at, erased_by: row.erased_by, counts: row.counts })

/**
 * Erases the contact `id` as `auth` (who must be allowed to change it, as for a DELETE: 404 when they cannot see it,
 * 403 when they see it without owning it; nothing changes on a refusal), or answers the report of its erasure (to
 * whoever erased it, and tenant admins; 404 to others).
 */
export async function eraseContact (
  trx: Tx, auth: AuthContext, id: string, ifMatch?: string
): Promise<ErasureReport> {
  const tenantId = auth.tenantId
  const contact = await repo.lockVisibleContact(trx, auth, id)
  if (contact === undefined) {
    const done = await repo.findErasure(trx, tenantId, id)
    if (done !== undefined && (done.erased_by === auth.userId || auth.permissions.has('tenant:admin'))) {
      return reportOf(done)
    }
    throw error404NotFound('contact not found')
  }
  if (!canManage(contact, auth)) throw error403Forbidden('only the owner or an admin may erase this contact')
  // a stale If-Match (the contact changed since the caller read it) erases nothing: 412, as a DELETE answers
  checkIfMatch(ifMatch, contact.revision)

  const ids = [id, ...await repo.absorbedIds(trx, tenantId, id)]
  const attendances = await repo.lockAttendances(trx, tenantId, id)
  const person = personalValues(contact, attendances)
  const needles = repo.needlesOf(ids, NEEDLE_FIELDS.map(f => contact[f]))
  const counts: ErasureCounts = {
    contact: 0,
    redirects: 0,
    attendances_anonymised: 0,
    attendances_withdrawn: 0,
    registration_answers: attendances.filter(a => a.answers !== null).length,
    guest_links: 0,
    space_links: 0,
    space_activity: 0,
    event_activity: 0,
    notifications_deleted: 0,
    notifications_scrubbed: 0,
    outbox_events: 0,
    webhook_deliveries: 0,
    automation_executions: 0,
    idempotent_answers: 0,
    sync_tombstones: 0,
    stored_objects: 0
  }

  // attendances: kept anonymous; a place in line or a request awaiting approval goes, and its waitlist closes up
  const waiting = attendances.filter(a => (repo.WAITING_STATUSES as readonly string[]).includes(a.status))
  const unsettled = [...new Set(waiting.map(a => a.event_id).filter((e): e is number => e !== null))]
  const events = await lockEventsById(trx, tenantId, unsettled)
  const attendanceIds = attendances.map(a => a.id)
  counts.guest_links = await repo.deleteGuestTokens(trx, tenantId, attendanceIds)
  counts.attendances_anonymised = await repo.anonymiseAttendances(trx, tenantId, attendanceIds)
  counts.attendances_withdrawn = waiting.length
  for (const event of events) if (!event.is_deleted) await settleWaitlist(trx, event)

  // the runs of rules whose trigger named the person: their messages are rendered from it
  const executions = await repo.rowsNaming(trx, tenantId, 'automation_executions', needles, { lock: true })
  counts.automation_executions = await scrub(trx, tenantId, 'automation_executions', executions, person)

  // notifications: those to the person go; those about it keep their other words
  const notifications = await repo.rowsNaming(trx, tenantId, 'notification_outbox', needles, {
    extra: repo.notificationOf(needles, attendanceIds, executions.map(e => e.id)), lock: true
  })
  const toPerson = new Set([
    ...ids.map(i => `contact:${i}`),
    ...(contact.email !== null ? [contact.email.trim().toLowerCase()] : [])
  ])
  const attended = new Set(attendanceIds.map(String))
  const sentTo = notifications.filter(n => toPerson.has(String(n.recipient).trim().toLowerCase()) ||
    attended.has(String((n.payload as Record<string, unknown> | null)?.attendee_id ?? '')))
  await repo.deleteNotifications(trx, tenantId, sentTo.map(n => n.id))
  counts.notifications_deleted = sentTo.length
  const about = notifications.filter(n => !sentTo.includes(n))
  counts.notifications_scrubbed = await scrub(trx, tenantId, 'notification_outbox', about, person)

  counts.outbox_events = await scrubNaming(trx, tenantId, 'outbox', needles, person)
  counts.webhook_deliveries = await scrubNaming(trx, tenantId, 'webhook_deliveries', needles, person)
  counts.event_activity = await scrubNaming(trx, tenantId, 'event_activity', needles, person)
  counts.space_activity = await scrubNaming(trx, tenantId, 'space_activity', needles, person,
    repo.spaceActivityOf(needles))
  counts.idempotent_answers = await scrubNaming(trx, tenantId, 'idempotency_keys', needles, person)

  counts.space_links = await repo.deleteSpaceLinks(trx, tenantId, id)
  counts.redirects = await repo.deleteRedirects(trx, tenantId, id)
  counts.contact = await repo.deleteContact(trx, tenantId, id)
  counts.sync_tombstones = await repo.tombstones(trx, tenantId, id)
  // told as a deletion (ids only): subscriptions and rules that follow contacts delete their copy too
  await emit(trx, {
    tenantId,
    topic: 'contact.deleted',
    aggregateType: 'contact',
    aggregateId: id,
    actorId: auth.userId,
    payload: { contact_id: id }
  })
  await recordAudit(trx, {
    tenantId,
    action: 'contact.erased',
    resourceType: 'contact',
    resourceId: id,
    contactId: id,
    fields: { ...counts }
  })
  return reportOf(await repo.insertErasure(trx, tenantId, id, auth.userId, counts))
}

/** Scrubs the rows of a table that name the person; how many. */
async function scrubNaming (
  trx: Tx, tenantId: string, table: repo.TraceTable, needles: repo.Needles, person: PersonalValues,
  extra?: RawBuilder<boolean>
): Promise<number> {
  const rows = await repo.rowsNaming(trx, tenantId, table, needles, { extra, lock: true })
  return await scrub(trx, tenantId, table, rows, person)
}

/** Rewrites rows with their personal keys nulled and values replaced (`scrubJson` of each rewritten column). */
async function scrub (
  trx: Tx, tenantId: string, table: repo.TraceTable, rows: readonly repo.TraceRow[], person: PersonalValues
): Promise<number> {
  const t = repo.TRACE_TABLES[table]
  const rewritten = rows.map(row => {
    const out: repo.TraceRow = { id: row.id }
    for (const c of t.json) out[c] = scrubJson(row[c], person)
    for (const c of t.text) {
      const v = row[c]
      out[c] = typeof v === 'string' ? (c === 'response_body' ? scrubJsonText(v, person) : person.scrubText(v)) : v
    }
    return out
  })
  await repo.rewriteRows(trx, tenantId, table, rewritten)
  return rows.length
}
