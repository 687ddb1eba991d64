/**
 * `GET /api/v1/contacts/duplicates`: groups of likely duplicate contacts among those the caller sees (docs/contacts.md,
 * "Duplicates"). A static path: Fastify prefers it to `/api/v1/contacts/:id` whatever the order of registration.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import { listDuplicates } from './contacts.duplicates.repository.ts'
import { DuplicatesOutputBody, DuplicatesQuery } from './contacts.duplicates.schemas.ts'

const operation = operationsTagged('Contacts')

/** The stored name key joins name and company with U+001F (migration 0030); the answer shows a readable form. */
const shownKey = (key: string): string => key.replaceAll('\u001f', ' | ')

export async function duplicatesRoutes (app: App, { db }: Pick<AppContext, 'db'>): Promise<void> {
  app.get('/api/v1/contacts/duplicates', operation(
    'list-contact-duplicates',
    'Groups of likely duplicate contacts: the same e-mail, E.164 number, or name and company',
    {
      description: 'Groups of contacts that are likely the same person, with the reason each group was formed. ' +
        'Review a group, then merge it with `merge-contacts`.',
      querystring: DuplicatesQuery,
      response: { 200: DuplicatesOutputBody }
    },
    requirePolicy('contact', 'read')
  ), async request => {
    const { reason, limit, cursor } = request.query
    const page = await withTenant(db, request.auth, trx => listDuplicates(trx, request.auth, { reason, limit, cursor }))
    return { ...page, items: page.items.map(g => ({ ...g, key: shownKey(g.key) })) }
  })
}
