/**
 * Contacts: create, list, search, batch upsert, CSV import, and read/replace/patch/favorite/delete one.
 * Owns the `contacts` table. Attendance of contacts at events belongs to the events modules.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { defineModule } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { checkIfMatch, ifMatchOf } from '../../platform/http/conditional.ts'
import { error403Forbidden, error404NotFound, ErrorModel } from '../../platform/http/errors.ts'
import { answerPage, answerWithEtag, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { searchedPageOf } from '../../platform/http/schema.ts'
import { countingOf } from '../../platform/db/kept-counts.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { emit } from '../../platform/outbox.ts'
import * as repo from './contacts.repository.ts'
import {
  Contact, ContactParams, CreateContactBody, FavoriteBody, IMPORT_MAX_BYTES, ImportContactsBody, ImportContactsQuery,
  ImportOutputBody, ListContactsQuery, PagedBodyContact, PatchContactBody, PhoneRegionQuery, ReplaceContactBody,
  SearchContactsQuery, SearchOutputBody, UpsertContactsBody, UpsertOutputBody
} from './contacts.schemas.ts'
import { createContact, importContacts, upsertContacts } from './contacts.service.ts'
import { checkCharset, decodeCsvBody, parseContactsCsv, tooLarge } from './contacts.import.ts'
import { replacementValues, toValues, trimEmails } from './contacts.values.ts'
import { PHONE_FIELDS, phoneSearch, requestRegion, withPhones, type CountryCode } from './contacts.phones.ts'
import { requirePolicy } from '../policy/index.ts'
import { contactEvent } from './contacts.events.ts'
import { isSyncRead, sealKeys, syncedRead, syncScope } from '../../platform/sync/sync.ts'
import { mergedOrNotFound } from './contacts.merge.ts'
import { mergeRoutes } from './contacts.merge.routes.ts'
import type { ContactsNeeds } from './contacts.needs.ts'
import { duplicatesRoutes } from './contacts.duplicates.routes.ts'
import { timelineRoutes } from './contacts.timeline.routes.ts'

const operation = operationsTagged('Contacts')
const UPSERT_COST = 5
/** heavier than an upsert's 5: one request may write up to 50 000 rows (100 upserts' worth) */
const IMPORT_COST = 20

type LockedContact = Awaited<ReturnType<typeof lockManageable>>

/** Locks a contact the caller may change: 404 when invisible, 403 when visible but not theirs. */
async function lockManageable (trx: Tx, auth: AuthContext, id: string, ifMatch: string | undefined) {
  const row = await repo.lockVisible(trx, auth, id)
  if (row === undefined) throw error404NotFound('contact not found')
  if (!repo.canManage(row, auth)) throw error403Forbidden('only the owner or an admin may change this contact')
  checkIfMatch(ifMatch, row.revision)
  return row
}

/**
 * Stores changed values of a contact, its phone numbers read with `region` (`withPhones`), and writes its
 * `contact.updated` event (`fields`: those of the body).
 */
async function updateValues (
  trx: Tx, auth: AuthContext, current: LockedContact, values: repo.ContactValues, region: CountryCode | undefined
) {
  const updated = await repo.updateContact(trx, auth.tenantId, current.id, withPhones(values, current, region))
  await emit(trx, contactEvent(auth, updated.id, 'contact.updated', {
    contact_id: updated.id, fields: Object.keys(values)
  }))
  return updated
}

