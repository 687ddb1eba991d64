/**
 * Merging contacts: `POST /api/v1/contacts/{id}/merge` (contacts.merge.ts; docs/contacts.md, "Merge"). Registered by
 * the contacts module (contacts.routes.ts), which also answers a read of an absorbed id (`mergedOrNotFound`).
 */
import { Type } from '@sinclair/typebox'
import type { App, AppContext } from '../../platform/app-context.ts'
import { ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { idempotentWrite } from '../../platform/http/idempotency.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { body, UuidString } from '../../platform/http/schema.ts'
import { requirePolicy } from '../policy/index.ts'
import { Contact, ContactParams } from './contacts.schemas.ts'
import { checkMergeInput, MERGE_FIELDS, MERGE_MAX, mergeContacts } from './contacts.merge.ts'
import type { MergeNeeds } from './contacts.needs.ts'

const operation = operationsTagged('Contacts')
/** as an upsert's: one request may move many rows (every attendance of up to MERGE_MAX contacts) */
const MERGE_COST = 5

export const MergeContactsBody = body({
  absorb: Type.Array(Type.String({ format: 'uuid' }), {
    minItems: 1,
    maxItems: MERGE_MAX,
    description: `The contacts merged into this one (1–${MERGE_MAX}): deleted afterwards, each redirecting here`
  }),
  fields: Type.Optional(Type.Object(
    Object.fromEntries(MERGE_FIELDS.map(f => [f, Type.Optional(UuidString)])),
    {
      additionalProperties: false,
      description:
        'Per field, the contact (this one or an absorbed one) whose value the merged contact keeps, empty or not. ' +
        'A field not named keeps this contact\'s value unless it is empty, else takes the value of the most ' +
        'recently updated absorbed contact that has one. Tags are always the union.'
    }
  ))
})

/** Registers the merge route (the contacts module passes its database and what a merge is given, `MergeNeeds`). */
export async function mergeRoutes (app: App, ctx: Pick<AppContext, 'db'>, needs: MergeNeeds): Promise<void> {
  const { db } = ctx
  app.post('/api/v1/contacts/:id/merge', operation('merge-contacts',
    `Merge up to ${MERGE_MAX} contacts into this one: their attendances, tags, links and activity move here, ` +
    `and their ids redirect here (costs ${MERGE_COST} rate-limit tokens)`, {
      description: 'Folds duplicate contacts into this one in one transaction; the merged ids keep answering with a ' +
        'redirect here. Use it on the groups `list-contact-duplicates` finds.',
      params: ContactParams,
      body: MergeContactsBody,
      response: { 200: Contact }
    }, requirePolicy('contact', 'write'), {
      config: { cost: MERGE_COST, idempotency: 'transaction' }
    }), async (request, reply) => {
    // the body's own mistakes answer before a connection is taken
    const input = checkMergeInput(request.params.id, request.body)
    const ifMatch = ifMatchOf(request)
    const merged = await idempotentWrite(db, request, trx => mergeContacts(trx, request.auth, input, ifMatch, needs))
    setEtag(reply, merged.revision)
    return merged
  })
}
