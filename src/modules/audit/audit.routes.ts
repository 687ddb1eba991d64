/**
 * The tenant audit log (docs/audit.md): tenant admins read it with filters and keyset paging, export it as CSV or
 * JSON Lines (streamed), and verify its hash chain. Each read first seals what has committed (audit-chain.ts), so a
 * change answered before the read is in it.
 */
import { SEAL_BEFORE_READ, sealAudit, VERIFY_PER_REQUEST, verifyAudit } from '../../platform/audit-chain.ts'
import { defineModule } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { csvBody, CSV_CHUNK_ROWS, sendCsv, type CsvColumn } from '../../platform/http/csv.ts'
import { ApiError } from '../../platform/http/errors.ts'
import { sendJsonLines } from '../../platform/http/json-lines.ts'
import { answerPage, operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import * as repo from './audit.repository.ts'
import {
  AuditExportQuery, AuditListQuery, AuditVerification, AuditVerifyQuery, PagedBodyAuditEntry
} from './audit.schemas.ts'

const operation = operationsTagged('Audit')

type EntryRow = Awaited<ReturnType<typeof repo.entryChunk>>[number]

const CSV_COLUMNS: Array<CsvColumn<EntryRow>> = [
  { header: 'seq', cell: r => r.seq },
  { header: 'at', cell: r => r.at },
  { header: 'actor_type', cell: r => r.actor_type },
  { header: 'actor_id', cell: r => r.actor_id },
  { header: 'via', cell: r => r.via },
  { header: 'request_id', cell: r => r.request_id },
  { header: 'address', cell: r => r.address },
  { header: 'action', cell: r => r.action },
  { header: 'resource_type', cell: r => r.resource_type },
  { header: 'resource_id', cell: r => r.resource_id },
  { header: 'contact_id', cell: r => r.contact_id },
  { header: 'fields', cell: r => JSON.stringify(r.fields) },
  { header: 'prev_hash', cell: r => r.prev_hash },
  { header: 'hash', cell: r => r.hash }
]

const CSV_EXAMPLE = `${CSV_COLUMNS.map(c => c.header).join(',')}\r\n` +
  '2,2026-11-30T09:00:00.000Z,user,u1,,0b6f…,203.0.113.7,contact.updated,contact,41,41,' +
  '"{""fields"":[""phone""]}",9f2c…,77ab…\r\n'

export const auditModule = defineModule(async (app, ctx) => {
  const { db } = ctx

  app.get('/api/v1/audit-log', operation('list-audit-log',
    'The tenant\'s audit log, newest first, by actor, action, resource, contact and time (tenant admins)', {
      description: 'The tenant\'s audit log, newest first, by actor, action, resource, contact and time. Tenant ' +
        'administrators only.',
      querystring: AuditListQuery,
      response: { 200: PagedBodyAuditEntry }
    }, requirePolicy('audit', 'read')), async request => {
    await sealAudit(db, request.auth.tenantId, SEAL_BEFORE_READ)
    return await answerPage(db, request, (trx, q, auth) => repo.listEntries(trx, auth.tenantId, q))
  })

  app.get('/api/v1/audit-log/export', operation('export-audit-log',
    'The tenant\'s audit log as JSON Lines or CSV, newest first, streamed (tenant admins)', {
      description: 'The tenant\'s audit log streamed as JSON Lines or CSV, newest first, for archives and outside ' +
        'tools.',
      querystring: AuditExportQuery,
      produces: ['application/jsonl', 'text/csv'],
      response: {
        200: csvBody(
          'JSON Lines (one AuditEntry a line, `application/jsonl`) or, with format=csv, RFC 4180 CSV with the ' +
          'fields as one JSON cell. Streamed in chunks; a failure after the first byte cuts the transfer short',
          CSV_EXAMPLE
        )
      }
    }, requirePolicy('audit', 'export')), async (request, reply) => {
    const { auth, query } = request
    const { format, bom, ...filter } = query
    await sealAudit(db, auth.tenantId, SEAL_BEFORE_READ)
    const read = async (before: number | undefined) =>
      await withTenant(db, auth, trx => repo.entryChunk(trx, auth.tenantId, filter, before, CSV_CHUNK_ROWS))
    const keyOf = (row: EntryRow) => row.seq as number
    if (format === 'csv') return await sendCsv(reply, 'audit-log.csv', CSV_COLUMNS, read, keyOf, { bom })
    return await sendJsonLines(reply, 'audit-log.jsonl', read, keyOf)
  })

  app.get('/api/v1/audit-log/verify', operation('verify-audit-log',
    'Verifies the tenant\'s audit chain from its start to its head; 409 names the first entry that does not fit', {
      description: 'Checks the tenant\'s audit hash chain from its start to its head. A 409 names the first entry ' +
        'that does not fit.',
      querystring: AuditVerifyQuery,
      response: { 200: AuditVerification }
    }, requirePolicy('audit', 'verify')), async request => {
    const tenantId = request.auth.tenantId
    await sealAudit(db, tenantId, SEAL_BEFORE_READ)
    const result = await verifyAudit(db, tenantId, { from: request.query.from, max: VERIFY_PER_REQUEST })
    if (result.problem !== undefined) {
      const { seq, kind } = result.problem
      throw new ApiError(409, `the audit chain is broken at position ${seq}: ${PROBLEMS[kind]}`, [{
        location: `audit-log[${seq}]`,
        message: PROBLEMS[kind],
        value: result.problem
      }], {}, 'audit_chain_broken')
    }
    return result
  })
})

const PROBLEMS = {
  hash: 'the entry was changed after it was sealed (its content does not give its hash)',
  link: 'the entry does not follow the one before it (an entry was removed, inserted or moved)',
  gap: 'the position is missing (an entry was removed)',
  head: 'the chain ends before its head (its last entries were removed)'
} as const
