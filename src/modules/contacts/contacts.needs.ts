/**
 * What the contacts module is given by modules built on it: they import the contacts module, so it imports none of
 * them (docs/architecture.md, "Who calls whom"). src/app.ts passes them when it registers the module
 * (`contactsModule(needs)`).
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { EventRow } from '../events/index.ts'

export interface ContactsNeeds {
  /**
   * the disclosure module's `mayLearnOf` (the outbound rule): whether the reader may be told of a domain event, here
   * of what triggered an automation run a contact's timeline shows
   */
  mayLearnOf: (
    trx: Tx, reader: AuthContext, topic: string, payload: Record<string, unknown>, cache?: Map<string, boolean>
  ) => Promise<boolean>
  /**
   * the attendees module's `settleWaitlist`: an event's waitlist settled (a freed seat to the first in line) after a
   * merge dropped an attendance that held a seat or a place in line
   */
  settleWaitlist: (trx: Tx, event: EventRow) => Promise<unknown>
  /** the automation module's `snapshotRules`: a new version of each rule a merge scoped to the merged contact */
  snapshotRules: (trx: Tx, tenantId: string, ids: readonly string[]) => Promise<void>
}

/** What a merge of contacts is given (contacts.merge.ts). */
export type MergeNeeds = Pick<ContactsNeeds, 'settleWaitlist' | 'snapshotRules'>
