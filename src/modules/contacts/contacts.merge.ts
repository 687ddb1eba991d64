/**
 * Merging contacts (docs/contacts.md, "Merge"): the absorbed contacts become the target. Their values fill the
 * target's empty fields (or the fields the request names), their tags join its tags, and everything that names
 * them moves to it in the one transaction of the request: attendances (two rows of one event become one), space
 * links, activity, contact-scoped automation rules. They are then deleted, and each leaves a redirect to the target
 * (`contact_redirects`), which a read of its id answers with 308.
 *
 * The caller must be allowed to change the target and every absorbed contact, as a PATCH of each would require;
 * the attendances, links and rules follow their contact as its DELETE would remove them, with no grant on the
 * events, spaces or rules they hang off (the rules keep acting as their creators).
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { AttendeeStatus } from '../../platform/db/columns.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { checkIfMatch } from '../../platform/http/conditional.ts'
import {
  ApiError, error400BadRequest, error403Forbidden, error404NotFound, error409Conflict, fieldError, type ErrorDetail
} from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import { lockEventsById } from '../events/index.ts'
import * as repo from './contacts.repository.ts'
import * as mergeRepo from './contacts.merge.repository.ts'
import type { MergeNeeds } from './contacts.needs.ts'
import { TAGS_MAX, WRITABLE_FIELDS, type WritableField } from './contacts.schemas.ts'
import { E164_COLUMNS, PHONE_FIELDS, type PhoneField } from './contacts.phones.ts'
import { contactEvent } from './contacts.events.ts'

/** Contacts one request may absorb: the rows it locks and moves are bounded before it starts. */
export const MERGE_MAX = 20

/** The fields whose value a merge picks from one contact; `tags` is always the union. */
export type MergeField = Exclude<WritableField, 'tags'>
export const MERGE_FIELDS = WRITABLE_FIELDS.filter((f): f is MergeField => f !== 'tags')

export interface MergeInput {
  /** the contacts merged into the target, in the order given */
  absorb: string[]
  /** per field, the contact (the target or an absorbed one) whose value the merged contact keeps */
  fields?: Partial<Record<MergeField, string>> | undefined
}

/** A merge's ids in lower case, checked against each other (`checkMergeInput`). */
export interface CheckedMerge {
  target: string
  absorb: string[]
  fields: Partial<Record<MergeField, string>>
}

type ContactRow = Awaited<ReturnType<typeof mergeRepo.lockContacts>>[number]
type AttendeeRow = mergeRepo.AttendeeRow

/**
 * The body's own mistakes, all at once, before anything is read: the target among the absorbed, an id named twice,
 * a field choice naming a contact that takes no part. Ids compared in lower case (PostgreSQL's form). The input
 * with its ids in lower case.
 */
export function checkMergeInput (targetId: string, input: MergeInput): CheckedMerge {
  const target = targetId.toLowerCase()
  const absorb = input.absorb.map(id => id.toLowerCase())
  const problems: ErrorDetail[] = []
  const first = new Map<string, number>()
  absorb.forEach((id, i) => {
    const seen = first.get(id)
    if (id === target) {
      problems.push(fieldError(`body.absorb[${i}]`, 'the contact merged into (path.id) cannot absorb itself', id))
    } else if (seen !== undefined) {
      problems.push(fieldError(`body.absorb[${i}]`, `duplicate of body.absorb[${seen}]`, id))
    } else {
      first.set(id, i)
    }
  })
  const fields: Partial<Record<MergeField, string>> = {}
  for (const [field, id] of Object.entries(input.fields ?? {}) as Array<[MergeField, string | undefined]>) {
    if (id === undefined) continue
    const from = id.toLowerCase()
    if (from !== target && !first.has(from)) {
      problems.push(fieldError(`body.fields.${field}`, 'names neither the contact merged into nor one it absorbs', id))
    } else fields[field] = from
  }
  if (problems.length > 0) throw error400BadRequest('validation failed', problems)
  return { target, absorb, fields }
}

/**
 * What a read of an id that names no contact the caller sees answers: when the id was absorbed by a merge and the
 * caller sees the contact it now is, 308 to that one (`Location`, and the problem names it); otherwise 404, as for
 * any unknown id (a redirect never tells who cannot see the target that it exists).
 */
