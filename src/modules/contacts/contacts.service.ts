/**
 * Contact rules that span more than one statement: the batch upsert, and the CSV import built on it.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import {
  error400BadRequest, error409Conflict, error422UnprocessableEntity, fieldError
} from '../../platform/http/errors.ts'
import { emitMany } from '../../platform/outbox.ts'
import * as repo from './contacts.repository.ts'
import {
  IMPORT_MAX_ERRORS, UPSERT_MAX, type ImportOutputBody, type UpsertContactItem, type UpsertContactsBody
} from './contacts.schemas.ts'
import type { ParsedImport } from './contacts.import.ts'
import { toValues } from './contacts.values.ts'
import { contactEvent } from './contacts.events.ts'

type MatchedRow = Awaited<ReturnType<typeof repo.lockByEmails>>[number]

/** The contacts of the caller's upsert scope that lower-cased e-mails match, locked (see `upsertContacts`). */
export interface UpsertMatches {
  /** per e-mail: the oldest contact the caller may change */
  writable: Map<string, MatchedRow>
  /** per e-mail: the oldest contact, when it is not the caller's to change */
  refused: Map<string, MatchedRow>
}

/**
 * Locks the contacts of the caller's upsert scope with these lower-cased e-mails (at most `UPSERT_MAX`; the
 * caller holds `repo.lockUpsertScope`) and sorts them as an upsert writes them.
 */
export async function lockUpsertMatches (trx: Tx, auth: AuthContext, emails: string[]): Promise<UpsertMatches> {
  const writable = new Map<string, MatchedRow>()
  const refused = new Map<string, MatchedRow>()
  // rows come oldest first
  for (const row of await repo.lockByEmails(trx, auth, emails)) {
    const key = row.email?.toLowerCase()
    if (key === undefined) continue
    const into = repo.canManage(row, auth) ? writable : refused
    if (!into.has(key)) into.set(key, row)
  }
  return { writable, refused }
}

/**
 * Creates or updates each contact, matched case-insensitively by e-mail within the caller's
 * scope (their organization's contacts, or their personal ones). Fields present in an item replace
 * the stored ones; absent fields are kept. One transaction.
 *
 * A matched contact is written under the rule of PATCH (`repo.canManage`: its owner or a tenant
 * admin). Among several contacts with the e-mail, the oldest the caller may change is updated; when
 * the caller may change none of them, the item is `skipped` (the oldest match returned unchanged,
 * with `error.status` 403) and nothing is written to it: never a silent rewrite of another member's
 * contact, and no second contact with the same e-mail in the scope.
 *
 * Set-based: the items are planned first, then one insert of the created contacts, one update of the updated ones
 * (`repo.insertContacts`, `repo.updateContacts`) and one `emitMany` of their events in item order.
 */
export async function upsertContacts (trx: Tx, auth: AuthContext, input: UpsertContactsBody) {
  const seen = new Map<string, number>()
  const problems = []
  for (const [i, c] of input.contacts.entries()) {
    const email = c.email.toLowerCase()
    const first = seen.get(email)
    if (first !== undefined) {
      problems.push(fieldError(`body.contacts[${i}].email`, `duplicate of body.contacts[${first}].email`, c.email))
    } else seen.set(email, i)
  }
  if (problems.length > 0) throw error400BadRequest('validation failed', problems)

  await repo.lockUpsertScope(trx, auth)
  const { writable, refused } = await lockUpsertMatches(trx, auth, [...seen.keys()])

  // the plan of each item, in input order; the writes are then made set-based (one statement per kind and chunk)
  type Planned =
    | { action: 'skipped', contact: MatchedRow }
    | { action: 'created', values: repo.ContactValues }
    | { action: 'updated', id: string, values: repo.ContactValues }
  const plan: Planned[] = input.contacts.map(c => {
    const key = c.email.toLowerCase()
    const match = writable.get(key)
    const other = refused.get(key)
    if (match === undefined && other !== undefined) return { action: 'skipped', contact: other }
    if (match === undefined) return { action: 'created', values: toValues(c) }
    return { action: 'updated', id: match.id, values: toValues(c) }
  })
  const creates = plan.filter(p => p.action === 'created')
  const updates = plan.filter(p => p.action === 'updated')
  // the created rows by e-mail (as given: unique in the batch), the updated ones by id
  const createdRows = new Map(
    (creates.length > 0 ? await repo.insertContacts(trx, auth, creates.map(p => p.values)) : []).map(r => [r.email, r])
  )
  const updatedRows = new Map(
    (updates.length > 0 ? await repo.updateContacts(trx, auth.tenantId, updates) : []).map(r => [r.id, r])
  )

  const items = []
  const events = []
  for (const p of plan) {
    if (p.action === 'skipped') {
      items.push({
        action: 'skipped' as const,
        contact: p.contact,
        error: {
          status: 403,
          detail: 'the e-mail matches a contact only its owner or an admin may change; nothing was written'
        }
      })
    } else if (p.action === 'created') {
      const row = createdRows.get(p.values.email ?? null)
      if (row === undefined) throw new Error('a created contact was not returned by its insert')
      events.push(contactEvent(auth, row.id, 'contact.created', { contact_id: row.id, email: row.email, source: 'upsert' }))
      items.push({ action: 'created' as const, contact: row })
    } else {
      const row = updatedRows.get(p.id)
      if (row === undefined) throw new Error('an updated contact was not returned by its update')
      events.push(contactEvent(auth, row.id, 'contact.updated', { contact_id: row.id, fields: Object.keys(p.values), source: 'upsert' }))
      items.push({ action: 'updated' as const, contact: row })
    }
  }
  // one outbox row per created or updated item, in input order (as one `emit` after each write gave them)
  await emitMany(trx, events)
  const skipped = plan.length - creates.length - updates.length
  return { items, created: creates.length, updated: updates.length, skipped }
}

