import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { databases, newTenant, orgCallers, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { pagesByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'

type Json = Record<string, any>

async function createContact (t: TestApp, token: string, body: Json, query = ''): Promise<Json> {
  const res = await expectStatus(t, token, 'POST', `/api/v1/contacts${query}`, 201, body)
  return res.json()
}

for (const kind of databases()) {
  describe(`${kind}: contacts`, () => {
    const t = useTestApp(kind)

    describe('POST /api/v1/contacts', () => {
      it('creates a contact with every writable field and answers 201 with generated fields', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const body = {
          is_favorite: true,
          first_name: 'Ada',
          middle_name: 'King',
          last_name: 'Lovelace',
          nickname: 'Countess',
          email: 'ada@example.org',
          phone_primary: '+44 20 0000 0000',
          phone_secondary: '+44 20 0000 0001',
          phone_work: '+44 20 0000 0002',
          company: 'Analytical Engines',
          job_title: 'Mathematician',
          address_line1: '12 St James Square',
          address_line2: 'Flat 1',
          city: 'London',
          state_province: 'Greater London',
          postal_code: 'SW1Y 4JH',
          country: 'United Kingdom',
          website: 'https://example.org/ada',
          avatar_url: 'https://example.org/ada.png',
          notes: 'Wrote the first program.',
          linked_user_id: 'user-42',
          tags: ['math', 'history']
        }
        const res = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
          $schema: 'http://localhost:8080/schemas/Contact.json',
          ...body
        })
        assert.match(String(res.headers['content-type']), /^application\/json/)
        assert.equal(res.headers.link, '<http://localhost:8080/schemas/Contact.json>; rel="describedBy"')
        const c = res.json()
        assert.equal(c.$schema, 'http://localhost:8080/schemas/Contact.json')
        for (const [k, v] of Object.entries(body)) assert.deepEqual(c[k], v, k)
        assert.match(c.id, /^[0-9a-f-]{36}$/)
        assert.equal(c.owner_id, 'alice')
        assert.equal(c.org_id, null)
        assert.ok(!Number.isNaN(Date.parse(c.created_at)) && c.created_at.endsWith('Z'))
        assert.equal(res.headers.location, `/api/v1/contacts/${c.id}`)
        assert.equal(c.tenant_id, undefined)

        assert.deepEqual(c.possible_duplicates, [])

        const read = await expectStatus(t, alice, 'GET', `/api/v1/contacts/${c.id}`, 200)
        const { $schema: _created, possible_duplicates: _duplicates, ...stored } = c
        const { $schema: _read, ...readBack } = read.json() as Json
        assert.deepEqual(readBack, stored, 'create alone answers possible_duplicates')
      })

      it('stores an e-mail trimmed, and names possible duplicates by e-mail (any case, spaces) or phone', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
        const ann = await createContact(t, alice, { first_name: 'Ann', email: 'ann@example.com' })
        const phone = await createContact(t, bob, { first_name: 'Desk', phone_work: '+33 6 28 23 04 55' })
        assert.deepEqual([ann.possible_duplicates, phone.possible_duplicates], [[], []])

        const again = await createContact(t, alice, { first_name: 'Ann again', email: ' Ann@Example.COM ' })
        assert.equal(again.email, 'Ann@Example.COM', 'stored trimmed, its case kept')
        assert.deepEqual(again.possible_duplicates, [ann.id])
        const byPhone = await createContact(t, alice, {
          first_name: 'Ann mobile', email: 'ANN@example.com', phone_secondary: '06.28.23.04.55'
        }, '?phone_region=FR')
        assert.deepEqual(byPhone.possible_duplicates, [ann.id, phone.id, again.id], 'oldest first')
        const nothing = await createContact(t, alice, {
          first_name: 'Nobody', email: 'ann@example.org', phone_primary: '04 55'
        })
        assert.deepEqual(nothing.possible_duplicates, [])

        const read = await getJson(t, alice, `/api/v1/contacts/${again.id}`)
        assert.equal(read.email, 'Ann@Example.COM')
        assert.equal(read.possible_duplicates, undefined)
        // search finds the address in either spelling, spaces around the term dropped
        for (const term of [' Ann@Example.COM ', 'ann@example.com']) {
          const q = encodeURIComponent(term)
          const listed = await getJson(t, alice, `/api/v1/contacts?search=${q}&sort_by=created_at&sort_dir=asc`)
          assert.deepEqual(listed.items.map((c: Json) => c.id), [ann.id, again.id, byPhone.id], term)
          const found = await getJson(t, alice, `/api/v1/contacts/search?query=${q}`)
          assert.equal(found.total, 3, term)
        }
        // PUT and PATCH store the e-mail trimmed too
        const patched = await expectStatus(t, alice, 'PATCH', `/api/v1/contacts/${nothing.id}`, 200, {
          email: '  x@example.org '
        })
        assert.equal(patched.json().email, 'x@example.org')
        const put = await expectStatus(t, alice, 'PUT', `/api/v1/contacts/${nothing.id}`, 200, {
          is_favorite: false, email: '\ty@example.org '
        })
        assert.equal(put.json().email, 'y@example.org')
        const bad = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 400, { email: ' not an e-mail ' })
        assert.equal(bad.json().errors[0].location, 'body.email')
      })

      it('never names a contact the caller cannot see as a possible duplicate', async () => {
        const tenant = newTenant(t)
        const callers = await orgCallers(tenant)
        const body = { email: 'same@example.com', phone_primary: '+33 6 28 23 04 55' }
        // erin's personal contact (made before she joined org-a), carol's of org-b, and another tenant's
        const personal = await createContact(t, callers.erinBefore, { ...body, first_name: 'Erin\'s own' })
        const orgB = await createContact(t, callers.carol, { ...body, first_name: 'Org B' })
        await createContact(t, await newTenant(t).user('alice', ['admin']), { ...body, first_name: 'Elsewhere' })
        const first = await createContact(t, callers.alice, { ...body, first_name: 'First' })
        assert.deepEqual(first.possible_duplicates, [], 'none of those is visible to alice')
        const second = await createContact(t, callers.bob, { email: 'SAME@example.com', first_name: 'Second' })
        assert.deepEqual(second.possible_duplicates, [first.id], 'an organization contact is')
        const hers = await createContact(t, callers.erin, { phone_work: '+33628230455', first_name: 'Third' })
        assert.deepEqual(hers.possible_duplicates, [personal.id, first.id], 'her own personal contact is hers to see')
        const admin = await createContact(t, callers.admin, { ...body, first_name: 'Admin' })
        assert.deepEqual(
          admin.possible_duplicates,
          [orgB.id, first.id, second.id, hers.id],
          'an admin sees every organization\'s contacts, not another member\'s personal one'
        )
      })

      it('takes org_id from the caller\'s organization', async () => {
        const tenant = newTenant(t)
        const bob = await tenant.user('bob', ['member'], { orgId: 'org-1' })
        const c = await createContact(t, bob, { first_name: 'Org' })
        assert.equal(c.org_id, 'org-1')
      })

      it('refuses bad input with one error per field and stores nothing', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const res = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/contacts',
          payload: {
            first_name: 'x'.repeat(256),
            postal_code: 'x'.repeat(21),
            email: 'not-an-email',
            website: 'javascript:alert(1)',
            tags: 'one',
            is_favorite: 'yes',
            owner_id: 'mallory',
            id: '00000000-0000-0000-0000-000000000000'
          }
        })
        assert.equal(res.statusCode, 400)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        const err = res.json()
        assert.equal(err.title, 'Bad Request')
        assert.equal(err.status, 400)
        assert.equal(err.$schema, 'http://localhost:8080/schemas/ErrorModel.json')
        const locations = err.errors.map((e: Json) => e.location).sort()
        assert.deepEqual(locations, [
          'body.email',
          'body.first_name',
          'body.id',
          'body.is_favorite',
          'body.owner_id',
          'body.postal_code',
          'body.tags',
          'body.website'
        ])
        const first = err.errors.find((e: Json) => e.location === 'body.first_name')
        assert.equal(first.message, 'expected length <= 255')
        assert.equal(err.errors.find((e: Json) => e.location === 'body.owner_id').message, 'unexpected property')

        const list = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
        assert.equal(list.json().total, 0)
      })

      /** `POST /contacts` of a new caller with `text` as its body, sent as `contentType` */
      const postText = async (contentType: string, text: string) =>
        await t.as(await newTenant(t).user('alice'), {
          method: 'POST',
          url: '/api/v1/contacts',
          headers: { 'content-type': contentType },
          payload: text
        })

      it('answers 400 for a body that is not JSON', async () => {
        const res = await postText('application/json', '{"first_name":')
        assert.equal(res.statusCode, 400)
        assert.equal(res.json().errors[0].location, 'body')
      })

      it('answers 415 for an unsupported content type', async () => {
        const res = await postText('text/csv', 'a,b')
        assert.equal(res.statusCode, 415)
        assert.equal(res.json().status, 415)
      })

      it('forbids a viewer (403) and stores nothing', async () => {
        const tenant = newTenant(t)
        const viewer = await tenant.user('vera', ['viewer'])
        const res = await expectStatus(t, viewer, 'POST', '/api/v1/contacts', 403, { first_name: 'No' })
        assert.equal(res.json().detail, 'missing permission contacts:write')
        const list = await t.as(viewer, { method: 'GET', url: '/api/v1/contacts' })
        assert.equal(list.json().total, 0)
      })

      it('replays the first answer for a repeated Idempotency-Key and refuses the key with another body', async () => {
        const alice = await newTenant(t).user('alice')
        const send = (payload: Json) =>
          t.as(alice, { method: 'POST', url: '/api/v1/contacts', headers: { 'idempotency-key': 'k-1' }, payload })
        const first = await send({ first_name: 'Once' })
        assert.equal(first.statusCode, 201)
        const again = await send({ first_name: 'Once' })
        assert.equal(again.statusCode, 201)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.json().id, first.json().id)
        const other = await send({ first_name: 'Twice' })
        assert.equal(other.statusCode, 409)
        assert.equal(other.json().errors[0].location, 'header.idempotency-key')
        const list = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
        assert.equal(list.json().total, 1)
      })

      it('applies concurrent requests with one Idempotency-Key once', async () => {
        const alice = await newTenant(t).user('alice')
        const results = await Promise.all(
          Array.from({ length: 8 }, () =>
            t.as(alice, {
              method: 'POST',
              url: '/api/v1/contacts',
              headers: { 'idempotency-key': 'burst' },
              payload: { first_name: 'Burst' }
            })
          )
        )
        assert.deepEqual(new Set(results.map(r => r.statusCode)), new Set([201]))
        assert.equal(new Set(results.map(r => r.json().id)).size, 1)
        const list = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
        assert.equal(list.json().total, 1)
      })
    })

    describe('GET /api/v1/contacts', () => {
      it('pages, searches, sorts and filters favorites', async () => {
        const alice = await newTenant(t).user('alice')
        const names = ['Carol', 'alice', 'Bob', 'Dave', 'Eve']
        for (const [i, n] of names.entries()) {
          await createContact(t, alice, {
            first_name: n,
            email: `${n.toLowerCase()}@corp.test`,
            company: i === 3 ? 'Initech' : 'Acme',
            is_favorite: i % 2 === 0
          })
        }
        const page = await t.as(alice, {
          method: 'GET',
          url: '/api/v1/contacts?page=2&size=2&sort_by=first_name&sort_dir=asc'
        })
        assert.equal(page.statusCode, 200)
        const body = page.json()
        assert.equal(body.$schema, 'http://localhost:8080/schemas/PagedBodyContact.json')
        assert.deepEqual({ page: body.page, size: body.size, total: body.total }, { page: 2, size: 2, total: 5 })
        assert.deepEqual(body.items.map((c: Json) => c.first_name), ['Carol', 'Dave'])

        const search = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?search=initech' })
        assert.deepEqual(search.json().items.map((c: Json) => c.first_name), ['Dave'])
        const byEmail = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?search=EVE@CORP' })
        assert.deepEqual(byEmail.json().items.map((c: Json) => c.first_name), ['Eve'])

        const favs = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?is_favorite=true&sort_by=first_name' })
        assert.deepEqual(favs.json().items.map((c: Json) => c.first_name).sort(), ['Carol', 'Bob', 'Eve'].sort())
        const nonFavs = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?is_favorite=false' })
        assert.equal(nonFavs.json().total, 2)
        const noFilter = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?is_favorite=' })
        assert.equal(noFilter.json().total, 5)

        const empty = await t.as(alice, { method: 'GET', url: '/api/v1/contacts?page=9' })
        assert.deepEqual(empty.json().items, [])
      })

      it('treats % and _ in a search term literally', async () => {
        const alice = await newTenant(t).user('alice')
        await createContact(t, alice, { first_name: 'Percent', company: '100% Inc' })
        await createContact(t, alice, { first_name: 'Other', company: 'Hundred Inc' })
        const res = await t.as(alice, { method: 'GET', url: `/api/v1/contacts?search=${encodeURIComponent('0%')}` })
        assert.deepEqual(res.json().items.map((c: Json) => c.first_name), ['Percent'])
      })

      it('validates page, size, sort_by and sort_dir', async () => {
        const alice = await newTenant(t).user('alice')
        const res = await t.as(alice, {
          method: 'GET',
          url: '/api/v1/contacts?page=0&size=101&sort_by=password&sort_dir=up'
        })
        assert.equal(res.statusCode, 400)
        assert.deepEqual(
          res
            .json()
            .errors.map((e: Json) => e.location)
            .sort(),
          ['query.page', 'query.size', 'query.sort_by', 'query.sort_dir']
        )
      })
    })

    describe('GET /api/v1/contacts/search', () => {
      it('returns matches, the query and the total, limited', async () => {
        const alice = await newTenant(t).user('alice')
        for (const n of ['Anna', 'Annabel', 'Hannah', 'Zed']) await createContact(t, alice, { first_name: n })
        const res = await expectStatus(t, alice, 'GET', '/api/v1/contacts/search?query=ann&limit=2', 200)
        const body = res.json()
        assert.equal(body.$schema, 'http://localhost:8080/schemas/SearchOutputBody.json')
        assert.equal(body.query, 'ann')
        assert.equal(body.total, 3)
        assert.equal(body.items.length, 2)
        assert.ok(body.items.every((c: Json) => /ann/i.test(c.first_name)))
      })

      it('ranks the closest matches first, whole rows included', async () => {
        const alice = await newTenant(t).user('alice')
        for (const n of ['Marianne Long', 'Ann', 'Annabel Smith']) {
          await createContact(t, alice, {
            first_name: n.split(' ')[0],
            last_name: n.split(' ')[1],
            email: `${n.split(' ')[0]!.toLowerCase()}@example.com`
          })
        }
        const body = (await t.as(alice, { method: 'GET', url: '/api/v1/contacts/search?query=ann&limit=3' })).json()
        assert.deepEqual(body.items.map((c: Json) => c.first_name), ['Ann', 'Annabel', 'Marianne'])
        assert.equal(body.items[1].last_name, 'Smith')
        assert.equal(body.items[1].email, 'annabel@example.com')
        assert.equal(body.total, 3)
      })

      it('requires a query of at least one character and a limit of 1 to 100', async () => {
        const alice = await newTenant(t).user('alice')
        const res = await expectStatus(t, alice, 'GET', '/api/v1/contacts/search?query=&limit=101', 400)
        assert.deepEqual(res.json().errors.map((e: Json) => e.location).sort(), ['query.limit', 'query.query'])
        const missing = await t.as(alice, { method: 'GET', url: '/api/v1/contacts/search' })
        assert.equal(missing.json().errors[0].location, 'query.query')
      })
    })

    describe('POST /api/v1/contacts/upsert', () => {
      it('creates new and updates matched contacts by e-mail in one call', async () => {
        const alice = await newTenant(t).user('alice')
        const existing = await createContact(t, alice, {
          first_name: 'Old',
          last_name: 'Name',
          email: 'Match@Example.com'
        })
        const res = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/contacts/upsert',
          payload: {
            contacts: [
              { email: 'match@example.com', first_name: 'New' },
              { email: 'fresh@example.com', company: 'Fresh' }
            ]
          }
        })
        assert.equal(res.statusCode, 200, res.body)
        const body = res.json()
        assert.equal(body.created, 1)
        assert.equal(body.updated, 1)
        assert.deepEqual(body.items.map((i: Json) => i.action), ['updated', 'created'])
        assert.equal(body.items[0].contact.id, existing.id)
        const read = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${existing.id}` })
        assert.equal(read.json().first_name, 'New')
        assert.equal(read.json().last_name, 'Name', 'fields absent from the item are kept')
        const list = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
        assert.equal(list.json().total, 2)
      })

      it('writes a mix of created and updated contacts, each its own fields, events in item order', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const a = await createContact(t, alice, { email: 'a@x.io', first_name: 'Old', last_name: 'Keep', tags: ['t'] })
        const b = await createContact(t, alice, { email: 'b@x.io', first_name: 'Bea', company: 'B', is_favorite: true })
        const before = (await outboxEvents(t, tenant.id, 'contact.')).length
        const res = await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert', 200, {
          contacts: [
            { email: 'n1@x.io', first_name: 'N1' },
            { email: 'A@X.io', company: 'New Co', tags: null },
            { email: 'n2@x.io', company: 'C2', is_favorite: true, tags: ['x', 'y'] },
            { email: 'b@x.io', first_name: null, is_favorite: false }
          ]
        })
        const body = res.json()
        assert.deepEqual([body.created, body.updated, body.skipped], [2, 2, 0])
        assert.deepEqual(body.items.map((i: Json) => i.action), ['created', 'updated', 'created', 'updated'])
        assert.deepEqual([body.items[1].contact.id, body.items[3].contact.id], [a.id, b.id])
        const read = async (id: string): Promise<Json> => await getJson(t, alice, `/api/v1/contacts/${id}`)
        const etag = async (id: string) =>
          (await expectStatus(t, alice, 'GET', `/api/v1/contacts/${id}`, 200)).headers.etag
        const [n1, a2, n2, b2] = await Promise.all(body.items.map((i: Json) => read(i.contact.id)))
        for (const [i, { $schema: _, ...c }] of [n1, a2, n2, b2].map(r => r ?? {}).entries()) {
          assert.deepEqual(c, body.items[i].contact, 'the item answers the contact as stored')
        }
        assert.deepEqual([n1?.first_name, n1?.company, n1?.tags, n1?.is_favorite], ['N1', null, [], false])
        assert.deepEqual([n2?.first_name, n2?.company, n2?.tags, n2?.is_favorite], [null, 'C2', ['x', 'y'], true])
        assert.deepEqual(
          [a2?.email, a2?.first_name, a2?.last_name, a2?.company, a2?.tags, await etag(a.id)],
          ['A@X.io', 'Old', 'Keep', 'New Co', [], '"2"'],
          'present fields replace, absent ones stay'
        )
        assert.deepEqual(
          [b2?.first_name, b2?.company, b2?.is_favorite, await etag(b.id)],
          [null, 'B', false, '"2"']
        )
        assert.ok((a2?.updated_at ?? '') > a.updated_at)
        const list = async (query: string) => (await getJson(t, alice, `/api/v1/contacts${query}`)).total
        assert.deepEqual([await list(''), await list('?is_favorite=true'), await list('?search=new%20co')], [4, 1, 1])

        const events = (await outboxEvents(t, tenant.id, 'contact.')).slice(before)
        assert.deepEqual(events.map(e => [e.topic, e.aggregate_id]), [
          ['contact.created', n1?.id], ['contact.updated', a.id], ['contact.created', n2?.id], ['contact.updated', b.id]
        ])
        const payload = (p: unknown) => typeof p === 'string' ? JSON.parse(p) : p
        assert.deepEqual(events.map(e => payload(e.payload)), [
          { contact_id: n1?.id, email: 'n1@x.io', source: 'upsert' },
          { contact_id: a.id, fields: ['email', 'company', 'tags'], source: 'upsert' },
          { contact_id: n2?.id, email: 'n2@x.io', source: 'upsert' },
          { contact_id: b.id, fields: ['is_favorite', 'first_name', 'email'], source: 'upsert' }
        ])
      })

      it('applies an e-mail given again in the batch (another case, spaces) ' +
        'to the contact its first item created', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const before = (await outboxEvents(t, tenant.id, 'contact.')).length
        const res = await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert', 200, {
          contacts: [
            { email: 'ann@example.com', first_name: 'Ann' },
            { email: 'b@x.io' },
            { email: ' ann@example.com ', company: 'Acme' },
            { email: 'ann@example.com', first_name: 'Ann' },
            { email: 'ANN@example.com', first_name: 'Ann', company: 'Acme' }
          ]
        })
        const body = res.json()
        assert.deepEqual(body.items.map((i: Json) => i.action),
          ['created', 'created', 'updated', 'unchanged', 'updated'])
        assert.deepEqual([body.created, body.updated, body.unchanged, body.skipped], [2, 2, 1, 0])
        const ids = body.items.map((i: Json) => i.contact.id)
        assert.equal(new Set([ids[0], ids[2], ids[3], ids[4]]).size, 1, 'one contact for the one e-mail')
        const list = await getJson(t, alice, '/api/v1/contacts')
        assert.equal(list.total, 2)
        const ann = await getJson(t, alice, `/api/v1/contacts/${ids[0] as string}`)
        assert.deepEqual([ann.email, ann.first_name, ann.company], ['ANN@example.com', 'Ann', 'Acme'],
          'later items win')
        const { $schema: _schema, ...annBody } = ann
        for (const i of [0, 2, 3, 4]) {
          assert.deepEqual(body.items[i].contact, annBody, 'each item answers the contact as left')
        }
        const events = (await outboxEvents(t, tenant.id, 'contact.')).slice(before)
        assert.deepEqual(events.map(e => [e.topic, e.aggregate_id]), [
          ['contact.created', ids[0]], ['contact.created', ids[1]], ['contact.updated', ids[0]],
          ['contact.updated', ids[0]]
        ])
      })

      it('answers unchanged, writing nothing, for an item whose contact already holds its values', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const c = await createContact(t, alice, {
          email: 'ann@example.com', first_name: 'Ann', tags: ['a'], phone_work: '+33 6 28 23 04 55'
        })
        const before = (await outboxEvents(t, tenant.id, 'contact.')).length
        const res = await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert', 200, {
          contacts: [
            { email: ' Ann@Example.COM ', first_name: 'Ann', tags: ['a'], phone_work: '+33 6 28 23 04 55' },
            { email: 'Ann@Example.COM', first_name: 'Ann' }
          ]
        })
        const body = res.json()
        assert.deepEqual(body.items.map((i: Json) => i.action), ['updated', 'unchanged'],
          'the e-mail\'s spelling is a value')
        const again = (await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert', 200, {
          contacts: [{ email: 'Ann@Example.COM', first_name: 'Ann', tags: ['a'], phone_work: '+33 6 28 23 04 55' }]
        })).json()
        assert.deepEqual([again.created, again.updated, again.unchanged, again.items[0].action], [0, 0, 1, 'unchanged'])
        assert.equal(again.items[0].contact.id, c.id)
        const read = await expectStatus(t, alice, 'GET', `/api/v1/contacts/${c.id as string}`, 200)
        assert.equal(read.headers.etag, '"2"', 'written once: by the first item that changed it')
        assert.equal((await outboxEvents(t, tenant.id, 'contact.')).length, before + 1)
      })

      it('names the item and field of a bad entry', async () => {
        const alice = await newTenant(t).user('alice')
        const res = await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert', 400, {
          contacts: [{ email: 'ok@x.io' }, { first_name: 'no email' }]
        })
        assert.equal(res.json().errors[0].location, 'body.contacts[1].email')
      })

      it('costs five rate-limit tokens', async () => {
        const alice = await newTenant(t).user('alice')
        const a = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
        const b = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/contacts/upsert',
          payload: { contacts: [{ email: 'x@x.io' }] }
        })
        assert.equal(Number(a.headers['ratelimit-remaining']) - Number(b.headers['ratelimit-remaining']), 5)
      })
    })

    describe('one contact', () => {
      it('patches with merge semantics, null clears, and ETag/If-Match guard the write', async () => {
        const alice = await newTenant(t).user('alice')
        const c = await createContact(t, alice, { first_name: 'Ann', company: 'Acme', tags: ['a'] })
        const get = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${c.id}` })
        const etag = String(get.headers.etag)
        const patched = await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/contacts/${c.id}`,
          headers: { 'if-match': etag, 'content-type': 'application/merge-patch+json' },
          payload: JSON.stringify({ company: null, city: 'Oslo' })
        })
        assert.equal(patched.statusCode, 200, patched.body)
        assert.equal(patched.json().company, null)
        assert.equal(patched.json().city, 'Oslo')
        assert.equal(patched.json().first_name, 'Ann')
        assert.deepEqual(patched.json().tags, ['a'])
        assert.notEqual(patched.headers.etag, etag)

        const stale = await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/contacts/${c.id}`,
          headers: { 'if-match': etag },
          payload: { city: 'Bergen' }
        })
        assert.equal(stale.statusCode, 412)
        const after = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${c.id}` })
        assert.equal(after.json().city, 'Oslo')
      })

      it('replaces with PUT (omitted fields cleared) and sets the favorite flag', async () => {
        const alice = await newTenant(t).user('alice')
        const c = await createContact(t, alice, { first_name: 'Ann', company: 'Acme' })
        const put = await expectStatus(t, alice, 'PUT', `/api/v1/contacts/${c.id}`, 200, {
          is_favorite: false,
          last_name: 'Lee'
        })
        assert.equal(put.json().first_name, null)
        assert.equal(put.json().company, null)
        assert.equal(put.json().last_name, 'Lee')
        const missing = await expectStatus(t, alice, 'PUT', `/api/v1/contacts/${c.id}`, 400, { last_name: 'Lee' })
        assert.equal(missing.json().errors[0].location, 'body.is_favorite')
        const fav = await t.as(alice, {
          method: 'PATCH',
          url: `/api/v1/contacts/${c.id}/favorite`,
          payload: { is_favorite: true }
        })
        assert.equal(fav.json().is_favorite, true)
      })

      it('deletes (204) and the contact is gone', async () => {
        const alice = await newTenant(t).user('alice')
        const c = await createContact(t, alice, { first_name: 'Gone' })
        const del = await expectStatus(t, alice, 'DELETE', `/api/v1/contacts/${c.id}`, 204)
        assert.equal(del.body, '')
        const get = await expectStatus(t, alice, 'GET', `/api/v1/contacts/${c.id}`, 404)
        assert.equal(get.json().detail, 'contact not found')
      })

      it('answers 400 for an id that is not a UUID', async () => {
        const alice = await newTenant(t).user('alice')
        const res = await expectStatus(t, alice, 'GET', '/api/v1/contacts/42', 400)
        assert.equal(res.json().errors[0].location, 'path.id')
      })
    })

    describe('who sees and changes a contact', () => {
      it('keeps a personal contact to its owner, shares an organization contact with the organization', async () => {
        const tenant = newTenant(t)
        const ann = await tenant.user('ann', ['member'], { orgId: 'org-a' })
        const ben = await tenant.user('ben', ['member'], { orgId: 'org-a' })
        const cat = await tenant.user('cat', ['member'], { orgId: 'org-b' })
        const solo = await tenant.user('solo', ['member'])
        const shared = await createContact(t, ann, { first_name: 'Shared' })
        const personal = await createContact(t, solo, { first_name: 'Personal' })

        await expectStatuses(t, [
          [ben, 'GET', `/api/v1/contacts/${shared.id}`, 200],
          [cat, 'GET', `/api/v1/contacts/${shared.id}`, 404],
          [ann, 'GET', `/api/v1/contacts/${personal.id}`, 404]
        ])
        assert.equal((await t.as(ben, { method: 'GET', url: '/api/v1/contacts' })).json().total, 1)
        assert.equal((await t.as(cat, { method: 'GET', url: '/api/v1/contacts/search?query=shared' })).json().total, 0)

        await expectStatus(t, ben, 'PATCH', `/api/v1/contacts/${shared.id}`, 403, { city: 'X' })
        const admin = await tenant.user('root', ['admin'], { orgId: 'org-z' })
        await expectStatuses(t, [
          [admin, 'PATCH', `/api/v1/contacts/${shared.id}`, 200, { city: 'Y' }],
          [admin, 'GET', `/api/v1/contacts/${personal.id}`, 404]
        ])
      })

      it('answers 404 to another tenant for every operation and changes nothing', async () => {
        const a = await newTenant(t).user('alice', ['admin'])
        const b = await newTenant(t).user('alice', ['admin'])
        const c = await createContact(t, a, { first_name: 'Mine', email: 'mine@a.io' })
        for (const req of [
          { method: 'GET' as const, url: `/api/v1/contacts/${c.id}` },
          { method: 'PATCH' as const, url: `/api/v1/contacts/${c.id}`, payload: { first_name: 'Stolen' } },
          { method: 'PUT' as const, url: `/api/v1/contacts/${c.id}`, payload: { is_favorite: true } },
          { method: 'PATCH' as const, url: `/api/v1/contacts/${c.id}/favorite`, payload: { is_favorite: true } },
          { method: 'DELETE' as const, url: `/api/v1/contacts/${c.id}` }
        ]) {
          const res = await t.as(b, req)
          assert.equal(res.statusCode, 404, `${req.method} ${req.url}`)
        }
        const upsert = await t.as(b, {
          method: 'POST',
          url: '/api/v1/contacts/upsert',
          payload: { contacts: [{ email: 'mine@a.io', first_name: 'Stolen' }] }
        })
        assert.equal(upsert.json().items[0].action, 'created')
        const after = await t.as(a, { method: 'GET', url: `/api/v1/contacts/${c.id}` })
        assert.equal(after.json().first_name, 'Mine')
        assert.equal(after.json().is_favorite, false)
        assert.equal((await t.as(b, { method: 'GET', url: '/api/v1/contacts?search=mine' })).json().total, 1)
      })
    })

    describe('GET /api/v1/contacts by cursor', () => {
      it('walks every sort by cursor as by page, ties and empty names included, ' +
        'and refuses a cursor of other filters', async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const names = ['ada', 'Ada', 'bob', null, 'Émile', 'zed', 'Ada', null, 'carl', 'Bob', 'dora', 'eve']
        // one upsert: one transaction, one created_at for all of them (ties broken by id)
        const res = await t.as(alice, {
          method: 'POST',
          url: '/api/v1/contacts/upsert',
          payload: {
            contacts: names.map((n, i) => ({
              email: `c${i}@example.org`,
              ...(n !== null ? { last_name: n } : {}),
              company: i % 3 === 0 ? 'Acme' : null
            }))
          }
        })
        assert.equal(res.statusCode, 200, res.body)
        const get = async (url: string) => await getJson(t, alice, url)
        for (const q of [
          '',
          '?sort_by=last_name&sort_dir=asc',
          '?sort_by=last_name&sort_dir=desc',
          '?sort_by=company&sort_dir=asc',
          '?sort_by=updated_at&sort_dir=asc&search=example'
        ]) {
          const sep = q === '' ? '?' : '&'
          const all = ((await get(`/api/v1/contacts${q}${sep}size=100`)).items as Json[]).map(i => i.id)
          assert.equal(all.length, names.length)
          const pages = await pagesByCursor(t, alice, `/api/v1/contacts${q}${sep}size=5`)
          assert.deepEqual(pages.map(p => p.page), pages.map((_, i) => i + 1))
          assert.ok(pages.every(p => p.total === names.length), `${q}: a total other than ${names.length}`)
          const walked = pages.flatMap(p => (p.items as Json[]).map(i => i.id))
          assert.deepEqual(walked, all, `${q}: the cursor walk differs from the page`)
        }
        // the search, ranked, by cursor: the same matches in the same order, the total on every page
        const ranked = ((await get('/api/v1/contacts/search?query=example&limit=100')).items as Json[]).map(i => i.id)
        assert.equal(ranked.length, names.length)
        const searchPages = await pagesByCursor(t, alice, '/api/v1/contacts/search?query=example&limit=5')
        assert.ok(searchPages.every(p => p.total === names.length), `a search total other than ${names.length}`)
        assert.deepEqual(searchPages.flatMap(p => (p.items as Json[]).map(i => i.id)), ranked)
        const first = await get('/api/v1/contacts?sort_by=last_name&size=5')
        for (const [url, cursor] of [
          ['/api/v1/contacts?sort_by=company&size=5', first.next_cursor],
          ['/api/v1/contacts', 'bm9wZQ']
        ]) {
          const r = await refusedCursor(t, alice, url, cursor)
          assert.ok(
            r.json().errors.some((e: Json) => e.location === 'query.cursor'),
            r.body
          )
        }
      })
    })
  })
}
