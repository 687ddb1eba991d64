/**
 * Contact rules that span more than one statement: create (with its possible duplicates), the batch upsert, and the
 * CSV import built on it.
 */
import type { Kysely } from 'kysely'
import type { Database } from '../../platform/db/database.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { error409Conflict, error422UnprocessableEntity, fieldError } from '../../platform/http/errors.ts'
import { emit, emitMany } from '../../platform/outbox.ts'
import * as repo from './contacts.repository.ts'
import {
  IMPORT_MAX_ERRORS, POSSIBLE_DUPLICATES_MAX, UPSERT_MAX, WRITABLE_FIELDS, type ContactInput, type ImportOutputBody,
  type UpsertContactItem, type UpsertContactsBody
} from './contacts.schemas.ts'
import type { ParsedImport } from './contacts.import.ts'
import { emailKey, toValues } from './contacts.values.ts'
import { phoneKeys, withPhones, type CountryCode, type PhoneField, type StoredPhones } from './contacts.phones.ts'
import { contactEvent } from './contacts.events.ts'

type MatchedRow = repo.ContactRowOut

/**
 * Creates a contact of the caller with its phone numbers read (`withPhones`, with `region`) and its `contact.created`
 * event; answers it with `possible_duplicates`, the other contacts the caller sees with its e-mail or one of its
 * numbers (`repo.findPossibleDuplicates`). A duplicate is reported, never refused: two people may share a switchboard
 * number, and only the caller can tell.
 */
export async function createContact (
  trx: Tx,
  auth: AuthContext,
  input: Partial<ContactInput>,
  region: CountryCode | undefined
): Promise<MatchedRow & { possible_duplicates: string[] }> {
  const created = await repo.insertContact(trx, auth, withPhones(toValues(input), undefined, region))
  await emit(trx, contactEvent(auth, created.id, 'contact.created', {
    contact_id: created.id, email: created.email, source: 'api'
  }))
  const duplicates = await repo.findPossibleDuplicates(trx, auth, {
    id: created.id,
    emailKey: created.email !== null && created.email.trim() !== '' ? emailKey(created.email) : null,
    phoneKeys: phoneKeys(created)
  }, POSSIBLE_DUPLICATES_MAX)
  return { ...created, possible_duplicates: duplicates }
}

/** The contacts of the caller's upsert scope that e-mail keys (`emailKey`) match, locked (see `upsertContacts`). */
export interface UpsertMatches {
  /** per e-mail key: the oldest contact the caller may change */
  writable: Map<string, MatchedRow>
  /** per e-mail key: the oldest contact, when it is not the caller's to change */
  refused: Map<string, MatchedRow>
}

/**
 * Locks the contacts of the caller's upsert scope with these e-mail keys (at most `UPSERT_MAX`; the caller holds
 * `repo.lockUpsertScope`) and sorts them as an upsert writes them.
 */
export async function lockUpsertMatches (trx: Tx, auth: AuthContext, keys: string[]): Promise<UpsertMatches> {
  const writable = new Map<string, MatchedRow>()
  const refused = new Map<string, MatchedRow>()
  // rows come oldest first
  for (const row of await repo.lockByEmails(trx, auth, keys)) {
    if (row.email === null) continue
    const key = emailKey(row.email)
    const into = repo.canManage(row, auth) ? writable : refused
    if (!into.has(key)) into.set(key, row)
  }
  return { writable, refused }
}

/** Whether writing `values` to a contact holding `stored` would change none of its fields. */
function changesNothing (stored: Record<string, unknown>, values: repo.ContactValues): boolean {
  return Object.entries(values).every(([field, value]) => {
    const now = stored[field]
    return Array.isArray(value)
      ? Array.isArray(now) && now.length === value.length && value.every((v, i) => v === now[i])
      : now === value
  })
}

/** The contact one e-mail key of a batch applies to, as the batch leaves it. */
interface Target {
  /** the stored contact it matched; undefined for one the batch creates */
  match: MatchedRow | undefined
  /** its fields after the items so far: what the next item of the e-mail is compared with */
  state: Record<string, unknown>
  /** what is written to it: the values of every item that changes it, later ones winning */
  writes: repo.ContactValues
}

