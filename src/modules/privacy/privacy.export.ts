/**
 * Data-subject exports (GDPR article 15; docs/privacy.md, "Export"): everything the service holds about a contact, or
 * about a user of the tenant, as one JSON document, each section bounded (`SECTION_LIMIT` rows, `truncated` when it
 * held more), read in one transaction of the caller's tenant.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import { auditEntriesAbout } from '../audit/index.ts'
import { canManage, findVisible, listTimeline } from '../contacts/index.ts'
import { mayLearnOf } from '../disclosure/index.ts'
import { needlesOf, notificationOf, spaceActivityOf } from './privacy.erase.repository.ts'
import { NEEDLE_FIELDS } from './privacy.erase.ts'
import * as repo from './privacy.export.repository.ts'

/** The most rows a section lists (the audit entries: the audit module's own bound, 10 000). */
export const SECTION_LIMIT = 1000
/** Timeline items read per page, up to SECTION_LIMIT. */
const TIMELINE_PAGE = 100

export interface Section { items: unknown[], truncated: boolean }

const sectionOf = (rows: readonly unknown[], limit = SECTION_LIMIT): Section =>
  ({ items: rows.slice(0, limit), truncated: rows.length > limit })

/** Stored files of the subject: the service keeps none about a contact or a user (covers are events' images). */
const NO_STORED_OBJECTS: Section = { items: [], truncated: false }

export interface PersonalData {
  subject: { type: 'contact' | 'user', id: string }
  limits: { per_section: number }
  profile: Record<string, unknown> | null
  sections: Record<string, Section>
}

/** The entries of the audit log about the subject (at most the audit module's bound). */
async function auditSection (trx: Tx, tenantId: string, subject: { contactId: string } | { userId: string }) {
  const entries = await auditEntriesAbout(trx, tenantId, subject)
  return { items: entries, truncated: false }
}

/**
 * What the service holds about a contact the caller may change (as for a DELETE or an erasure: 404 when they cannot
 * see it, 403 when they see it without owning it).
 */
export async function contactPersonalData (trx: Tx, auth: AuthContext, id: string): Promise<PersonalData> {
  const tenantId = auth.tenantId
  const visible = await findVisible(trx, auth, id)
  if (visible === undefined) throw error404NotFound('contact not found')
  if (!canManage(visible, auth)) throw error403Forbidden('only the owner or an admin may export this contact')
  const contact = await repo.contactRow(trx, tenantId, id) ?? {}
  const merged = await repo.redirectsTo(trx, tenantId, id)
  const ids = [id, ...merged.map(m => String(m.from_id))]
  const needles = needlesOf(ids, NEEDLE_FIELDS.map(f => (contact[f] as string | null | undefined) ?? null))

  const attendances = await repo.attendances(trx, tenantId, id, SECTION_LIMIT)
  const attendeeIds = attendances.map(a => Number(a.id))
  const answered = attendances.filter(a => a.answers !== null)
  const forms = await repo.formVersions(trx, tenantId, [...new Set(answered.map(a => Number(a.answers_form_id)))])
  const answers = answered.map(a => ({
    attendee_id: a.id,
    event_id: a.event_id,
    series_id: a.series_id,
    answers: a.answers,
    answers_updated_at: a.answers_updated_at,
    form: forms.find(f => String(f.id) === String(a.answers_form_id)) ?? null
  }))

  const executions = await repo.rowsNaming(trx, tenantId, 'automation_executions', needles, SECTION_LIMIT)
  return {
    subject: { type: 'contact', id },
    limits: { per_section: SECTION_LIMIT },
    profile: contact,
    sections: {
      attendances: sectionOf(attendances),
      registration_answers: sectionOf(answers),
      timeline: await timeline(trx, auth, id, visible.linked_user_id),
      space_links: sectionOf(await repo.spaceLinks(trx, tenantId, id, SECTION_LIMIT)),
      merged_contacts: sectionOf(merged),
      notifications: sectionOf(await repo.rowsNaming(trx, tenantId, 'notification_outbox', needles, SECTION_LIMIT,
        notificationOf(needles, attendeeIds, executions.map(e => String(e.id))))),
      webhook_deliveries: sectionOf(await repo.rowsNaming(trx, tenantId, 'webhook_deliveries', needles, SECTION_LIMIT)),
      automation_executions: sectionOf(executions),
      outbox_events: sectionOf(await repo.rowsNaming(trx, tenantId, 'outbox', needles, SECTION_LIMIT)),
      event_activity: sectionOf(await repo.rowsNaming(trx, tenantId, 'event_activity', needles, SECTION_LIMIT)),
      space_activity: sectionOf(await repo.rowsNaming(trx, tenantId, 'space_activity', needles, SECTION_LIMIT,
        spaceActivityOf(needles))),
      sync_records: sectionOf(await repo.syncRecords(trx, tenantId, ids, attendeeIds, SECTION_LIMIT)),
      stored_objects: NO_STORED_OBJECTS,
      audit_entries: await auditSection(trx, tenantId, { contactId: id })
    }
  }
}

