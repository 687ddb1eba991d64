import type { ContactValues } from './contacts.repository.ts'
import { WRITABLE_FIELDS, type ContactInput } from './contacts.schemas.ts'

/**
 * The column values of a validated body: only writable fields, `$schema` dropped, null kept
 * (it clears a field). `tags: null` stores an empty list, `is_favorite: null` is not accepted by
 * the schema.
 */
export function toValues (input: Partial<ContactInput>): ContactValues {
  const out: Record<string, unknown> = {}
  for (const field of WRITABLE_FIELDS) {
    if (!(field in input)) continue
    const v = (input as Record<string, unknown>)[field]
    out[field] = field === 'tags' ? (v ?? []) : v
  }
  return out as ContactValues
}

/** PUT semantics: every writable field the body omits is cleared. */
export function replacementValues (input: Partial<ContactInput>): ContactValues {
  const out: Record<string, unknown> = {}
  for (const field of WRITABLE_FIELDS) out[field] = field === 'tags' ? [] : field === 'is_favorite' ? false : null
  return { ...out, ...toValues(input) } as ContactValues
}
