/**
 * `GET /api/v1/contacts/{id}/timeline`: a contact's attendance, its linked user's manager roles and the automation
 * runs that named it, newest first (docs/contacts.md, "Timeline").
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error404NotFound } from '../../platform/http/errors.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import type { ContactsNeeds } from './contacts.needs.ts'
import { findVisible } from './contacts.repository.ts'
import { ContactParams } from './contacts.schemas.ts'
import { listTimeline } from './contacts.timeline.repository.ts'
import { TimelineOutputBody, TimelineQuery } from './contacts.timeline.schemas.ts'

const operation = operationsTagged('Contacts')

/** Registers the timeline route (the contacts module passes its database and the outbound rule, `mayLearnOf`). */
export async function timelineRoutes (
  app: App,
  { db }: Pick<AppContext, 'db'>,
  { mayLearnOf }: Pick<ContactsNeeds, 'mayLearnOf'>
): Promise<void> {
  app.get('/api/v1/contacts/:id/timeline', operation(
    'list-contact-timeline',
    "A contact's events, its linked user's manager roles and the automation runs that named it, newest first",
    {
      description: 'Everything that happened around one contact, newest first, as far as the caller may learn of it. ' +
        'Use it for a contact\'s history view.',
      params: ContactParams,
      querystring: TimelineQuery,
      response: { 200: TimelineOutputBody }
    },
    requirePolicy('contact', 'read')
  ), async request => {
    const { kind, limit, cursor } = request.query
    return await withTenant(db, request.auth, async trx => {
      // 404 for a contact the caller cannot see, as GET /contacts/{id}, before anything of it is read
      const contact = await findVisible(trx, request.auth, request.params.id)
      if (contact === undefined) throw error404NotFound('contact not found')
      const page = await listTimeline(trx, request.auth, { id: contact.id, linkedUserId: contact.linked_user_id }, {
        kind, limit, cursor
      })
      // a run is shown only where the caller may be told of what triggered it (the outbound rule: an attendee topic
      // needs attendees:read on its event, as the attendance items do); a page may then hold fewer items
      const told = new Map<string, boolean>()
      const items = []
      for (const { item, trigger } of page.items) {
        const topic = trigger?.topic
        if (typeof topic === 'string' && !(await mayLearnOf(trx, request.auth, topic, trigger ?? {}, told))) continue
        items.push(item)
      }
      return { items, next_cursor: page.next_cursor }
    })
  })
}
