/**
 * The contact of a public registration (docs/guests.md, "Public registration"): a guest who registers for an event
 * names an address; the contact is the one with that address the event's creator sees as a member (their own, and
 * their organization's: the oldest), else a new contact of the creator in the event's organization, visible as any
 * contact the creator makes. An existing contact is never changed by the anonymous input.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import { contactEvent } from './contacts.events.ts'
import * as repo from './contacts.repository.ts'
import { emailKey } from './contacts.values.ts'

export interface GuestContactInput {
  tenantId: string
  /** the event's creator: the owner of a new contact */
  creatorId: string
  /** the event's organization: a new contact's, and whose contacts match */
  orgId: string | null
  firstName: string
  lastName: string | null
  email: string
  /** the language of the registration: a new contact's */
  locale: string
}

/** The contact of a registration, matched (locked) or made; `created` when it is new. */
export async function contactForRegistration (
  trx: Tx,
  v: GuestContactInput
): Promise<{ id: string, created: boolean }> {
  const found = await repo.findRegistrationMatch(trx, v.tenantId, v.creatorId, v.orgId, emailKey(v.email))
  if (found !== undefined) return { id: found.id, created: false }
  const row = await repo.insertRegistrationContact(trx, v)
  await emit(trx, contactEvent({ tenantId: v.tenantId, userId: null }, row.id, 'contact.created', {
    contact_id: row.id, email: row.email, source: 'registration'
  }))
  return { id: row.id, created: true }
}
