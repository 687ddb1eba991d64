/** What other modules read of the audit log. */
import type { Tx } from '../../platform/db/tenant.ts'
import * as repo from './audit.repository.ts'

/** The most entries a data-subject export lists (the newest are kept out past it; docs/privacy.md). */
export const ENTRIES_ABOUT_LIMIT = 10_000

/**
 * The entries about a contact (changes that concern it) or by a user (changes they made), oldest first, at most
 * ENTRIES_ABOUT_LIMIT: what a data-subject export holds of the log. Sealed and unsealed alike (an entry written a
 * moment ago is about them too).
 */
export async function auditEntriesAbout (
  trx: Tx, tenantId: string, subject: { contactId: string | number } | { userId: string }
) {
  return await repo.entriesAbout(trx, tenantId, subject, ENTRIES_ABOUT_LIMIT)
}