/** Whether writing `values` to the contact would change none of its fields. */
function changesNothing (row: MatchedRow, values: repo.ContactValues): boolean {
  const stored = row as unknown as Record<string, unknown>
  return Object.entries(values).every(([field, value]) => {
    const now = stored[field]
    return Array.isArray(value)
      ? Array.isArray(now) && now.length === value.length && value.every((v, i) => v === now[i])
      : now === value
  })
}

/**
 * Applies the rows of a CSV import (contacts.import.ts) under the rules of `upsertContacts`, all or nothing:
 * the matches of every row are locked first, in chunks of `UPSERT_MAX` e-mails; a row whose e-mail matches only
 * contacts the caller may not change is an error (an upsert would skip it); a row that would change no field of
 * its match is `unchanged` and not written. With any row in error (`rowErrors` from the parsing, or the above),
 * 422 listing the first `IMPORT_MAX_ERRORS` by line, and nothing is written. Otherwise the other rows go through
 * `upsertContacts` in chunks of `UPSERT_MAX`, unless `dryRun`. One transaction (the caller's).
 */
export async function importContacts (
  trx: Tx,
  auth: AuthContext,
  parsed: ParsedImport,
  dryRun: boolean
): Promise<Omit<ImportOutputBody, '$schema'>> {
  const { rows } = parsed
  await repo.lockUpsertScope(trx, auth)
  const writable = new Map<string, MatchedRow>()
  const refused = new Map<string, MatchedRow>()
  for (let i = 0; i < rows.length; i += UPSERT_MAX) {
    const emails = rows.slice(i, i + UPSERT_MAX).map(r => r.item.email.toLowerCase())
    const matched = await lockUpsertMatches(trx, auth, emails)
    for (const [k, v] of matched.writable) writable.set(k, v)
    for (const [k, v] of matched.refused) refused.set(k, v)
  }

  const errors = [...parsed.rowErrors]
  const results: ImportOutputBody['results'] = []
  const writes: Array<{ result: ImportOutputBody['results'][number], item: UpsertContactItem }> = []
  for (const { line, item } of rows) {
    const key = item.email.toLowerCase()
    const match = writable.get(key)
    if (match === undefined && refused.has(key)) {
      errors.push({
        line,
        error: fieldError(
          `body.line[${line}].email`,
          'the e-mail matches a contact only its owner or an admin may change',
          item.email
        )
      })
    } else if (match !== undefined && changesNothing(match, toValues(item))) {
      results.push({ line, status: 'unchanged', contact_id: match.id })
    } else {
      const result = { line, status: match === undefined ? 'created' as const : 'updated' as const, contact_id: match?.id ?? null }
      results.push(result)
      writes.push({ result, item })
    }
  }
  if (errors.length > 0) {
    const lines = new Set(errors.map(e => e.line)).size
    throw error422UnprocessableEntity(
      `${lines} of ${parsed.total} data rows have errors; nothing was imported` +
        (errors.length > IMPORT_MAX_ERRORS ? ` (the first ${IMPORT_MAX_ERRORS} errors are listed)` : ''),
      errors.sort((a, b) => a.line - b.line).slice(0, IMPORT_MAX_ERRORS).map(e => e.error)
    )
  }

  if (!dryRun) {
    for (let i = 0; i < writes.length; i += UPSERT_MAX) {
      const chunk = writes.slice(i, i + UPSERT_MAX)
      const written = await upsertContacts(trx, auth, { contacts: chunk.map(w => w.item) })
      for (const [j, { action, contact }] of written.items.entries()) {
        const result = chunk[j]?.result
        // the matches are locked since the plan: a skip here means the plan no longer holds
        if (result === undefined || action === 'skipped') {
          throw error409Conflict('the contacts changed during the import; nothing was imported')
        }
        result.status = action
        result.contact_id = contact.id
      }
    }
  }
  const count = (status: string) => results.filter(r => r.status === status).length
  return { created: count('created'), updated: count('updated'), unchanged: count('unchanged'), results }
}
