import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { databases, newTenant, orgCallers, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { outboxTopics } from '../../../test/helpers/outbox.ts'
import { problemIssues } from '../../../test/helpers/problem.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'

type Json = Record<string, any>

const BOM = Buffer.from([0xef, 0xbb, 0xbf])

async function importCsv (
  t: TestApp,
  token: string,
  csv: string | Buffer,
  query = '',
  contentType = 'text/csv'
): Promise<LightMyRequestResponse> {
  return await t.as(token, {
    method: 'POST',
    url: `/api/v1/contacts/import${query}`,
    headers: { 'content-type': contentType },
    payload: csv
  })
}

/** Imports and asserts the status (and, for an error, a proper ErrorModel); the JSON body. */
async function expectImport (
  t: TestApp,
  token: string,
  status: number,
  csv: string | Buffer,
  query = ''
): Promise<Json> {
  const res = await importCsv(t, token, csv, query)
  assert.equal(res.statusCode, status, res.body)
  if (status >= 400) assert.deepEqual(problemIssues(res), [])
  return res.json()
}

/** Every contact the caller sees, by e-mail. */
async function contactsByEmail (t: TestApp, token: string): Promise<Map<string, Json>> {
  const body = await getJson(t, token, '/api/v1/contacts?size=100')
  assert.ok(body.total <= 100)
  return new Map(body.items.map((c: Json) => [c.email, c]))
}

const rows = (n: number, from = 0): string =>
  Array.from({ length: n }, (_v, i) => `u${from + i}@example.org,U${from + i}\n`).join('')

for (const kind of databases()) {
  describe(`${kind}: POST /api/v1/contacts/import`, () => {
    const t = useTestApp(kind)

    it('creates, updates and leaves unchanged by e-mail; ' +
      'a second import of the same file changes nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const ann = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
        email: 'ann@example.org', first_name: 'Ann', company: 'Old'
      })).json()
      const bo = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
        email: 'bo@example.org', first_name: 'Bo', last_name: 'Li', tags: ['x']
      })).json()
      const csv = 'Email,First_Name , company,tags\r\n' +
        'ann@example.org,Ann,New,a; b;\r\n' +
        'bo@example.org,Bo,,\r\n' +
        'cy@example.org,Cy,Corp,x\r\n'
      const before = (await outboxTopics(t, tenant.id, 'contact.')).length

      const body = await expectImport(t, alice, 200, csv)
      assert.equal(body.$schema, 'http://localhost:8080/schemas/ImportOutputBody.json')
      assert.deepEqual([body.created, body.updated, body.unchanged], [1, 1, 1])
      assert.deepEqual(body.results.map((r: Json) => [r.line, r.status]),
        [[2, 'updated'], [3, 'unchanged'], [4, 'created']])
      assert.equal(body.results[0].contact_id, ann.id)
      assert.equal(body.results[1].contact_id, bo.id)

      const seen = await contactsByEmail(t, alice)
      assert.equal(seen.size, 3)
      assert.equal(seen.get('ann@example.org')?.company, 'New')
      assert.deepEqual(seen.get('ann@example.org')?.tags, ['a', 'b'])
      assert.equal(seen.get('ann@example.org')?.first_name, 'Ann')
      assert.equal(seen.get('bo@example.org')?.last_name, 'Li', 'a field without a column is kept')
      assert.deepEqual(seen.get('bo@example.org')?.tags, ['x'], 'an empty cell leaves its field as it is')
      assert.equal(seen.get('bo@example.org')?.updated_at, bo.updated_at, 'an unchanged contact is not written')
      assert.equal(seen.get('cy@example.org')?.id, body.results[2].contact_id)
      assert.equal(seen.get('cy@example.org')?.company, 'Corp')
      // the upsert's events: one per contact written, none for the unchanged one
      assert.deepEqual((await outboxTopics(t, tenant.id, 'contact.')).slice(before),
        ['contact.updated', 'contact.created'])

      const again = await expectImport(t, alice, 200, csv)
      assert.deepEqual([again.created, again.updated, again.unchanged], [0, 0, 3])
      assert.deepEqual(again.results.map((r: Json) => r.contact_id), body.results.map((r: Json) => r.contact_id))
      const after = await contactsByEmail(t, alice)
      for (const [email, c] of seen) assert.deepEqual(after.get(email), c, email)
      assert.equal((await outboxTopics(t, tenant.id, 'contact.')).length, before + 2)
    })

    it('maps headers through `mapping`, and ignores unknown columns only when asked', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'E-mail Address,Given,Shoe size\nann@example.org,Ann,38\n'
      const unknown = await expectImport(t, alice, 400, csv)
      assert.deepEqual(unknown.errors.map((e: Json) => e.location), ['body.line[1]', 'body.line[1]', 'body.line[1]'])
      assert.match(unknown.errors[0].message, /"E-mail Address"/)
      assert.match(unknown.errors[2].message, /"Shoe size".*ignore_unknown=true/)

      const mapping = `?mapping=${encodeURIComponent('e-mail address=email, Given=first_name')}`
      const still = await expectImport(t, alice, 400, csv, mapping)
      assert.equal(still.errors.length, 1)
      assert.equal(still.errors[0].value, 'Shoe size')

      const twice = await expectImport(t, alice, 400, csv,
        `?mapping=${encodeURIComponent('E-mail Address=email,Given=email')}&ignore_unknown=true`)
      assert.match(twice.errors[0].message, /both map to email/)
      const notAField = await expectImport(t, alice, 400, csv, `?mapping=${encodeURIComponent('Given=given_name')}`)
      assert.equal(notAField.errors[0].location, 'query.mapping')
      const noSuchHeader = await expectImport(t, alice, 400, csv,
        `?mapping=${encodeURIComponent('E-mail Address=email,Surname=last_name')}&ignore_unknown=true`)
      assert.equal(noSuchHeader.errors[0].location, 'query.mapping')
      assert.match(noSuchHeader.errors[0].message, /"Surname"/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)

      const body = await expectImport(t, alice, 200, csv, `${mapping}&ignore_unknown=true`)
      assert.equal(body.created, 1)
      const ann = (await contactsByEmail(t, alice)).get('ann@example.org')
      assert.equal(ann?.first_name, 'Ann')
      assert.equal(ann?.notes, null)
    })

    it('accepts a leading UTF-8 BOM and text/csv with charset utf-8; other charsets and types are 415', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = Buffer.concat([BOM, Buffer.from('email,first_name\r\nzoe@example.org,Zoë\r\n')])
      const res = await importCsv(t, alice, csv, '', 'text/csv; charset=UTF-8')
      assert.equal(res.statusCode, 200, res.body)
      assert.equal((await contactsByEmail(t, alice)).get('zoe@example.org')?.first_name, 'Zoë')

      for (const type of ['text/csv; charset=iso-8859-1', 'application/json', 'text/plain']) {
        const refused = await importCsv(t, alice, 'email\nx@example.org\n', '', type)
        assert.equal(refused.statusCode, 415, `${type}: ${refused.body}`)
        assert.deepEqual(problemIssues(refused), [])
      }
      assert.equal((await contactsByEmail(t, alice)).size, 1)
    })

    it('names the line a record starts on when a quoted field holds line breaks', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'email,notes\n' +
        'a@example.org,"first\nsecond\r\nthird"\n' +
        '\n' +
        'b@example.org,"say ""hi"""\n' +
        'c@example.org,plain\n'
      const body = await expectImport(t, alice, 200, csv)
      assert.deepEqual(body.results.map((r: Json) => r.line), [2, 6, 7])
      const seen = await contactsByEmail(t, alice)
      assert.equal(seen.get('a@example.org')?.notes, 'first\nsecond\r\nthird')
      assert.equal(seen.get('b@example.org')?.notes, 'say "hi"')

      const bad = await expectImport(t, alice, 422, csv.replace('c@example.org', 'not-an-e-mail'))
      assert.deepEqual(bad.errors.map((e: Json) => e.location), ['body.line[7].email'])
    })

    it('refuses a file delimited by semicolons as such, naming line 1, and reads it with delimiter=;', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'email;first_name\nann@example.org;Ann\nbo@example.org;Bo, Jr.\n'
      const res = await expectImport(t, alice, 400, csv)
      assert.equal(res.errors[0].location, 'body.line[1]')
      assert.match(res.errors[0].message, /semicolon \(;\)/)
      assert.match(res.errors[0].message, /delimiter=%3B/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)

      const body = await expectImport(t, alice, 200, csv, '?delimiter=%3B')
      assert.equal(body.created, 2)
      assert.equal((await contactsByEmail(t, alice)).get('bo@example.org')?.first_name, 'Bo, Jr.')

      const tabs = await expectImport(t, alice, 400, 'email\tfirst_name\ncy@example.org\tCy\n')
      assert.match(tabs.errors[0].message, /a tab/)
      assert.equal((await expectImport(t, alice, 200, 'email\tfirst_name\ncy@example.org\tCy\n',
        '?delimiter=tab')).created, 1)
    })

    it('refuses a line longer than 64 KiB, naming it', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = `email,notes\na@example.org,short\nb@example.org,${'x'.repeat(70 * 1024)}\nc@example.org,short\n`
      const res = await expectImport(t, alice, 400, csv)
      assert.deepEqual(res.errors.map((e: Json) => e.location), ['body.line[3]'])
      assert.match(res.errors[0].message, /line 3 is longer than 65536 bytes/)
      // a record over 64 KiB through a quoted field of short lines: named by the line it starts on
      const quoted = `email,notes\na@example.org,"${'y'.repeat(1000)}\n`.padEnd(70 * 1024, 'z\n') + '"\n'
      const record = await expectImport(t, alice, 400, quoted)
      assert.equal(record.errors[0].location, 'body.line[2]')
      assert.equal((await contactsByEmail(t, alice)).size, 0)
    })

    it('refuses bytes that are not UTF-8, naming the line of the first bad one', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = Buffer.concat([
        Buffer.from('email,first_name\r\na@example.org,Ann\r\nb@example.org,B'),
        Buffer.from([0xe9]), // Latin-1 é
        Buffer.from('a\r\nc@example.org,C\xe9\r\n', 'latin1')
      ])
      const res = await expectImport(t, alice, 400, csv)
      assert.deepEqual(res.errors.map((e: Json) => e.location), ['body.line[3]'])
      assert.match(res.errors[0].message, /UTF-8/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)
    })

    it('refuses malformed CSV (an unclosed quote, a row of the wrong width), naming the line', async () => {
      const alice = await newTenant(t).user('alice')
      const unclosed = await expectImport(t, alice, 400,
        'email,first_name\na@example.org,Ann\nb@example.org,"Bo\nc@example.org,Cy\n')
      assert.deepEqual(unclosed.errors.map((e: Json) => e.location), ['body.line[3]'])
      assert.match(unclosed.errors[0].message, /not closed/)
      const width = await expectImport(t, alice, 400, 'email,first_name\na@example.org,Ann\n\nb@example.org,Bo,extra\n')
      assert.deepEqual(width.errors.map((e: Json) => e.location), ['body.line[4]'])
      const stray = await expectImport(t, alice, 400, 'email,first_name\na@example.org,A"nn\n')
      assert.deepEqual(stray.errors.map((e: Json) => e.location), ['body.line[2]'])
      const empty = await expectImport(t, alice, 400, '\r\n\r\n')
      assert.deepEqual(empty.errors.map((e: Json) => e.location), ['body.line[1]'])
      const noEmail = await expectImport(t, alice, 400, 'first_name\nAnn\n')
      assert.match(noEmail.errors[0].message, /a column for email/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)
    })

    it('answers 422 naming every bad row, its column and field, and writes nothing', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'email,First Name,website,Tags\n' +
        'a@example.org,Ann,,\n' +
        'b@example.org,Bo,https://b.example.org,\n' +
        'c@example.org,Cy,,\n' +
        'not-an-e-mail,Di,,\n' +
        `A@example.org,${'x'.repeat(256)},ftp://x.example.org,${'t'.repeat(101)}\n` +
        ',Nobody,,\n'
      const res = await expectImport(t, alice, 422, csv, `?mapping=${encodeURIComponent('First Name=first_name')}`)
      assert.match(res.detail, /^3 of 6 data rows have errors; nothing was imported$/)
      assert.deepEqual(res.errors.map((e: Json) => e.location), [
        'body.line[5].email',
        'body.line[6].first_name',
        'body.line[6].website',
        'body.line[6].tags[0]',
        'body.line[7].email'
      ])
      assert.equal(res.errors[0].message, 'column "email" (email): expected string to be RFC 5322 email')
      assert.equal(res.errors[0].value, 'not-an-e-mail')
      assert.match(res.errors[1].message, /^column "First Name" \(first_name\): expected length <= 255$/)
      assert.match(res.errors[3].message, /^column "Tags" \(tags\)/)
      assert.match(res.errors[4].message, /expected required property email/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)
    })

    it('applies a row repeating an e-mail (another case, spaces) to the contact an earlier row created', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const csv = 'email,first_name,company\n' +
        'ann@example.org,Ann,\n' +
        'bo@example.org,Bo,\n' +
        ' ANN@Example.org ,Ann,Acme\n' +
        'ANN@Example.org,Ann,\n' +
        'ann@example.org,,Acme\n'
      const dry = await expectImport(t, alice, 200, csv, '?dry_run=true')
      const expected = [[2, 'created'], [3, 'created'], [4, 'updated'], [5, 'unchanged'], [6, 'updated']]
      assert.deepEqual(dry.results.map((r: Json) => [r.line, r.status]), expected)
      assert.deepEqual(dry.results.map((r: Json) => r.contact_id), [null, null, null, null, null])
      assert.equal((await contactsByEmail(t, alice)).size, 0)
      const before = (await outboxTopics(t, tenant.id, 'contact.')).length

      const body = await expectImport(t, alice, 200, csv)
      assert.deepEqual(body.results.map((r: Json) => [r.line, r.status]), expected)
      assert.deepEqual([body.created, body.updated, body.unchanged], [2, 2, 1])
      const ann = body.results[0].contact_id
      assert.deepEqual(body.results.map((r: Json) => r.contact_id === ann), [true, false, true, true, true])
      const seen = await contactsByEmail(t, alice)
      assert.equal(seen.size, 2, 'one contact per e-mail')
      assert.deepEqual([seen.get('ann@example.org')?.id, seen.get('ann@example.org')?.company], [ann, 'Acme'])
      assert.deepEqual(
        (await outboxTopics(t, tenant.id, 'contact.')).slice(before),
        ['contact.created', 'contact.created', 'contact.updated', 'contact.updated']
      )
      const again = await expectImport(t, alice, 200, 'email,first_name,company\nANN@example.org , Ann,Acme\n')
      assert.deepEqual([again.results[0].status, again.results[0].contact_id], ['updated', ann], 'the spelling changed')
      const same = await expectImport(t, alice, 200, 'email,first_name,company\nANN@example.org , Ann,Acme\n')
      assert.deepEqual([same.results[0].status, same.results[0].contact_id], ['unchanged', ann])
    })

    it('reads phone numbers with the request\'s region, keeps an invalid one as typed and flags its row', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'email,phone_primary,phone_work\n' +
        'ann@example.org,06 28 23 04 55,\n' +
        'bo@example.org,030 1234567,not a number\n'
      const bad = await expectImport(t, alice, 400, csv, '?phone_region=XX')
      assert.deepEqual(bad.errors.map((e: Json) => e.location), ['query.phone_region'])
      assert.equal((await contactsByEmail(t, alice)).size, 0)

      const body = await expectImport(t, alice, 200, csv, '?phone_region=fr')
      assert.deepEqual(body.results.map((r: Json) => r.invalid_phones), [undefined, ['phone_work']])
      const seen = await contactsByEmail(t, alice)
      const ann = seen.get('ann@example.org')
      const bo = seen.get('bo@example.org')
      assert.deepEqual([ann?.phone_primary, ann?.phone_primary_e164, ann?.invalid_phones],
        ['06 28 23 04 55', '+33628230455', []])
      assert.deepEqual([bo?.phone_primary_e164, bo?.phone_work, bo?.phone_work_e164],
        ['+33301234567', 'not a number', null])
      // the same numbers, read as German ones: the second row's primary number is another one now
      const de = await expectImport(t, alice, 200, csv, '?phone_region=DE')
      assert.deepEqual(de.results.map((r: Json) => r.status), ['updated', 'updated'])
      assert.equal((await contactsByEmail(t, alice)).get('bo@example.org')?.phone_primary_e164, '+49301234567')
      const found = await getJson(t, alice, '/api/v1/contacts/search?query=%2B49%2030%201234567')
      assert.deepEqual(found.items.map((c: Json) => c.email), ['bo@example.org'])
    })

    it('lists at most 1000 row errors', async () => {
      const alice = await newTenant(t).user('alice')
      const csv = 'email\n' + Array.from({ length: 1500 }, (_v, i) => `bad-${i}\n`).join('')
      const res = await expectImport(t, alice, 422, csv)
      assert.equal(res.errors.length, 1000)
      assert.equal(res.errors[999].location, 'body.line[1001].email')
      assert.match(res.detail, /1500 of 1500/)
    })

    it('refuses a row whose e-mail matches only a contact of another member, writing nothing', async () => {
      const tenant = newTenant(t)
      const callers = await orgCallers(tenant)
      const theirs = (await expectStatus(t, callers.alice, 'POST', '/api/v1/contacts', 201, {
        email: 'shared@example.org', first_name: 'Alice\'s'
      })).json()
      const res = await expectImport(t, callers.bob, 422,
        'email,first_name\nnew@example.org,New\nshared@example.org,Bob\'s\n')
      assert.deepEqual(res.errors.map((e: Json) => e.location), ['body.line[3].email'])
      const seen = await contactsByEmail(t, callers.bob)
      assert.equal(seen.size, 1)
      assert.equal(seen.get('shared@example.org')?.first_name, 'Alice\'s')
      assert.equal(seen.get('shared@example.org')?.id, theirs.id)
      // an admin of the organization may change it
      const orgAdmin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
      const admin = await expectImport(t, orgAdmin, 200, 'email,first_name\nshared@example.org,Admin\'s\n')
      assert.equal(admin.results[0].status, 'updated')
    })

    it('answers a dry run as the import would, and writes nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const ann = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
        email: 'ann@example.org', first_name: 'Ann'
      })).json()
      const topics = (await outboxTopics(t, tenant.id)).length
      const csv = 'email,first_name\nann@example.org,Anne\nbo@example.org,Bo\ncy@example.org,Cy\n'
      const dry = await expectImport(t, alice, 200, csv, '?dry_run=true')
      assert.deepEqual([dry.created, dry.updated, dry.unchanged], [2, 1, 0])
      assert.deepEqual(dry.results, [
        { line: 2, status: 'updated', contact_id: ann.id },
        { line: 3, status: 'created', contact_id: null },
        { line: 4, status: 'created', contact_id: null }
      ])
      const seen = await contactsByEmail(t, alice)
      assert.deepEqual([...seen.keys()], ['ann@example.org'])
      assert.equal(seen.get('ann@example.org')?.first_name, 'Ann')
      assert.equal((await outboxTopics(t, tenant.id)).length, topics)
      const bad = await expectImport(t, alice, 422, `${csv}bad,Bad\n`, '?dry_run=true')
      assert.equal(bad.errors[0].location, 'body.line[5].email')

      const real = await expectImport(t, alice, 200, csv)
      assert.deepEqual([real.created, real.updated, real.unchanged], [2, 1, 0])
      assert.equal((await contactsByEmail(t, alice)).size, 3)
    })

    it('takes up to 50 000 data rows and refuses 50 001 before reading any contact', async () => {
      const alice = await newTenant(t).user('alice')
      const most = await expectImport(t, alice, 200, `email,first_name\n${rows(50_000)}`, '?dry_run=true')
      assert.equal(most.created, 50_000)
      assert.equal(most.results[49_999].line, 50_001)
      const res = await expectImport(t, alice, 413, `email,first_name\n${rows(50_001)}`)
      assert.match(res.detail, /more than 50000 data rows/)
      assert.equal((await contactsByEmail(t, alice)).size, 0)
    })

    it('refuses a body over 16 MiB with 413', async () => {
      const alice = await newTenant(t).user('alice')
      const line = `${'n'.repeat(1000)}\n`
      const res = await expectImport(t, alice, 413, `notes\n${line.repeat(Math.ceil(16 * 1024 * 1024 / line.length))}`)
      assert.match(res.detail, /16 MiB/)
    })

    it('never matches a contact of another tenant', async () => {
      const a = await newTenant(t).user('alice')
      const b = await newTenant(t).user('alice')
      const theirs = (await expectStatus(t, a, 'POST', '/api/v1/contacts', 201, {
        email: 'ann@example.org', first_name: 'Tenant A'
      })).json()
      const body = await expectImport(t, b, 200, 'email,first_name\nann@example.org,Tenant B\n')
      assert.equal(body.results[0].status, 'created')
      assert.notEqual(body.results[0].contact_id, theirs.id)
      assert.equal((await contactsByEmail(t, a)).get('ann@example.org')?.first_name, 'Tenant A')
      assert.equal((await contactsByEmail(t, b)).get('ann@example.org')?.first_name, 'Tenant B')
    })

    it('refuses a viewer with 403 before reading the body', async () => {
      const tenant = newTenant(t)
      const viewer = await tenant.user('vera', ['viewer'])
      const admin = await tenant.user('root', ['admin'])
      const res = await expectImport(t, viewer, 403, 'email\nann@example.org\n')
      assert.equal(res.status, 403)
      assert.equal((await getJson(t, admin, '/api/v1/contacts')).total, 0)
    })

    it('costs 20 rate-limit tokens', async () => {
      const alice = await newTenant(t).user('alice')
      const a = await t.as(alice, { method: 'GET', url: '/api/v1/contacts' })
      const b = await importCsv(t, alice, 'email\nx@example.org\n')
      assert.equal(b.statusCode, 200, b.body)
      assert.equal(Number(a.headers['ratelimit-remaining']) - Number(b.headers['ratelimit-remaining']), 20)
    })
  })
}
