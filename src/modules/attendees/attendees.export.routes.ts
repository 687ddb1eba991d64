/**
 * CSV exports of attendees (docs/exports.md): an event's attendees as its attendee list shows them, and the attendees
 * of every live occurrence of its series. The access checks run in one transaction before the first byte (404, 403 as
 * problem answers); the rows are then read in chunks of CSV_CHUNK_ROWS by attendee id, each chunk in a transaction of
 * its own, as fast as the client takes them (src/platform/http/csv.ts).
 */
import { Type } from '@sinclair/typebox'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { CSV_CHUNK_ROWS, csvBody, CsvQuery, sendCsv, type CsvColumn } from '../../platform/http/csv.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { StringEnum } from '../../platform/http/schema.ts'
import { requirePolicy } from '../policy/index.ts'
import { EventParams, readEvent, readEventWith, rootEventId } from '../events/index.ts'
import { attendeeChunk, readableOccurrences, type AttendeeExportRow } from './attendees.export.repository.ts'
import { ATTENDEE_STATUSES } from './attendees.table.ts'
import { answerCell } from './attendees.forms.ts'
import { allVersions, type FormOwner } from './attendees.forms.repository.ts'

const operation = operationsTagged('Event attendees')

/** The columns of an exported attendee, in order. */
export const ATTENDEE_CSV_COLUMNS: ReadonlyArray<CsvColumn<AttendeeExportRow>> = [
  { header: 'event_id', cell: r => r.event_id },
  { header: 'series_id', cell: r => r.series_id },
  { header: 'contact_id', cell: r => r.contact_id },
  { header: 'first_name', cell: r => r.first_name },
  { header: 'last_name', cell: r => r.last_name },
  { header: 'email', cell: r => r.email },
  { header: 'company', cell: r => r.company },
  { header: 'status', cell: r => r.status },
  { header: 'waitlist_position', cell: r => r.waitlist_position },
  { header: 'notes', cell: r => r.notes },
  { header: 'invited_at', cell: r => r.invited_at },
  { header: 'responded_at', cell: r => r.responded_at },
  { header: 'approved_at', cell: r => r.approved_at },
  { header: 'checked_in_at', cell: r => r.checked_in_at },
  { header: 'checked_in_by', cell: r => r.checked_in_by },
  { header: 'check_in_method', cell: r => r.check_in_method },
  { header: 'checked_out_at', cell: r => r.checked_out_at },
  { header: 'source', cell: r => r.source },
  { header: 'invitation_sent_at', cell: r => r.invitation_sent_at },
  { header: 'guest_responded_at', cell: r => r.guest_responded_at }
]

/** An attendee of the series export: the occurrence it is exported for (its place in the export's order, id, start). */
type OccurrenceAttendee = AttendeeExportRow & {
  occurrence: number
  occurrence_event_id: number
  occurrence_start: Date | null
}

const SERIES_CSV_COLUMNS: ReadonlyArray<CsvColumn<OccurrenceAttendee>> = [
  { header: 'occurrence_event_id', cell: r => r.occurrence_event_id },
  { header: 'occurrence_start', cell: r => r.occurrence_start },
  ...ATTENDEE_CSV_COLUMNS
]

/**
 * One column `answer:<id>` per question the forms of `owners` ever asked (the newest version's order first, then
 * questions removed since, whose answers are kept): docs/guests.md, "Questions".
 */
async function answerColumns (
  trx: Tx,
  tenantId: string,
  owners: readonly FormOwner[]
): Promise<Array<CsvColumn<AttendeeExportRow>>> {
  const ids: string[] = []
  for (const v of await allVersions(trx, tenantId, owners)) {
    for (const q of v.questions) if (!ids.includes(q.id)) ids.push(q.id)
  }
  return ids.map(id => ({ header: `answer:${id}`, cell: r => answerCell(r.answers?.[id]) }))
}

const HEADER = ATTENDEE_CSV_COLUMNS.map(c => c.header).join(',')
const ATTENDEES_EXAMPLE =
  `${HEADER}\r\n12,,3f0c8a4e-2b6f-4f8e-9d61-0d4d8a9e7b21,Ann,Lee,ann@example.org,"Acme, Inc.",confirmed,,` +
  '\'=not a formula,2026-11-02T09:00:00.000Z,2026-11-03T10:15:00.000Z,,,,,,registration,,' +
  '2026-11-03T10:15:00.000Z\r\n'
const SERIES_EXAMPLE = `occurrence_event_id,occurrence_start,${HEADER}\r\n` +
  '12,2026-11-20T18:00:00.000Z,,7,3f0c8a4e-2b6f-4f8e-9d61-0d4d8a9e7b21,,,,,invited,,,2026-11-02T09:00:00.000Z,,,,,,' +
  'organiser,2026-11-02T09:05:00.000Z,\r\n'