/** What an item of a batch does, in input order. */
type ItemPlan =
  | { action: 'skipped', key: string, match: MatchedRow }
  | { action: 'created' | 'updated' | 'unchanged', key: string, fields: string[] }

/** A new contact's fields before its first item: the columns' defaults. */
const NEW_CONTACT: Record<string, unknown> = {
  ...Object.fromEntries(WRITABLE_FIELDS.map(f => [f, null])), tags: [], is_favorite: false
}

/**
 * The plan of a batch of items, in input order, matched by e-mail key: an item whose e-mail matches only contacts
 * the caller may not change is skipped; the first item of an e-mail without a match creates its contact; every
 * other item applies to the contact of its e-mail as the items before it left it (the match, or the contact an
 * earlier item creates: never a second one), `unchanged` when that contact already holds all its values (phone
 * columns included, `withPhones`), else `updated`.
 */
function planBatch (items: UpsertContactItem[], matches: UpsertMatches, region: CountryCode | undefined) {
  const targets = new Map<string, Target>()
  const plan = items.map((item): ItemPlan => {
    const key = emailKey(item.email)
    const input = toValues(item)
    const fields = Object.keys(input)
    let target = targets.get(key)
    if (target === undefined) {
      const match = matches.writable.get(key)
      const other = matches.refused.get(key)
      if (match === undefined && other !== undefined) return { action: 'skipped', key, match: other }
      if (match === undefined) {
        const values = withPhones(input, undefined, region)
        targets.set(key, { match, state: { ...NEW_CONTACT, ...values }, writes: values })
        return { action: 'created', key, fields }
      }
      target = { match, state: { ...match }, writes: {} }
      targets.set(key, target)
    }
    const values = withPhones(input, target.state as StoredPhones, region)
    if (changesNothing(target.state, values)) return { action: 'unchanged', key, fields }
    target.writes = { ...target.writes, ...values }
    target.state = { ...target.state, ...values }
    return { action: 'updated', key, fields }
  })
  return { plan, targets }
}

/**
 * Writes a planned batch set-based: one insert of the contacts it creates, one update of those it changes
 * (`repo.insertContacts`, `repo.updateContacts`, each with every value its items set) and one `emitMany` of the events
 * of its created and updated items in input order; the contact of each e-mail key as written.
 */
async function writeBatch (
  trx: Tx,
  auth: AuthContext,
  plan: ItemPlan[],
  targets: Map<string, Target>
): Promise<Map<string, MatchedRow>> {
  const rows = new Map<string, MatchedRow>()
  const creates: repo.ContactValues[] = []
  const updates: Array<{ id: string, values: repo.ContactValues }> = []
  const keyOfId = new Map<string, string>()
  for (const [key, t] of targets) {
    if (t.match === undefined) creates.push(t.writes)
    else if (Object.keys(t.writes).length > 0) {
      updates.push({ id: t.match.id, values: t.writes })
      keyOfId.set(t.match.id, key)
    } else rows.set(key, t.match)
  }
  // a created contact by its e-mail key (one per key)
  for (const row of creates.length > 0 ? await repo.insertContacts(trx, auth, creates) : []) {
    rows.set(emailKey(row.email ?? ''), row)
  }
  for (const row of updates.length > 0 ? await repo.updateContacts(trx, auth.tenantId, updates) : []) {
    rows.set(keyOfId.get(row.id) ?? '', row)
  }
  const events = []
  for (const p of plan) {
    if (p.action !== 'created' && p.action !== 'updated') continue
    const row = rows.get(p.key)
    if (row === undefined) throw new Error('a written contact was not returned by its statement')
    events.push(p.action === 'created'
      ? contactEvent(auth, row.id, 'contact.created', { contact_id: row.id, email: row.email, source: 'upsert' })
      : contactEvent(auth, row.id, 'contact.updated', { contact_id: row.id, fields: p.fields, source: 'upsert' }))
  }
  // one outbox row per created or updated item, in input order (as one `emit` after each write gave them)
  await emitMany(trx, events)
  return rows
}