/** The contacts module; `needs` are what the modules built on it give it (contacts.needs.ts, wired by src/app.ts). */
export const contactsModule = (needs: ContactsNeeds) => defineModule(async (app, { db, config }) => {
  /**
   * A change of a contact (PUT, PATCH, favorite at `/api/v1/contacts/{id}<path>`): the contact locked for it (404 when
   * invisible, 403 when not the caller's, 412 when If-Match names another revision), then `change`; answered with the
   * new revision's ETag.
   */
  function contactChangeRoute<B extends TSchema> (
    method: 'put' | 'patch',
    path: string,
    operationId: string,
    summary: string,
    description: string,
    body: B,
    change: (
      trx: Tx, auth: AuthContext, current: LockedContact, input: Static<B>, region: CountryCode | undefined
    ) => Promise<LockedContact>
  ): void {
    // a body that can carry a phone number takes `phone_region`, the region its numbers are read with
    const phones = PHONE_FIELDS.some(f => Object.hasOwn((body as { properties?: object }).properties ?? {}, f))
    app.route({
      method,
      url: `/api/v1/contacts/:id${path}`,
      ...operation(operationId, summary, {
        description,
        params: ContactParams,
        ...(phones ? { querystring: PhoneRegionQuery } : {}),
        body,
        response: { 200: Contact }
      }, requirePolicy('contact', 'write')),
      preValidation: trimEmails,
      handler: async (request, reply) => {
        const query = request.query as { phone_region?: string }
        const region = requestRegion(query.phone_region, config.phoneDefaultRegion)
        return await answerWithEtag(db, request, reply, async (trx, auth) => await change(
          trx, auth, await lockManageable(trx, auth, request.params.id, ifMatchOf(request)), request.body, region
        ))
      }
    })
  }

  app.post('/api/v1/contacts', {
    ...operation('create-contact', 'Create a contact', {
      description: 'Creates a personal or organization contact of the caller and answers it with its ETag and ' +
        'Location. Use the upsert or the CSV import to write many at once.',
      querystring: PhoneRegionQuery,
      body: CreateContactBody,
      response: { 201: Contact }
    }, requirePolicy('contact', 'create')),
    preValidation: trimEmails
  }, async (request, reply) => {
    const region = requestRegion(request.query.phone_region, config.phoneDefaultRegion)
    const row = await answerWithEtag(db, request, reply, (trx, auth) => createContact(trx, auth, request.body, region))
    return await reply.code(201).header('location', `/api/v1/contacts/${row.id}`).send(row)
  })

  app.get('/api/v1/contacts', operation('list-contacts', 'List contacts', {
    description: 'Pages through the contacts the caller can see, filtered, searched and sorted. With `sync=true` the ' +
      'last page carries a `sync_token` that later reads turn into the changes since.',
    querystring: ListContactsQuery,
    response: { 200: PagedBodyContact }
  }, requirePolicy('contact', 'read')), async request => {
    const q = request.query
    const favorite = q.is_favorite
    const paged = searchedPageOf(q)
    // a search that looks like a phone number matches numbers too (read with the request's region)
    const phone = phoneSearch(paged.search, requestRegion(q.phone_region, config.phoneDefaultRegion))
    // before the transaction: PGlite has one connection, which the transaction holds
    const counting = await countingOf(db, repo.CONTACT_COUNTS_TRIGGER)
    if (!isSyncRead(q)) {
      return await answerPage(db, request, trx =>
        repo.listVisible(trx, request.auth, { counting, ...paged, phone, favorite })
      )
    }
    // incremental sync (docs/integrations.md): the token binds the list's filters, the tenant and the caller
    const filters = {
      search: paged.search === '' ? undefined : paged.search, favorite, ...(phone !== undefined ? { phone } : {})
    }
    const scope = syncScope('contacts', request.auth, filters)
    return await answerPage(db, request, async (trx, _q, auth) => await syncedRead(trx, {
      query: q,
      scope,
      tenantId: request.auth.tenantId,
      now: new Date(),
      windowMs: config.syncWindowMs,
      keys: sealKeys(config),
      full: async cursor => await repo.listVisible(trx, auth, { counting, ...paged, cursor, phone, favorite }),
      changes: async window => await repo.listChanges(trx, auth, { ...filters, ...window })
    }))
  })

  app.get('/api/v1/contacts/search', operation('search-contacts',
    'Search contacts by name, e-mail, company or phone number', {
      description: 'Finds contacts by name, e-mail, company or any spelling of a phone number, best matches first. ' +
        'Use it for pickers and type-ahead; `list-contacts` for full lists.',
      querystring: SearchContactsQuery,
      response: { 200: SearchOutputBody }
    }, requirePolicy('contact', 'read')), async request => {
    const { query, limit, cursor } = request.query
    const phone = phoneSearch(query, requestRegion(request.query.phone_region, config.phoneDefaultRegion))
    const found = await withTenant(db, request.auth, trx =>
      repo.searchVisible(trx, request.auth, query.trim() || query, limit, cursor, phone)
    )
    return { ...found, query }
  })

  app.post('/api/v1/contacts/upsert', {
    ...operation('upsert-contacts',
      'Create or update a batch of contacts matched by e-mail (costs 5 rate-limit tokens)', {
        description: 'Creates the contacts whose e-mail is new and updates those it matches, in one transaction. Use ' +
          'it to keep an outside address book in step without looking each contact up first.',
        querystring: PhoneRegionQuery,
        body: UpsertContactsBody,
        response: { 200: UpsertOutputBody }
      }, requirePolicy('contact', 'write'), { config: { cost: UPSERT_COST } }),
    preValidation: trimEmails
  }, async (request) => {
    const region = requestRegion(request.query.phone_region, config.phoneDefaultRegion)
    return await withTenant(db, request.auth, trx => upsertContacts(trx, request.auth, request.body, region))
  })

  // Its own scope: the text/csv parser and its 16 MiB limit serve this route alone (every other route keeps JSON and
  // the 1 MiB BODY_LIMIT_BYTES).
  await app.register(async (instance) => {
    const scope = instance.withTypeProvider<TypeBoxTypeProvider>()
    scope.removeAllContentTypeParsers()
    // the bytes are checked (UTF-8, line lengths) before the text is handed on
    scope.addContentTypeParser('text/csv', { parseAs: 'buffer', bodyLimit: IMPORT_MAX_BYTES }, (request, raw, done) => {
      try {
        checkCharset(request.headers['content-type'])
        done(null, decodeCsvBody(raw as Buffer))
      } catch (err) {
        done(err as Error, undefined)
      }
    })
    scope.setErrorHandler(err => {
      // Fastify's own error names no limit; everything else goes to the application's handler as it is
      throw (err as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? tooLarge() : err
    })

    scope.post('/api/v1/contacts/import', operation('import-contacts',
      'Create or update contacts from a CSV file, all or nothing (costs 20 rate-limit tokens)', {
        description: 'Reads a CSV file (the body) and creates or updates its contacts in one transaction: one bad ' +
          'row and nothing is stored, every problem named by row and column. `dry_run=true` answers what would ' +
          'happen and stores nothing.',
        consumes: ['text/csv'],
        querystring: ImportContactsQuery,
        body: ImportContactsBody,
        response: {
          200: ImportOutputBody,
          413: { ...ErrorModel, description: 'A body over 16 MiB, or over 50 000 data rows: nothing written' },
          422: {
            ...ErrorModel,
            description:
            'Rows in error (`errors`: `body.line[<line>].<field>`, the column named in `message`): nothing written'
          }
        }
      }, requirePolicy('contact', 'write'), { config: { cost: IMPORT_COST } }), async (request) => {
      const q = request.query
      const region = requestRegion(q.phone_region, config.phoneDefaultRegion)
      // parsed and validated before the transaction: no connection is held for it
      const parsed = parseContactsCsv(request.body, {
        delimiter: q.delimiter === 'tab' ? '\t' : q.delimiter ?? ',',
        mapping: q.mapping,
        ignoreUnknown: q.ignore_unknown === true
      })
      return await withTenant(db, request.auth, trx =>
        importContacts(trx, request.auth, parsed, q.dry_run === true, region))
    })
  })

  app.get('/api/v1/contacts/:id', operation('get-contact', 'Get a contact', {
    description: 'One contact the caller can see, with its ETag. A merged contact redirects to the contact it was ' +
      'merged into.',
    params: ContactParams,
    response: {
      200: Contact,
      308: {
        ...ErrorModel,
        description: 'The contact was merged into another: `Location` names it (docs/contacts.md, "Merge")'
      }
    }
  }, requirePolicy('contact', 'read')), async (request, reply) =>
    await answerWithEtag(db, request, reply, async (trx, auth) => {
      const row = await repo.findVisible(trx, auth, request.params.id)
      // an absorbed id answers 308 to the contact it is now, when the caller sees that one
      if (row === undefined) throw await mergedOrNotFound(trx, auth, request.params.id)
      return row
    })
  )

  await mergeRoutes(app, { db }, needs)
  await duplicatesRoutes(app, { db })
  await timelineRoutes(app, { db }, needs)

  contactChangeRoute('put', '', 'replace-contact', 'Replace the writable fields of a contact',
    'Replaces every writable field of a contact; a field left out is cleared.',
    ReplaceContactBody,
    (trx, auth, current, input, region) => updateValues(trx, auth, current, replacementValues(input), region))
  contactChangeRoute('patch', '', 'patch-contact', 'Merge-patch a contact (RFC 7396)',
    'Changes the fields the body names and leaves the others as they are; `null` clears a field. Prefer it to PUT ' +
      'for edits of a few fields.',
    PatchContactBody,
    async (trx, auth, current, input, region) => {
      const values = toValues(input)
      return Object.keys(values).length === 0 ? current : await updateValues(trx, auth, current, values, region)
    })
  contactChangeRoute('patch', '/favorite', 'set-contact-favorite', 'Set or clear the favorite flag',
    'Marks a contact as a favorite of the caller, or clears the mark. A narrower write than a patch, for a star ' +
      'button.',
    FavoriteBody,
    (trx, auth, current, input) =>
      repo.updateContact(trx, auth.tenantId, current.id, { is_favorite: input.is_favorite }))

  noContentRoute(app, db, 'delete', '/api/v1/contacts/:id', operation('delete-contact', 'Delete a contact', {
    description: 'Deletes a contact; its attendances go with it. To remove a person\'s data everywhere for a privacy ' +
      'request, use `erase-contact` instead.',
    params: ContactParams
  }, requirePolicy('contact', 'write')), async (trx, request) => {
    const auth = request.auth
    const row = await lockManageable(trx, auth, request.params.id, ifMatchOf(request))
    await repo.deleteContact(trx, auth.tenantId, row.id)
    await emit(trx, contactEvent(auth, row.id, 'contact.deleted', { contact_id: row.id }))
  })
})