export async function mergedOrNotFound (trx: Tx, auth: AuthContext, id: string): Promise<ApiError> {
  const to = await visibleRedirect(trx, auth, id.toLowerCase())
  if (to === undefined) return error404NotFound('contact not found')
  return new ApiError(
    308,
    `contact ${id} was merged into contact ${to}`,
    [fieldError('path.id', 'merged into another contact', to)],
    { location: `/api/v1/contacts/${to}` }, 'contact_redirect')
}

/** The contact an absorbed id now is, when the caller sees it. */
async function visibleRedirect (trx: Tx, auth: AuthContext, id: string): Promise<string | undefined> {
  const to = (await mergeRepo.redirectsOf(trx, auth.tenantId, [id])).get(id)
  if (to === undefined) return undefined
  return (await repo.findVisible(trx, auth, to)) !== undefined ? to : undefined
}

/**
 * The refusal of contacts the merge names that the caller may not merge, as a PATCH of each would answer, in this
 * order: unknown (404: not visible, or absorbed into a contact the caller cannot see), already absorbed into a
 * contact the caller sees (409, naming it), not the caller's to change (403). Every contact of the kind is listed
 * (`errors[].location` `body.absorb[i]`).
 */
async function refuseAbsorbed (
  trx: Tx,
  auth: AuthContext,
  target: string,
  absorb: readonly string[],
  locked: ReadonlyMap<string, ContactRow>
): Promise<void> {
  const unknown: ErrorDetail[] = []
  const merged: ErrorDetail[] = []
  const refused: ErrorDetail[] = []
  for (const [i, id] of absorb.entries()) {
    const at = `body.absorb[${i}]`
    const row = locked.get(id)
    if (row === undefined) {
      const to = await visibleRedirect(trx, auth, id)
      if (to === undefined) {
        unknown.push(fieldError(at, 'contact not found', id))
      } else {
        merged.push(fieldError(at, to === target
          ? 'already merged into this contact'
          : `merged into contact ${to}`, to))
      }
    } else if (!repo.canManage(row, auth)) {
      refused.push(fieldError(at, 'only the owner or an admin may change this contact', id))
    }
  }
  if (unknown.length > 0) {
    throw new ApiError(404, `${unknown.length} contact(s) to absorb not found; nothing was merged`, unknown)
  }
  if (merged.length > 0) {
    throw error409Conflict(`${merged.length} contact(s) to absorb were merged into another already; nothing was merged`,
      merged, 'contact_merged')
  }
  if (refused.length > 0) {
    throw new ApiError(403, 'only the owner or an admin may change a contact; nothing was merged', refused)
  }
}

/** Empty values give way to another contact's: null, blank text, false, no tags. */
function isEmpty (v: unknown): boolean {
  return v === null || v === undefined || v === false || (typeof v === 'string' && v.trim() === '') ||
    (Array.isArray(v) && v.length === 0)
}

/**
 * The values the merged contact takes from the absorbed ones: per field, the contact the request names, else the
 * target's value unless it is empty, else the value of the most recently updated absorbed contact that has one
 * (`is_favorite`: true when any is). Tags: the target's, then each absorbed contact's in the order given, each once.
 * A phone number brings its E.164 form, read when that contact was written (contacts.phones.ts); `invalid_phones`
 * follows the numbers kept (null, "not read yet", when one of them comes from a contact whose numbers were never
 * read: its next write reads them all). Only fields whose value changes are returned.
 */
function mergedValues (
  target: ContactRow,
  absorbed: readonly ContactRow[],
  choice: Partial<Record<MergeField, string>>
): repo.ContactValues {
  const byId = new Map([target, ...absorbed].map(r => [r.id, r]))
  const newestFirst = [...absorbed].sort((a, b) =>
    b.updated_at.getTime() - a.updated_at.getTime() || (a.id < b.id ? -1 : 1))
  const out: Record<string, unknown> = {}
  const phoneFrom = new Map<PhoneField, ContactRow>()
  for (const field of MERGE_FIELDS) {
    const named = choice[field]
    const source = named !== undefined
      ? byId.get(named) ?? target
      : isEmpty(target[field]) ? newestFirst.find(r => !isEmpty(r[field])) ?? target : target
    if (source[field] === target[field]) continue
    out[field] = source[field]
    const phone = PHONE_FIELDS.find(f => f === field)
    if (phone !== undefined) {
      out[E164_COLUMNS[phone]] = source[E164_COLUMNS[phone]]
      phoneFrom.set(phone, source)
    }
  }
  if (phoneFrom.size > 0) {
    const sources = PHONE_FIELDS.map(f => [f, phoneFrom.get(f) ?? target] as const)
    out.invalid_phones = sources.some(([, r]) => r.invalid_phones === null)
      ? null
      : sources.filter(([f, r]) => r.invalid_phones?.includes(f) === true).map(([f]) => f)
  }
  const tags = [...new Set([target, ...absorbed].flatMap(r => r.tags))]
  if (tags.length > TAGS_MAX) {
    throw error409Conflict(`the merged contact would have ${tags.length} tags, more than ${TAGS_MAX}: ` +
      'remove some first; nothing was merged', [
      fieldError('body.absorb', `${tags.length} distinct tags`)
    ], 'merge_limit')
  }
  if (tags.length !== target.tags.length || tags.some((tag, i) => tag !== target.tags[i])) out.tags = tags
  return out as repo.ContactValues
}