/**
 * Creates or updates each contact, matched by e-mail key (`emailKey`: trimmed, case-insensitive) within the caller's
 * scope (their organization's contacts, or their personal ones). Fields present in an item replace the stored ones;
 * absent fields are kept; phone numbers are read with `region` (`withPhones`). One transaction.
 *
 * A matched contact is written under the rule of PATCH (`repo.canManage`: its owner or a tenant
 * admin). Among several contacts with the e-mail, the oldest the caller may change is updated; when
 * the caller may change none of them, the item is `skipped` (the oldest match returned unchanged,
 * with `error.status` 403) and nothing is written to it: never a silent rewrite of another member's
 * contact, and no second contact with the same e-mail in the scope.
 *
 * An e-mail given again in the batch (in any case or spacing) applies to the contact its first item matched or
 * created, in input order (`planBatch`): a batch never creates two contacts with one e-mail. An item that would change
 * nothing is `unchanged`: not written, no event. Each item answers its contact as the batch leaves it.
 *
 * Set-based: the items are planned first, then one insert of the created contacts, one update of the updated ones
 * and one `emitMany` of their events in item order (`writeBatch`).
 */
export async function upsertContacts (
  trx: Tx,
  auth: AuthContext,
  input: UpsertContactsBody,
  region: CountryCode | undefined
) {
  await repo.lockUpsertScope(trx, auth)
  const keys = [...new Set(input.contacts.map(c => emailKey(c.email)))]
  const { plan, targets } = planBatch(input.contacts, await lockUpsertMatches(trx, auth, keys), region)
  const rows = await writeBatch(trx, auth, plan, targets)

  const items = plan.map(p => {
    if (p.action === 'skipped') {
      return {
        action: 'skipped' as const,
        contact: p.match,
        error: {
          status: 403,
          detail: 'the e-mail matches a contact only its owner or an admin may change; nothing was written'
        }
      }
    }
    const contact = rows.get(p.key)
    if (contact === undefined) throw new Error('a contact of the batch was not returned')
    return { action: p.action, contact }
  })
  const count = (action: ItemPlan['action']) => plan.filter(p => p.action === action).length
  return {
    items,
    created: count('created'),
    updated: count('updated'),
    unchanged: count('unchanged'),
    skipped: count('skipped')
  }
}

/**
 * Applies the rows of a CSV import (contacts.import.ts) under the rules of `upsertContacts`, all or nothing: the
 * matches of every row are locked first, in chunks of `UPSERT_MAX` e-mail keys, and the whole file is planned as one
 * batch (`planBatch`): a row whose e-mail matches only contacts the caller may not change is an error (an upsert would
 * skip it); a row repeating an e-mail of an earlier row applies to that row's contact; a row that would change no
 * field is `unchanged` and not written. With any row in error (`rowErrors` from the parsing, or the above), 422
 * listing the first `IMPORT_MAX_ERRORS` by line, and nothing is written. Otherwise the rows that write go through
 * `upsertContacts` in chunks of `UPSERT_MAX` (a later chunk matches the contacts an earlier one created), unless
 * `dryRun`. One transaction (the caller's).
 */