const ExportAttendeesQuery = Type.Object({
  ...CsvQuery.properties,
  status: Type.Optional(StringEnum(ATTENDEE_STATUSES, { description: 'Only attendees in this status' }))
})

export async function exportRoutes (app: App, { db }: AppContext): Promise<void> {
  app.get('/api/v1/events/:id/attendees/export', operation('export-event-attendees',
    'The attendees as CSV, oldest first (event permission attendees:read)', {
      description: 'The attendees of the event as a CSV file, oldest first. For spreadsheets and mail merges.',
      params: EventParams,
      querystring: ExportAttendeesQuery,
      produces: ['text/csv'],
      response: {
        200: csvBody(
          'RFC 4180 CSV (CRLF, header row): the event\'s attendees and those of its series, oldest first. Contact ' +
          'fields are empty for contacts the caller may not see; text beginning with = + - @ tab or CR is prefixed ' +
          'with \'. A failure after the first byte cuts the transfer short (docs/exports.md)',
          ATTENDEES_EXAMPLE
        )
      }
    }, requirePolicy('attendee', 'read')), async (request, reply) => {
    const { auth, query } = request
    const { event, answers } = await withTenant(db, auth, async trx => {
      const event = await readEventWith(trx, auth, request.params.id, 'attendees:read')
      const series = event.series_id !== null ? [{ seriesId: event.series_id }] : []
      const owners = [{ eventId: rootEventId(event) }, ...series]
      return { event, answers: await answerColumns(trx, auth.tenantId, owners) }
    })
    const ref = { id: rootEventId(event), seriesId: event.series_id }
    return await sendCsv(
      reply,
      `event-${ref.id}-attendees.csv`,
      [...ATTENDEE_CSV_COLUMNS, ...answers],
      async (afterId: number | undefined) => await withTenant(db, auth, trx =>
        attendeeChunk(trx, auth, ref, { afterId, limit: CSV_CHUNK_ROWS, status: query.status })
      ),
      row => row.id,
      { bom: query.bom }
    )
  })

  app.get('/api/v1/events/:id/series/attendees/export', operation('export-event-series-attendees',
    'The attendees of every occurrence of the event\'s series as CSV (those the caller holds attendees:read on)', {
      description: 'The attendees of every occurrence of the event\'s series as one CSV file, as far as the caller ' +
        'may read each.',
      params: EventParams,
      querystring: CsvQuery,
      produces: ['text/csv'],
      response: {
        200: csvBody(
          'RFC 4180 CSV (CRLF, header row): for each live occurrence of the series the caller sees and holds ' +
          'attendees:read on, by start, its attendees (its own and the series-wide ones) by id, each line naming ' +
          'the occurrence. Contact fields and formulas as in export-event-attendees',
          SERIES_EXAMPLE
        )
      }
    }, requirePolicy('attendee', 'read')), async (request, reply) => {
    const { auth } = request
    const found = await withTenant(db, auth, async trx => {
      const event = await readEvent(trx, auth, request.params.id)
      if (event.series_id === null) throw error404NotFound('the event belongs to no series')
      const readable = await readableOccurrences(trx, auth, event.series_id)
      if (readable.length === 0) {
        throw error403Forbidden('missing event permission attendees:read on every occurrence of the series')
      }
      return {
        list: readable.map(o => ({ id: o.id, seriesId: event.series_id, start: o.start_dt })),
        answers: await answerColumns(trx, auth.tenantId, [{ seriesId: event.series_id }])
      }
    })
    const occurrences = found.list
    const seriesId = occurrences[0]?.seriesId ?? 0
    // the key: the occurrence (its place in `occurrences`) and the last attendee id read of it
    const read = async (after: { occurrence: number, id: number } | undefined) =>
      await withTenant(db, auth, async trx => {
        const rows: OccurrenceAttendee[] = []
        let index = after?.occurrence ?? 0
        let afterId = after?.id
        // the chunk is filled from as many occurrences as it takes (one statement each), never beyond its size
        for (let o = occurrences[index]; o !== undefined && rows.length < CSV_CHUNK_ROWS; o = occurrences[index]) {
          const limit = CSV_CHUNK_ROWS - rows.length
          const found = await attendeeChunk(trx, auth, { id: o.id, seriesId }, { afterId, limit })
          for (const r of found) {
            rows.push({ ...r, occurrence: index, occurrence_event_id: o.id, occurrence_start: o.start })
          }
          if (found.length === limit) break
          index++
          afterId = undefined
        }
        return rows
      })
    const columns: ReadonlyArray<CsvColumn<OccurrenceAttendee>> = [...SERIES_CSV_COLUMNS, ...found.answers]
    return await sendCsv(reply, `event-${request.params.id}-series-attendees.csv`, columns, read,
      row => ({ occurrence: row.occurrence, id: row.id }), { bom: request.query.bom })
  })
}
