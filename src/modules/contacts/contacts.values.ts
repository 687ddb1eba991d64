import type { preValidationAsyncHookHandler } from 'fastify'
import type { ContactValues } from './contacts.repository.ts'
import { WRITABLE_FIELDS, type ContactInput } from './contacts.schemas.ts'

/**
 * What an e-mail is compared by, everywhere (create's duplicates, upsert and import matches, search): trimmed and
 * lower-cased, as `lower(email)` of a stored address (stored trimmed) and the index contacts_email read it.
 */
export const emailKey = (email: string): string => email.trim().toLowerCase()

/** A body's e-mail trimmed, when it is a string (the schema refuses anything else). */
function trimEmailOf (item: unknown): void {
  if (item === null || typeof item !== 'object') return
  const fields = item as Record<string, unknown>
  if (typeof fields.email === 'string') fields.email = fields.email.trim()
}

/**
 * A `preValidation` hook of the writes of contacts: the spaces around an e-mail (a body's `email`, or each of its
 * `contacts[].email`) are dropped before the body is validated, so ` Ann@Example.COM ` is the address
 * `Ann@Example.COM` (a copied address often carries a space), checked by the schema's format and stored trimmed.
 */
export const trimEmails: preValidationAsyncHookHandler = async request => {
  const body = request.body as Record<string, unknown> | null | undefined
  if (body === null || typeof body !== 'object') return
  trimEmailOf(body)
  if (Array.isArray(body.contacts)) body.contacts.forEach(trimEmailOf)
}

/**
 * The column values of a validated body: only writable fields, `$schema` dropped, null kept
 * (it clears a field), the e-mail trimmed. `tags: null` stores an empty list, `is_favorite: null` is not accepted by
 * the schema.
 */
export function toValues (input: Partial<ContactInput>): ContactValues {
  const out: Record<string, unknown> = {}
  for (const field of WRITABLE_FIELDS) {
    if (!(field in input)) continue
    const v = (input as Record<string, unknown>)[field]
    out[field] = field === 'tags' ? (v ?? []) : field === 'email' && typeof v === 'string' ? v.trim() : v
  }
  return out as ContactValues
}

/** PUT semantics: every writable field the body omits is cleared. */
export function replacementValues (input: Partial<ContactInput>): ContactValues {
  const out: Record<string, unknown> = {}
  for (const field of WRITABLE_FIELDS) out[field] = field === 'tags' ? [] : field === 'is_favorite' ? false : null
  return { ...out, ...toValues(input) } as ContactValues
}
