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

/**
 * Creates or updates each contact, matched case-insensitively by e-mail within the caller's
 * scope (their organization's contacts, or their personal ones). Fields present in an item replace
 * the stored ones; absent fields are kept. All or nothing: one transaction.
 */
export async function upsertContacts (trx: Tx, auth: AuthContext, input: UpsertContactsBody) {
  const seen = new Map<string, number>()
  const problems = []
  for (const [i, c] of input.contacts.entries()) {
    const email = c.email.toLowerCase()
    const first = seen.get(email)
    if (first !== undefined) problems.push(fieldError(`body.contacts[${i}].email`, `duplicate of body.contacts[${first}].email`, c.email))
    else seen.set(email, i)
  }
  if (problems.length > 0) throw error400BadRequest('validation failed', problems)

  await repo.lockUpsertScope(trx, auth)
  const existing = new Map<string, Awaited<ReturnType<typeof repo.lockByEmails>>[number]>()
  for (const row of await repo.lockByEmails(trx, auth, [...seen.keys()])) {
    const key = row.email?.toLowerCase()
    if (key !== undefined && !existing.has(key)) existing.set(key, row)
  }

  const items = []
  let created = 0
  let updated = 0
  for (const c of input.contacts) {
    const match = existing.get(c.email.toLowerCase())
    const values = toValues(c)
    if (match === undefined) {
      const row = await repo.insertContact(trx, auth, values)
      await emit(trx, { tenantId: auth.tenantId, topic: 'contact.created', aggregateType: 'contact', aggregateId: row.id, actorId: auth.userId, payload: { contact_id: row.id, email: row.email, source: 'upsert' } })
      items.push({ action: 'created' as const, contact: row })
      created++
    } else {
      const row = await repo.updateContact(trx, auth.tenantId, match.id, values)
      await emit(trx, { tenantId: auth.tenantId, topic: 'contact.updated', aggregateType: 'contact', aggregateId: row.id, actorId: auth.userId, payload: { contact_id: row.id, fields: Object.keys(values), source: 'upsert' } })
      items.push({ action: 'updated' as const, contact: row })
      updated++
    }
  }
  return { items, created, updated }
}
