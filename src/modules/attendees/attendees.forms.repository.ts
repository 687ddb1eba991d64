/**
 * The SQL of registration forms and answers (attendees.forms.ts): versions of an event's or a series' form, the form
 * in force for an occurrence, and an attendee's answers.
 */
import { sql } from 'kysely'
import type { Tx } from '../../platform/db/tenant.ts'
import type { Question, StoredAnswer } from './attendees.forms.ts'

/** Whose form: an event (an occurrence or a single event), or a whole series. */
export type FormOwner = { eventId: number } | { seriesId: number }

const ofOwner = (o: FormOwner) => 'eventId' in o
  ? sql<boolean>`event_id = ${o.eventId}`
  : sql<boolean>`series_id = ${o.seriesId}`

export interface FormVersion {
  id: number
  version: number
  questions: Question[]
  owner: 'event' | 'series'
  created_at: Date
}

/** The latest version of an owner's form. */
export async function latestForm (trx: Tx, tenantId: string, owner: FormOwner): Promise<FormVersion | undefined> {
  const row = await trx.selectFrom('registration_forms').select(['id', 'version', 'questions', 'created_at'])
    .where('tenant_id', '=', tenantId).where(ofOwner(owner))
    .orderBy('version', 'desc').limit(1)
    .executeTakeFirst()
  return row === undefined
    ? undefined
    : { ...row, questions: row.questions as Question[], owner: 'eventId' in owner ? 'event' : 'series' }
}

/** Every version of the forms of `owners`, newest first (the questions of an export, a type kept across versions). */
export async function allVersions (trx: Tx, tenantId: string, owners: readonly FormOwner[]) {
  const events = owners.flatMap(o => 'eventId' in o ? [o.eventId] : [])
  const series = owners.flatMap(o => 'seriesId' in o ? [o.seriesId] : [])
  const rows = await trx.selectFrom('registration_forms').select(['id', 'version', 'questions', 'event_id'])
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`(event_id = any(${events}::bigint[]) or series_id = any(${series}::bigint[]))`)
    .orderBy(sql`event_id is null`).orderBy('version', 'desc')
    .execute()
  return rows.map(r => ({ id: r.id, version: r.version, questions: r.questions as Question[] }))
}

/** Stores a new version of an owner's form (the caller holds the event's or series' lock); the version. */
export async function insertFormVersion (
  trx: Tx,
  tenantId: string,
  owner: FormOwner,
  questions: readonly Question[],
  createdBy: string
): Promise<FormVersion> {
  const latest = await latestForm(trx, tenantId, owner)
  const row = await trx.insertInto('registration_forms').values({
    tenant_id: tenantId,
    event_id: 'eventId' in owner ? owner.eventId : null,
    series_id: 'seriesId' in owner ? owner.seriesId : null,
    version: (latest?.version ?? 0) + 1,
    questions: JSON.stringify(questions),
    created_by: createdBy
  }).returning(['id', 'version', 'created_at']).executeTakeFirstOrThrow()
  return { ...row, questions: [...questions], owner: 'eventId' in owner ? 'event' : 'series' }
}

/** Stores an attendee's answers, with the form version they answered. */
export async function writeAnswers (
  trx: Tx,
  tenantId: string,
  attendeeId: number,
  answers: Record<string, StoredAnswer>,
  formId: number
): Promise<void> {
  await trx.updateTable('attendees')
    .set({ answers: JSON.stringify(answers), answers_form_id: formId, answers_updated_at: new Date() })
    .where('tenant_id', '=', tenantId).where('id', '=', attendeeId)
    .execute()
}