/**
 * How strongly an attendee status says the person takes part: two rows of one event keep the stronger. A seat
 * taken or used beats a place in line, which beats an answer still open; declining and not showing up lose to any
 * other (`no_show` above `declined`: that person had said yes).
 */
const STRENGTH: Record<AttendeeStatus, number> = {
  checked_in: 8,
  confirmed: 7,
  waitlisted: 6,
  pending: 5,
  tentative: 4,
  // registered on the public side, the mail not confirmed yet: more than an invitation, less than an answer
  awaiting_confirmation: 3,
  invited: 2,
  no_show: 1,
  declined: 0
}

/** Statuses whose row, when it goes, changes the seats or the waitlist of its event. */
const SEATED_OR_WAITING = new Set<AttendeeStatus>(['checked_in', 'confirmed', 'waitlisted'])

const time = (d: Date | null): number => d === null ? Number.POSITIVE_INFINITY : d.getTime()

/**
 * The order of the rows of one list that collapse: the first stays. Stronger status; among check-ins the earliest
 * (the check-in kept); on the waitlist the better position; the target's row; the older row.
 */
function keepFirst (target: string) {
  return (a: AttendeeRow, b: AttendeeRow): number =>
    STRENGTH[b.status] - STRENGTH[a.status] ||
    time(a.checked_in_at) - time(b.checked_in_at) ||
    (a.waitlist_position ?? Number.POSITIVE_INFINITY) - (b.waitlist_position ?? Number.POSITIVE_INFINITY) ||
    Number(b.contact_id === target) - Number(a.contact_id === target) ||
    a.created_at.getTime() - b.created_at.getTime() ||
    a.id - b.id
}

/**
 * One list's rows of the merged contacts made one: the row kept (as it is: status, position, check-in), the rows
 * that go, and what the kept row takes from them: the earliest invitation, notes and an approval when it has none,
 * and a check-in token when it has none (a token already sent keeps working).
 */
function collapse (rows: readonly AttendeeRow[], target: string) {
  const [keep, ...drop] = [...rows].sort(keepFirst(target))
  if (keep === undefined) throw new Error('collapse of no rows')
  const extra: mergeRepo.AttendeeUpdate = {}
  const earliest = Math.min(...rows.map(r => r.invited_at.getTime()))
  if (earliest < keep.invited_at.getTime()) extra.invited_at = new Date(earliest)
  const notes = drop.find(r => !isEmpty(r.notes))
  if (isEmpty(keep.notes) && notes !== undefined) extra.notes = notes.notes
  const approved = drop.find(r => r.approved_at !== null)
  if (keep.approved_at === null && approved !== undefined) {
    extra.approved_at = approved.approved_at
    extra.approved_by = approved.approved_by
  }
  const token = drop.find(r => r.check_in_token_hash !== null && r.check_in_token_revoked_at === null)
  if (keep.check_in_token_hash === null && token !== undefined) {
    extra.check_in_token_hash = token.check_in_token_hash
    extra.check_in_token_issued_at = token.check_in_token_issued_at
    extra.check_in_token_revoked_at = null
  }
  return { keep, drop, extra }
}

/** The list a row is on: its event, or (event_id null) every occurrence of its series. */
const listOf = (r: AttendeeRow): string => r.event_id !== null ? `event:${r.event_id}` : `series:${String(r.series_id)}`

/**
 * Moves the attendances of the absorbed contacts to the target. Where two of the contacts attend one event (or one
 * series), one row stays (`collapse`) and the others go; the events of such rows are locked first, as registration
 * locks them, and their waitlist is settled afterwards (a seat freed goes to the first in line, positions close up).
 * Every other row simply names the target. The events the target attends afterwards.
 */
