/**
 * Data-subject requests (GDPR articles 15 and 17; docs/privacy.md): the export of what the service holds about a
 * contact or a user of the tenant (JSON, or a ZIP file holding it), and the erasure of a contact. Owns the
 * `erasures` table (migration 0046); reads and changes the rows of the modules that hold a person's data.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { defineModule } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { ifMatchOf } from '../../platform/http/conditional.ts'
import { idempotentWrite } from '../../platform/http/idempotency.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import { eraseContact } from './privacy.erase.ts'
import { contactPersonalData, userPersonalData, type PersonalData } from './privacy.export.ts'
import {
  ContactParams, ErasureReport, ExportQuery, PersonalData as PersonalDataBody, UserParams
} from './privacy.schemas.ts'
import { zipStream } from './privacy.zip.ts'

const operation = operationsTagged('Contacts')
const userOperation = operationsTagged('Identity')
/** an export reads every place that holds rows about a person; an erasure rewrites them */
const EXPORT_COST = 5
const ERASE_COST = 5

const wantsZip = (request: FastifyRequest, format: string | undefined): boolean =>
  format === 'zip' || (format === undefined && /\bapplication\/zip\b/i.test(request.headers.accept ?? ''))

/** Sends an export: JSON, or a ZIP file holding it as `personal-data.json`; never kept by caches on the way. */
async function sendExport (reply: FastifyReply, data: PersonalData, zip: boolean, name: string) {
  void reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff')
  if (!zip) return data
  const json = Buffer.from(JSON.stringify(data, null, 2), 'utf8')
  return await reply
    .header('content-type', 'application/zip')
    .header('content-disposition', `attachment; filename="${name.replace(/[^\w.-]/g, '_')}.zip"`)
    .send(zipStream([{ name: 'personal-data.json', data: json }]))
}

export const privacyModule = defineModule(async (app, { db }) => {
  app.get('/api/v1/contacts/:id/personal-data', operation('export-contact-personal-data',
    'Everything the service holds about a contact, as JSON or a ZIP file (GDPR article 15; costs 5 rate-limit ' +
    'tokens)', {
      description: 'Everything the service holds about a contact, as JSON or a ZIP file, for an access request (GDPR ' +
        'article 15).',
      params: ContactParams,
      querystring: ExportQuery,
      produces: ['application/json', 'application/zip'],
      response: { 200: PersonalDataBody }
    }, requirePolicy('contact', 'export'), { config: { cost: EXPORT_COST } }), async (request, reply) => {
    const data = await withTenant(db, request.auth, trx => contactPersonalData(trx, request.auth, request.params.id))
    return await sendExport(reply, data, wantsZip(request, request.query.format),
      `contact-${request.params.id}-personal-data`)
  })

  app.get('/api/v1/users/:id/personal-data', userOperation('export-user-personal-data',
    'Everything the service holds about a user of the tenant, as JSON or a ZIP file (GDPR article 15; the user ' +
    'themself or a tenant admin; costs 5 rate-limit tokens)', {
      description: 'Everything the service holds about a user of the tenant, as JSON or a ZIP file (GDPR article ' +
        '15). The user themself or a tenant administrator may ask.',
      params: UserParams,
      querystring: ExportQuery,
      produces: ['application/json', 'application/zip'],
      response: { 200: PersonalDataBody }
    }, requirePolicy('user', 'export'), { config: { cost: EXPORT_COST } }), async (request, reply) => {
    const data = await withTenant(db, request.auth, trx => userPersonalData(trx, request.auth, request.params.id))
    return await sendExport(reply, data, wantsZip(request, request.query.format), 'user-personal-data')
  })

  app.post('/api/v1/contacts/:id/erase', operation('erase-contact',
    'Erase a contact everywhere it is held, its attendances kept anonymous; answers what each place held (GDPR ' +
    'article 17; a second erase answers the same report; costs 5 rate-limit tokens)', {
      description: 'Erases a contact wherever it is held, keeping its attendances anonymous, and answers what each ' +
        'place held (GDPR article 17). A second erase answers the same report.',
      params: ContactParams,
      response: { 200: ErasureReport }
    }, requirePolicy('contact', 'erase'), { config: { cost: ERASE_COST, idempotency: 'transaction' } }),
  async request => await idempotentWrite(db, request, trx =>
    eraseContact(trx, request.auth, request.params.id, ifMatchOf(request))))
})