/** The contact's timeline as its GET shows it to the caller (the outbound rule applied to automation runs). */
async function timeline (trx: Tx, auth: AuthContext, id: string, linkedUserId: string | null): Promise<Section> {
  const items: unknown[] = []
  const told = new Map<string, boolean>()
  let cursor: string | undefined
  do {
    const page = await listTimeline(trx, auth, { id, linkedUserId }, { limit: TIMELINE_PAGE, cursor })
    for (const { item, trigger } of page.items) {
      const topic = trigger?.topic
      if (typeof topic === 'string' && !(await mayLearnOf(trx, auth, topic, trigger ?? {}, told))) continue
      items.push(item)
    }
    cursor = page.next_cursor ?? undefined
  } while (cursor !== undefined && items.length <= SECTION_LIMIT)
  return sectionOf(items)
}

/**
 * What the service holds about a user of the tenant (a profile from the identity provider, or the claims of a token
 * they used): to the user themself and to tenant admins; 404 to others, as for a user who is not of the tenant.
 */
export async function userPersonalData (trx: Tx, auth: AuthContext, userId: string): Promise<PersonalData> {
  const tenantId = auth.tenantId
  if (userId !== auth.userId && !auth.permissions.has('tenant:admin')) throw error404NotFound('user not found')
  const { profile, claims } = await repo.userOf(trx, tenantId, userId)
  if (profile === undefined && claims === undefined) throw error404NotFound('user not found')
  const email = (profile?.email as string | null | undefined) ?? (claims?.verified_email as string | null | undefined)
  const rowsOf = async (table: repo.UserTable) =>
    sectionOf(await repo.rowsOfUser(trx, tenantId, table, userId, SECTION_LIMIT))
  return {
    subject: { type: 'user', id: userId },
    limits: { per_section: SECTION_LIMIT },
    profile: profile ?? null,
    sections: {
      claims: sectionOf(claims === undefined ? [] : [claims]),
      space_memberships: await rowsOf('space_members'),
      space_manager_grants: await rowsOf('space_managers'),
      event_manager_grants: await rowsOf('event_managers'),
      feed_tokens: await rowsOf('feed_tokens'),
      created_events: await rowsOf('events'),
      created_series: await rowsOf('event_series'),
      created_spaces: await rowsOf('spaces'),
      created_rules: await rowsOf('automation_rules'),
      created_webhooks: await rowsOf('webhook_subscriptions'),
      owned_contacts: await rowsOf('contacts'),
      notifications: sectionOf(await repo.notificationsToUser(trx, tenantId, userId, email ?? null, SECTION_LIMIT)),
      stored_objects: NO_STORED_OBJECTS,
      audit_entries: await auditSection(trx, tenantId, { userId })
    }
  }
}