async function mergeAttendances (
  trx: Tx,
  tenantId: string,
  target: string,
  absorb: readonly string[],
  settleWaitlist: MergeNeeds['settleWaitlist']
): Promise<number[]> {
  // no row can join these lists meanwhile: an insert naming a locked contact waits for the merge (lockContacts)
  const found = await mergeRepo.sharedAttendances(trx, tenantId, [target, ...absorb])
  const events = await lockEventsById(trx, tenantId,
    [...new Set(found.flatMap(r => r.event_id === null ? [] : [r.event_id]))])
  const shared = await mergeRepo.lockAttendeeRows(trx, tenantId, found.map(r => r.id))

  const lists = new Map<string, AttendeeRow[]>()
  for (const row of shared) lists.set(listOf(row), [...lists.get(listOf(row)) ?? [], row])
  const plans = [...lists.values()].map(rows => collapse(rows, target))
  await mergeRepo.deleteAttendeeRows(trx, tenantId, plans.flatMap(p => p.drop.map(r => r.id)))
  for (const { keep, extra } of plans) {
    if (Object.keys(extra).length > 0) await mergeRepo.updateAttendeeRow(trx, tenantId, keep.id, extra)
  }
  await mergeRepo.moveAttendees(trx, tenantId, target, absorb)

  const dropped = plans.flatMap(p => p.drop)
  const unsettled = new Set(dropped.filter(r => SEATED_OR_WAITING.has(r.status)).map(r => r.event_id))
  for (const event of events.sort((a, b) => a.id - b.id)) {
    if (unsettled.has(event.id) && !event.is_deleted) await settleWaitlist(trx, event)
  }
  return await mergeRepo.attendedEvents(trx, tenantId, target)
}

/**
 * Merges the `absorb` contacts into the target (docs/contacts.md, "Merge"), in the caller's transaction: locks every
 * contact named (in id order), refuses what a PATCH of each would refuse (404, 403, 412 on the target's If-Match)
 * and contacts absorbed already (409 naming the contact they now are), then moves everything that names them,
 * deletes them, leaves their redirects and writes `contact.merged`. The merged contact.
 */
export async function mergeContacts (
  trx: Tx,
  auth: AuthContext,
  input: CheckedMerge,
  ifMatch: string | undefined,
  needs: MergeNeeds
) {
  const { target, absorb, fields } = input
  const tenantId = auth.tenantId
  const locked = new Map((await mergeRepo.lockContacts(trx, auth, [target, ...absorb])).map(r => [r.id, r]))
  const current = locked.get(target)
  if (current === undefined) {
    const to = await visibleRedirect(trx, auth, target)
    if (to === undefined) throw error404NotFound('contact not found')
    throw error409Conflict(`contact ${target} was merged into contact ${to}: merge into that one`, [
      fieldError('path.id', 'merged into another contact', to)
    ], 'contact_merged')
  }
  if (!repo.canManage(current, auth)) throw error403Forbidden('only the owner or an admin may change this contact')
  checkIfMatch(ifMatch, current.revision)
  await refuseAbsorbed(trx, auth, target, absorb, locked)
  const absorbed = absorb.map(id => locked.get(id)).filter(r => r !== undefined)
  const values = mergedValues(current, absorbed, fields)

  const attended = await mergeAttendances(trx, tenantId, target, absorb, needs.settleWaitlist)
  await mergeRepo.moveEventActivity(trx, tenantId, attended, target, absorb)
  await mergeRepo.moveSpaceLinks(trx, tenantId, target, absorb)
  await mergeRepo.moveSpaceActivity(trx, tenantId, target, absorb)
  const rules = await mergeRepo.moveContactRules(trx, tenantId, target, absorb)
  await needs.snapshotRules(trx, tenantId, rules)
  await mergeRepo.writeRedirects(trx, tenantId, target, absorb, auth.userId)
  await mergeRepo.deleteContacts(trx, tenantId, absorb)
  // a new revision even when no field changes: the contact's attendances and links did
  const merged = await repo.updateContact(trx, tenantId, target, values)
  await emit(trx, contactEvent(auth, target, 'contact.merged', {
    contact_id: target,
    absorbed_ids: absorb,
    // the writable fields changed (a phone's E.164 form and flags come with its number)
    fields: WRITABLE_FIELDS.filter(f => Object.hasOwn(values, f))
  }))
  return merged
}
