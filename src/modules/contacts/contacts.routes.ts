/**
 * Contacts: create, list, search, batch upsert, and read/replace/patch/favorite/delete one.
 * Owns the `contacts` table. Attendance of contacts at events belongs to the events modules.
 */
import { defineModule } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { checkIfMatch, ifMatchOf, setEtag } from '../../platform/http/conditional.ts'
import { error403Forbidden, error404NotFound } from '../../platform/http/errors.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { countingOf } from '../../platform/db/kept-counts.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import * as repo from './contacts.repository.ts'
import {
  Contact, ContactParams, CreateContactBody, FavoriteBody, ListContactsQuery, PagedBodyContact, PatchContactBody,
  ReplaceContactBody, SearchContactsQuery, SearchOutputBody, UpsertContactsBody, UpsertOutputBody
} from './contacts.schemas.ts'
import { upsertContacts } from './contacts.service.ts'
import { replacementValues, toValues } from './contacts.values.ts'
import { requirePolicy } from '../policy/policy.ts'
import { contactEvent } from './contacts.events.ts'

const tags = ['Contacts']
const UPSERT_COST = 5

/** Locks a contact the caller may change: 404 when invisible, 403 when visible but not theirs. */
async function lockManageable (trx: Tx, auth: AuthContext, id: string, ifMatch: string | undefined) {
  const row = await repo.lockVisible(trx, auth, id)
  if (row === undefined) throw error404NotFound('contact not found')
  if (!repo.canManage(row, auth)) throw error403Forbidden('only the owner or an admin may change this contact')
  checkIfMatch(ifMatch, row.revision)
  return row
}

