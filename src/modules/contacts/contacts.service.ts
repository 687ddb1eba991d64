/**
 * Contact rules that span more than one statement: the batch upsert.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { error400BadRequest, fieldError } from '../../platform/http/errors.ts'
import { emit } from '../../platform/outbox.ts'
import * as repo from './contacts.repository.ts'
import type { UpsertContactsBody } from './contacts.schemas.ts'
import { toValues } from './contacts.values.ts'
import { contactEvent } from './contacts.events.ts'

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
  type Row = Awaited<ReturnType<typeof repo.lockByEmails>>[number]
  // per e-mail (rows come oldest first): the oldest contact the caller may change, else the oldest one
  const writable = new Map<string, Row>()
  const refused = new Map<string, Row>()
  for (const row of await repo.lockByEmails(trx, auth, [...seen.keys()])) {
    const key = row.email?.toLowerCase()
    if (key === undefined) continue
    const into = repo.canManage(row, auth) ? writable : refused
    if (!into.has(key)) into.set(key, row)
  }

  const items = []
  let created = 0
  let updated = 0
  let skipped = 0
  for (const c of input.contacts) {
    const key = c.email.toLowerCase()
    const match = writable.get(key)
    const other = refused.get(key)
    const values = toValues(c)
    if (match === undefined && other !== undefined) {
      items.push({
        action: 'skipped' as const,
        contact: other,
        error: {
          status: 403,
          detail: 'the e-mail matches a contact only its owner or an admin may change; nothing was written'
        }
      })
      skipped++
    } else if (match === undefined) {
      const row = await repo.insertContact(trx, auth, values)
      await emit(trx, contactEvent(auth, row.id, 'contact.created', { contact_id: row.id, email: row.email, source: 'upsert' }))
      items.push({ action: 'created' as const, contact: row })
      created++
    } else {
      const row = await repo.updateContact(trx, auth.tenantId, match.id, values)
      await emit(trx, contactEvent(auth, row.id, 'contact.updated', { contact_id: row.id, fields: Object.keys(values), source: 'upsert' }))
      items.push({ action: 'updated' as const, contact: row })
      updated++
    }
  }
  return { items, created, updated, skipped }
}