export async function importContacts (
  trx: Tx,
  auth: AuthContext,
  parsed: ParsedImport,
  dryRun: boolean,
  region: CountryCode | undefined
): Promise<Omit<ImportOutputBody, '$schema'>> {
  const { rows } = parsed
  await repo.lockUpsertScope(trx, auth)
  const matches: UpsertMatches = { writable: new Map(), refused: new Map() }
  const keys = [...new Set(rows.map(r => emailKey(r.item.email)))]
  for (let i = 0; i < keys.length; i += UPSERT_MAX) {
    const matched = await lockUpsertMatches(trx, auth, keys.slice(i, i + UPSERT_MAX))
    for (const [k, v] of matched.writable) matches.writable.set(k, v)
    for (const [k, v] of matched.refused) matches.refused.set(k, v)
  }
  const { plan, targets } = planBatch(rows.map(r => r.item), matches, region)

  const errors = [...parsed.rowErrors]
  const results: ImportOutputBody['results'] = []
  const writes: Array<{ result: ImportOutputBody['results'][number], item: UpsertContactItem }> = []
  // rows whose contact the import creates, by e-mail key (their ids are known once it is written)
  const ofCreated: Array<{ result: ImportOutputBody['results'][number], key: string }> = []
  for (const [i, { line, item }] of rows.entries()) {
    const p = plan[i]
    if (p === undefined) continue
    if (p.action === 'skipped') {
      errors.push({
        line,
        error: fieldError(
          `body.line[${line}].email`,
          'the e-mail matches a contact only its owner or an admin may change',
          item.email
        )
      })
      continue
    }
    const target = targets.get(p.key)
    const invalid = (target?.state.invalid_phones ?? []) as PhoneField[]
    const result = {
      line,
      status: p.action,
      contact_id: target?.match?.id ?? null,
      ...(invalid.length > 0 ? { invalid_phones: invalid } : {})
    }
    results.push(result)
    if (p.action !== 'unchanged') writes.push({ result, item })
    if (target?.match === undefined) ofCreated.push({ result, key: p.key })
  }
  if (errors.length > 0) {
    const lines = new Set(errors.map(e => e.line)).size
    throw error422UnprocessableEntity(
      `${lines} of ${parsed.total} data rows have errors; nothing was imported` +
        (errors.length > IMPORT_MAX_ERRORS ? ` (the first ${IMPORT_MAX_ERRORS} errors are listed)` : ''),
      errors.sort((a, b) => a.line - b.line).slice(0, IMPORT_MAX_ERRORS).map(e => e.error), 'import_rows_invalid')
  }

  if (!dryRun) {
    const created = new Map<string, string>()
    for (let i = 0; i < writes.length; i += UPSERT_MAX) {
      const chunk = writes.slice(i, i + UPSERT_MAX)
      const written = await upsertContacts(trx, auth, { contacts: chunk.map(w => w.item) }, region)
      for (const [j, { action, contact }] of written.items.entries()) {
        const result = chunk[j]?.result
        // the matches are locked since the plan: another action here means the plan no longer holds
        if (result === undefined || action !== result.status) {
          throw error409Conflict(
            'the contacts changed during the import; nothing was imported', [], 'concurrent_update'
          )
        }
        result.contact_id = contact.id
        if (action === 'created' && contact.email !== null) created.set(emailKey(contact.email), contact.id)
      }
    }
    // an unchanged row of a contact that an earlier row created was not written: its id is the created one
    for (const { result, key } of ofCreated) result.contact_id ??= created.get(key) ?? null
  }
  const count = (status: string) => results.filter(r => r.status === status).length
  return { created: count('created'), updated: count('updated'), unchanged: count('unchanged'), results }
}

/** Contacts one statement reads the numbers of, and tenants one look-up finds, in `readUnreadPhones`. */
const UNREAD_BATCH = 500
const UNREAD_TENANTS = 500

/**
 * Reads the numbers of the contacts written before phone numbers were read (migration 0028: `invalid_phones` null),
 * with the deployment's region (PHONE_DEFAULT_REGION), tenant after tenant, a batch per transaction, until none is
 * left or `signal` aborts; the number of contacts read. Run beside retention by the worker (retention.ts): without it
 * such contacts would be read only at their next write, and the duplicates of their numbers never found. A read is a
 * write of the contact (a new revision, `updated_at`, a change for sync): its body shows the E.164 forms.
 */
export async function readUnreadPhones (
  db: Kysely<Database>,
  region: CountryCode | undefined,
  signal?: AbortSignal
): Promise<number> {
  let read = 0
  let after = ''
  for (;;) {
    const tenants = await withSystem(db, trx => repo.tenantsWithUnreadPhones(trx, after, UNREAD_TENANTS))
    for (const tenantId of tenants) {
      for (;;) {
        if (signal?.aborted === true) return read
        const n = await withTenant(db, { tenantId }, async trx => {
          const rows = await repo.lockUnreadPhones(trx, tenantId, UNREAD_BATCH)
          if (rows.length === 0) return 0
          await repo.updateContacts(trx, tenantId, rows.map(r => ({ id: r.id, values: withPhones({}, r, region) })))
          return rows.length
        })
        read += n
        if (n < UNREAD_BATCH) break
      }
      after = tenantId
    }
    if (tenants.length < UNREAD_TENANTS) return read
  }
}