export const contactsModule = defineModule(async (app, { db }) => {
  app.post(
    '/api/v1/contacts',
    {
      schema: {
        operationId: 'create-contact',
        summary: 'Create a contact',
        tags,
        body: CreateContactBody,
        response: { 201: Contact }
      },
      onRequest: requirePolicy('contact', 'create')
    },
    async (request, reply) => {
      const auth = request.auth
      const row = await withTenant(db, auth, async trx => {
        const created = await repo.insertContact(trx, auth, toValues(request.body))
        await emit(trx, contactEvent(auth, created.id, 'contact.created', { contact_id: created.id, email: created.email, source: 'api' }))
        return created
      })
      setEtag(reply, row.revision)
      return await reply.code(201).header('location', `/api/v1/contacts/${row.id}`).send(row)
    }
  )

  app.get(
    '/api/v1/contacts',
    {
      schema: {
        operationId: 'list-contacts',
        summary: 'List contacts',
        tags,
        querystring: ListContactsQuery,
        response: { 200: PagedBodyContact }
      },
      onRequest: requirePolicy('contact', 'read')
    },
    async request => {
      const q = request.query
      // before the transaction: PGlite has one connection, which the transaction holds
      const counting = await countingOf(db, repo.CONTACT_COUNTS_TRIGGER)
      const found = await withTenant(db, request.auth, trx =>
        repo.listVisible(trx, request.auth, {
          counting,
          page: q.page,
          size: q.size,
          cursor: q.cursor,
          search: q.search?.trim(),
          sortBy: q.sort_by ?? 'created_at',
          sortDir: q.sort_dir ?? 'desc',
          favorite: q.is_favorite === 'true' ? true : q.is_favorite === 'false' ? false : undefined
        })
      )
      return { ...found, size: q.size }
    }
  )

  app.get(
    '/api/v1/contacts/search',
    {
      schema: {
        operationId: 'search-contacts',
        summary: 'Search contacts by name, e-mail and company',
        tags,
        querystring: SearchContactsQuery,
        response: { 200: SearchOutputBody }
      },
      onRequest: requirePolicy('contact', 'read')
    },
    async request => {
      const { query, limit, cursor } = request.query
      const found = await withTenant(db, request.auth, trx =>
        repo.searchVisible(trx, request.auth, query.trim() || query, limit, cursor)
      )
      return { ...found, query }
    }
  )

  app.post('/api/v1/contacts/upsert', {
    schema: {
      operationId: 'upsert-contacts',
      summary: 'Create or update a batch of contacts matched by e-mail (costs 5 rate-limit tokens)',
      tags,
      body: UpsertContactsBody,
      response: { 200: UpsertOutputBody }
    },
    config: { cost: UPSERT_COST },
    onRequest: requirePolicy('contact', 'write')
  }, async (request) => await withTenant(db, request.auth, trx => upsertContacts(trx, request.auth, request.body)))

  app.get(
    '/api/v1/contacts/:id',
    {
      schema: {
        operationId: 'get-contact',
        summary: 'Get a contact',
        tags,
        params: ContactParams,
        response: { 200: Contact }
      },
      onRequest: requirePolicy('contact', 'read')
    },
    async (request, reply) => {
      const row = await withTenant(db, request.auth, trx => repo.findVisible(trx, request.auth, request.params.id))
      if (row === undefined) throw error404NotFound('contact not found')
      setEtag(reply, row.revision)
      return row
    }
  )

  app.put(
    '/api/v1/contacts/:id',
    {
      schema: {
        operationId: 'replace-contact',
        summary: 'Replace the writable fields of a contact',
        tags,
        params: ContactParams,
        body: ReplaceContactBody,
        response: { 200: Contact }
      },
      onRequest: requirePolicy('contact', 'write')
    },
    async (request, reply) => {
      const auth = request.auth
      const row = await withTenant(db, auth, async trx => {
        await lockManageable(trx, auth, request.params.id, ifMatchOf(request))
        const values = replacementValues(request.body)
        const updated = await repo.updateContact(trx, auth.tenantId, request.params.id, values)
        await emit(trx, contactEvent(auth, updated.id, 'contact.updated', { contact_id: updated.id, fields: Object.keys(values) }))
        return updated
      })
      setEtag(reply, row.revision)
      return row
    }
  )

  app.patch(
    '/api/v1/contacts/:id',
    {
      schema: {
        operationId: 'patch-contact',
        summary: 'Merge-patch a contact (RFC 7396)',
        tags,
        params: ContactParams,
        body: PatchContactBody,
        response: { 200: Contact }
      },
      onRequest: requirePolicy('contact', 'write')
    },
    async (request, reply) => {
      const auth = request.auth
      const row = await withTenant(db, auth, async trx => {
        const current = await lockManageable(trx, auth, request.params.id, ifMatchOf(request))
        const values = toValues(request.body)
        if (Object.keys(values).length === 0) return current
        const updated = await repo.updateContact(trx, auth.tenantId, request.params.id, values)
        await emit(trx, contactEvent(auth, updated.id, 'contact.updated', { contact_id: updated.id, fields: Object.keys(values) }))
        return updated
      })
      setEtag(reply, row.revision)
      return row
    }
  )

  app.patch(
    '/api/v1/contacts/:id/favorite',
    {
      schema: {
        operationId: 'set-contact-favorite',
        summary: 'Set or clear the favorite flag',
        tags,
        params: ContactParams,
        body: FavoriteBody,
        response: { 200: Contact }
      },
      onRequest: requirePolicy('contact', 'write')
    },
    async (request, reply) => {
      const auth = request.auth
      const row = await withTenant(db, auth, async trx => {
        await lockManageable(trx, auth, request.params.id, ifMatchOf(request))
        return await repo.updateContact(trx, auth.tenantId, request.params.id, {
          is_favorite: request.body.is_favorite
        })
      })
      setEtag(reply, row.revision)
      return row
    }
  )

  app.delete(
    '/api/v1/contacts/:id',
    {
      schema: {
        operationId: 'delete-contact',
        summary: 'Delete a contact',
        tags,
        params: ContactParams,
        response: { 204: NoContent }
      },
      onRequest: requirePolicy('contact', 'write')
    },
    async (request, reply) => {
      const auth = request.auth
      await withTenant(db, auth, async trx => {
        const row = await lockManageable(trx, auth, request.params.id, ifMatchOf(request))
        await repo.deleteContact(trx, auth.tenantId, row.id)
        await emit(trx, contactEvent(auth, row.id, 'contact.deleted', { contact_id: row.id }))
      })
      return await reply.code(204).send(null)
    }
  )
})
