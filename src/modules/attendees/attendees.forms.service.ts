/**
 * The registration form in force for an event, and a registration's answers checked against it (attendees.forms.ts;
 * docs/guests.md, "Questions").
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import type { Locale } from '../../platform/i18n/i18n.ts'
import type { EventRow } from '../events/index.ts'
import { validateAnswers, type StoredAnswer } from './attendees.forms.ts'
import * as formRepo from './attendees.forms.repository.ts'

/** The form in force for an event: its own latest version, else its series' (none: no questions). */
export async function formOf (
  trx: Tx,
  event: Pick<EventRow, 'tenant_id' | 'id' | 'series_id' | 'published_id'>
): Promise<formRepo.FormVersion | undefined> {
  const own = await formRepo.latestForm(trx, event.tenant_id, { eventId: event.published_id ?? event.id })
  if (own !== undefined || event.series_id === null) return own
  return await formRepo.latestForm(trx, event.tenant_id, { seriesId: event.series_id })
}

/** The answers a registration sends, validated against the form in force (none sent and no form: none). */
export async function answersFor (
  trx: Tx,
  event: Pick<EventRow, 'tenant_id' | 'id' | 'series_id' | 'published_id'>,
  sent: Readonly<Record<string, unknown>> | undefined,
  locale: Locale
): Promise<{ formId: number, values: Record<string, StoredAnswer> } | undefined> {
  const form = await formOf(trx, event)
  if (form === undefined) {
    if (sent !== undefined && Object.keys(sent).length > 0) validateAnswers([], sent, locale)
    return undefined
  }
  return { formId: form.id, values: validateAnswers(form.questions, sent ?? {}, locale) }
}

/**
 * Copies the questions in force for `source` (its own form, else its series') as the first version of `clone`'s own
 * form (`POST /events/{id}/clone`: `CloneParts.questions`, given to the events module by src/app.ts); whether there
 * were any. The question ids stay, so the clone's answers read like the source's.
 */
export async function copyQuestions (
  trx: Tx,
  auth: AuthContext,
  source: Pick<EventRow, 'tenant_id' | 'id' | 'series_id' | 'published_id'>,
  clone: Pick<EventRow, 'id'>
): Promise<boolean> {
  const form = await formOf(trx, source)
  if (form === undefined || form.questions.length === 0) return false
  await formRepo.insertFormVersion(trx, auth.tenantId, { eventId: clone.id }, form.questions, auth.userId)
  return true
}
