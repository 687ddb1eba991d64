import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, loadConfig } from '../../config.ts'
import { ApiError } from '../../platform/http/errors.ts'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withClient } from '../../../test/helpers/pg-client.ts'
import { nodesOf, rowsRead, type PlanNode } from '../../../test/helpers/plans.ts'
import { watchStatements } from '../../../test/helpers/statements.ts'
import { insertRow } from '../../../test/helpers/rows.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { phoneKeys, phoneSearch, requestRegion, toE164, withPhones } from './contacts.phones.ts'
import { readUnreadPhones } from './contacts.service.ts'

type Json = Record<string, any>

/** The spellings of one French mobile number that a search must all resolve to it (region FR). */
const SPELLINGS = ['+33 6 28 23 04 55', '+33628230455', '0628230455', '06.28.23.04.55', '06 28 23 04 55',
  '0033628230455']

describe('contacts.phones: reading numbers', () => {
  it('stores the E.164 form of a valid number, read with the region when it has no country code', () => {
    assert.equal(toE164('06 28 23 04 55', 'FR'), '+33628230455')
    assert.equal(toE164('+33 6 28 23 04 55', 'DE'), '+33628230455', 'a country code wins over the region')
    assert.equal(toE164('030 1234567', 'DE'), '+49301234567')
    assert.equal(toE164('+33 6 28 23 04 55 ext. 12', undefined), '+33628230455', 'an extension is not part of it')
    assert.equal(toE164('06 28 23 04 55', undefined), null, 'no region: a national number cannot be read')
    assert.equal(toE164('06 28 23 04', 'FR'), null, 'too short')
    assert.equal(toE164('ask reception', 'FR'), null)
    assert.equal(toE164('  ', 'FR'), null)
    assert.equal(toE164(null, 'FR'), null)
  })

  it('reads every phone field of a new contact, only the written ones of a read one, all of an unread one', () => {
    assert.deepEqual(withPhones({ first_name: 'A', phone_work: '06 28 23 04' }, undefined, 'FR'), {
      first_name: 'A',
      phone_work: '06 28 23 04',
      phone_primary_e164: null,
      phone_secondary_e164: null,
      phone_work_e164: null,
      invalid_phones: ['phone_work']
    })
    const stored = {
      phone_primary: '06 28 23 04 55',
      phone_primary_e164: '+33628230455',
      phone_secondary: null,
      phone_secondary_e164: null,
      phone_work: 'desk',
      phone_work_e164: null,
      invalid_phones: ['phone_work' as const]
    }
    assert.deepEqual(withPhones({ first_name: 'B' }, stored, 'DE'), { first_name: 'B' }, 'no phone field: nothing')
    assert.deepEqual(withPhones({ phone_secondary: '030 1234567' }, stored, 'DE'), {
      phone_secondary: '030 1234567',
      phone_secondary_e164: '+49301234567',
      invalid_phones: ['phone_work']
    }, 'a stored number keeps the form of its own region')
    assert.deepEqual(withPhones({ phone_work: null }, stored, 'DE'), {
      phone_work: null, phone_work_e164: null, invalid_phones: []
    })
    assert.deepEqual(withPhones({ first_name: 'C' },
      { ...stored, phone_primary_e164: null, invalid_phones: null }, 'FR'), {
      first_name: 'C',
      phone_primary_e164: '+33628230455',
      phone_secondary_e164: null,
      phone_work_e164: null,
      invalid_phones: ['phone_work']
    })
  })

  it('reads a search that looks like a phone number as a number, else as the end of numbers, from 6 digits', () => {
    // every spelling of 06 28 23 04 55 is +33628230455 (reversed digits), or a typed number ending in 628230455
    const number = { number: '55403282633', national: '554032826' }
    for (const s of SPELLINGS) assert.deepEqual(phoneSearch(s, 'FR'), number, s)
    assert.deepEqual(phoneSearch('+33 6 28 23 04 55', undefined), number)
    assert.deepEqual(phoneSearch('0628230455', undefined), { suffix: '554032826' }, 'no region: leading zeros dropped')
    assert.deepEqual(phoneSearch(' 230455 ', 'FR'), { suffix: '554032' })
    assert.deepEqual(phoneSearch('(212) 736-5000', 'US'), { number: '00056372121', national: '0005637212' })
    assert.equal(phoneSearch('30455', 'FR'), undefined, 'five digits: text only')
    assert.deepEqual(phoneSearch('001234', 'FR'), { suffix: '432100' }, 'a short ending keeps its zeros')
    assert.deepEqual(phoneSearch('0030455', 'FR'), { suffix: '5540300' }, 'zeros kept: five digits without them')
    assert.equal(phoneSearch('00455', 'FR'), undefined, 'five digits, zeros included: text only')
    assert.equal(phoneSearch('Ann 0628230455', 'FR'), undefined)
    assert.equal(phoneSearch('ann@example.com', 'FR'), undefined)
    assert.equal(phoneSearch('', 'FR'), undefined)
  })

  it('keys duplicates by the digits of each number, from 6 digits', () => {
    assert.deepEqual(phoneKeys({
      phone_primary: '06 28 23 04 55',
      phone_primary_e164: '+33628230455',
      phone_secondary: '12 34',
      phone_secondary_e164: null,
      phone_work: '+33 6 28 23 04 55',
      phone_work_e164: '+33628230455',
      invalid_phones: ['phone_secondary']
    }), ['55403282633'])
  })

  it('takes a region from the request (any case) or the default; refuses an unknown one naming the parameter', () => {
    assert.equal(requestRegion('de', 'FR'), 'DE')
    assert.equal(requestRegion(undefined, 'FR'), 'FR')
    assert.equal(requestRegion(undefined, undefined), undefined)
    for (const bad of ['ZZ', 'XX', 'FRA']) {
      assert.throws(() => requestRegion(bad, 'FR'), (err: unknown) =>
        err instanceof ApiError && err.status === 400 && err.errors[0]?.location === 'query.phone_region')
    }
  })

  it('validates PHONE_DEFAULT_REGION at start', () => {
    assert.equal(loadConfig({}).phoneDefaultRegion, undefined)
    assert.equal(loadConfig({ PHONE_DEFAULT_REGION: 'fr' }).phoneDefaultRegion, 'FR')
    for (const bad of ['ZZ', 'France', '33']) {
      assert.throws(() => loadConfig({ PHONE_DEFAULT_REGION: bad }), (err: unknown) =>
        err instanceof ConfigError && err.variable === 'PHONE_DEFAULT_REGION' && err.message.includes(bad))
    }
  })
})

async function createContact (t: TestApp, token: string, body: Json, query = ''): Promise<Json> {
  return (await expectStatus(t, token, 'POST', `/api/v1/contacts${query}`, 201, body)).json()
}

/** The ids the list (`?search=`) and the search (`?query=`) find for a term, the list's oldest first. */
async function found (
  t: TestApp,
  token: string,
  term: string,
  query = ''
): Promise<{ list: string[], search: string[] }> {
  const q = encodeURIComponent(term)
  const list = await getJson(t, token, `/api/v1/contacts?search=${q}&sort_dir=asc&size=100${query}`)
  const search = await getJson(t, token, `/api/v1/contacts/search?query=${q}&limit=100${query}`)
  assert.equal(search.total, search.items.length, term)
  assert.equal(list.total, list.items.length, term)
  return { list: list.items.map((c: Json) => c.id), search: search.items.map((c: Json) => c.id).sort() }
}

for (const kind of databases()) {
  describe(`${kind}: contact phone numbers (PHONE_DEFAULT_REGION=FR)`, () => {
    const t = useTestApp(kind, { env: { PHONE_DEFAULT_REGION: 'FR' } })

    it('finds a number by every spelling and by a suffix of 6 digits, not of 5, ' +
      'in any of the three fields', async () => {
      const alice = await newTenant(t).user('alice')
      const c = await createContact(t, alice, { first_name: 'Mobile', phone_primary: '06 28 23 04 55' })
      assert.deepEqual(
        [c.phone_primary, c.phone_primary_e164, c.phone_secondary_e164, c.invalid_phones],
        ['06 28 23 04 55', '+33628230455', null, []]
      )
      const work = await createContact(t, alice, { first_name: 'Desk', phone_work: '+33 6 28 23 04 55' })
      const other = await createContact(t, alice, { first_name: 'Other', phone_secondary: '+33 6 11 23 04 55' })
      await createContact(t, alice, { first_name: 'Nobody' })
      for (const term of SPELLINGS) {
        assert.deepEqual(await found(t, alice, term), { list: [c.id, work.id], search: [c.id, work.id].sort() }, term)
      }
      // the last 6 digits are those of the other number too; its last 7 are not
      assert.deepEqual((await found(t, alice, '230455')).list, [c.id, work.id, other.id])
      assert.deepEqual((await found(t, alice, '8 230455')).list, [c.id, work.id])
      // 5 digits: a text search of names, e-mail and company only, which holds no phone number
      assert.deepEqual(await found(t, alice, '30455'), { list: [], search: [] })
      assert.deepEqual((await found(t, alice, 'mobile')).list, [c.id], 'text search as before')
      const page = await getJson(t, alice, `/api/v1/contacts?search=${encodeURIComponent('06 28 23 04 55')}&size=1`)
      assert.equal(page.total, 2)
      const next = await getJson(t, alice, `/api/v1/contacts?search=${encodeURIComponent('06 28 23 04 55')}&size=1` +
        `&cursor=${encodeURIComponent(page.next_cursor as string)}`)
      assert.deepEqual([...page.items, ...next.items].map((i: Json) => i.id).sort(), [c.id, work.id].sort())
    })

    it('keeps an invalid number as typed, flags it in the body, and finds it by its digits', async () => {
      const alice = await newTenant(t).user('alice')
      const c = await createContact(t, alice, {
        first_name: 'Odd', phone_primary: '06 28 23 04', phone_secondary: '06 11 22 33 44', phone_work: 'ask reception'
      })
      const read = await getJson(t, alice, `/api/v1/contacts/${c.id as string}`)
      for (const body of [c, read]) {
        assert.deepEqual(
          ['phone_primary', 'phone_primary_e164', 'phone_secondary_e164', 'phone_work',
            'phone_work_e164'].map(f => body[f]),
          ['06 28 23 04', null, '+33611223344', 'ask reception', null]
        )
        assert.deepEqual(body.invalid_phones, ['phone_primary', 'phone_work'])
      }
      assert.deepEqual((await found(t, alice, '06 28 23 04')).list, [c.id])
      assert.deepEqual((await found(t, alice, '282304')).list, [c.id])
      const fixed = await expectStatus(t, alice, 'PATCH', `/api/v1/contacts/${c.id as string}`, 200, {
        phone_primary: '06 28 23 04 55'
      })
      assert.deepEqual([fixed.json().phone_primary_e164, fixed.json().invalid_phones], ['+33628230455', ['phone_work']])
    })

    it('reads numbers with the request\'s phone_region, else the default, ' +
      'each stored number with its own', async () => {
      const alice = await newTenant(t).user('alice')
      const berlin = await createContact(t, alice, { phone_primary: '030 1234567' }, '?phone_region=de')
      const paris = await createContact(t, alice, { phone_primary: '030 1234567' })
      assert.deepEqual([berlin.phone_primary_e164, paris.phone_primary_e164], ['+49301234567', '+33301234567'])
      assert.deepEqual((await found(t, alice, '+49 30 1234567')).list, [berlin.id])
      assert.deepEqual((await found(t, alice, '030 1234567', '&phone_region=DE')).list, [berlin.id])
      assert.deepEqual((await found(t, alice, '03 01 23 45 67')).list, [paris.id])

      const url = `/api/v1/contacts/${berlin.id as string}`
      const patched =
        (await expectStatus(t, alice, 'PATCH', `${url}?phone_region=GB`, 200, { phone_work: '020 7946 0958' })).json()
      assert.deepEqual([patched.phone_primary_e164, patched.phone_work_e164], ['+49301234567', '+442079460958'])
      const put = (await expectStatus(t, alice, 'PUT', url, 200, {
        is_favorite: false, phone_secondary: '06 28 23 04 55'
      })).json()
      assert.deepEqual(
        [put.phone_primary, put.phone_primary_e164, put.phone_secondary_e164, put.phone_work_e164, put.invalid_phones],
        [null, null, '+33628230455', null, []],
        'PUT reads what it replaces'
      )
      const upserted = (await expectStatus(t, alice, 'POST', '/api/v1/contacts/upsert?phone_region=BE', 200, {
        contacts: [{ email: 'be@example.org', phone_primary: '02 123 45 67' }]
      })).json()
      assert.equal(upserted.items[0].contact.phone_primary_e164, '+3221234567')
    })

    it('refuses an unknown phone_region on every route with a 400 naming it, and changes nothing', async () => {
      const alice = await newTenant(t).user('alice')
      const c = await createContact(t, alice, { first_name: 'Kept', phone_primary: '06 28 23 04 55' })
      for (const region of ['ZZ', 'FRA', '1']) {
        for (const [method, url, payload] of [
          ['POST', '/api/v1/contacts', { first_name: 'New', phone_primary: '030 1234567' }],
          ['PATCH', `/api/v1/contacts/${c.id as string}`, { phone_primary: '030 1234567' }],
          ['PUT', `/api/v1/contacts/${c.id as string}`, { is_favorite: true }],
          ['POST', '/api/v1/contacts/upsert', { contacts: [{ email: 'x@example.org' }] }],
          ['GET', '/api/v1/contacts?search=0628230455'],
          ['GET', '/api/v1/contacts/search?query=0628230455']
        ] as const) {
          const sep = url.includes('?') ? '&' : '?'
          const res = await expectStatus(t, alice, method, `${url}${sep}phone_region=${region}`, 400, payload)
          assert.deepEqual(res.json().errors.map((e: Json) => e.location), ['query.phone_region'], `${method} ${url}`)
        }
      }
      const list = await getJson(t, alice, '/api/v1/contacts')
      assert.equal(list.total, 1)
      const { $schema: _a, ...now } = await getJson(t, alice, `/api/v1/contacts/${c.id as string}`)
      const { $schema: _b, possible_duplicates: _c, ...before } = c
      assert.deepEqual(now, before)
    })

    it('reads the numbers of a contact written before they were read at its next write', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      await insertRow(t, tenant.id, 'contacts', {
        owner_id: 'alice', org_id: null, first_name: 'Legacy', phone_primary: '06 28 23 04 55'
      })
      const [legacy] = (await getJson(t, alice, '/api/v1/contacts')).items as Json[]
      assert.deepEqual([legacy?.phone_primary_e164, legacy?.invalid_phones], [null, null], 'not read yet')
      // found by the digits it was typed with, and by the national number of any spelling
      assert.deepEqual((await found(t, alice, '230455')).list, [legacy?.id])
      assert.deepEqual((await found(t, alice, '+33 6 28 23 04 55')).list, [legacy?.id])
      const url = `/api/v1/contacts/${legacy?.id as string}`
      const favorite = (await expectStatus(t, alice, 'PATCH', `${url}/favorite`, 200, { is_favorite: true })).json()
      assert.equal(favorite.invalid_phones, null, 'the favorite flag alone writes no field')
      const patched = (await expectStatus(t, alice, 'PATCH', url, 200, { first_name: 'Read' })).json()
      assert.deepEqual([patched.phone_primary_e164, patched.invalid_phones], ['+33628230455', []])
    })

    it('the worker reads the numbers of contacts written before they were read, ' +
      'and leaves read ones alone', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      await insertRow(t, tenant.id, 'contacts', {
        owner_id: 'alice', org_id: null, first_name: 'Old', phone_primary: '06 28 23 04 55', phone_work: '12'
      })
      const fresh = await createContact(t, alice, { first_name: 'New', phone_primary: '+1 202 555 0100' })
      const [old] = (await getJson(t, alice, '/api/v1/contacts?search=Old')).items as Json[]
      assert.equal(old?.invalid_phones, null)
      const etagOf = async (id: string) =>
        (await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${id}` })).headers.etag
      const freshTag = await etagOf(fresh.id)
      const oldTag = await etagOf(old?.id)
      assert.ok(await readUnreadPhones(t.ctx.db, 'FR') >= 1)
      const read = await getJson(t, alice, `/api/v1/contacts/${old?.id as string}`)
      assert.deepEqual([read.phone_primary_e164, read.phone_work_e164, read.invalid_phones],
        ['+33628230455', null, ['phone_work']])
      assert.notEqual(await etagOf(old?.id), oldTag, 'a new revision: its body changed')
      assert.equal(await etagOf(fresh.id), freshTag, 'a contact already read is not written again')
      // nothing left: a second pass reads nothing of this tenant (another suite's tenants may still have some)
      await readUnreadPhones(t.ctx.db, 'FR')
      assert.equal(await readUnreadPhones(t.ctx.db, 'FR'), 0)
    })
  })

  describe(`${kind}: contact phone numbers without a default region`, () => {
    const t = useTestApp(kind)

    it('keeps a national number as typed and flags it, unless the request names its region', async () => {
      const alice = await newTenant(t).user('alice')
      const typed = await createContact(t, alice, { phone_primary: '06 28 23 04 55', phone_work: '+33 6 11 22 33 44' })
      assert.deepEqual([typed.phone_primary_e164, typed.phone_work_e164, typed.invalid_phones],
        [null, '+33611223344', ['phone_primary']])
      const read = await createContact(t, alice, { phone_primary: '06 28 23 04 55' }, '?phone_region=FR')
      assert.deepEqual([read.phone_primary_e164, read.invalid_phones], ['+33628230455', []])
      // one number: each spelling finds both, the one stored as typed by its national number
      assert.deepEqual((await found(t, alice, '+33 6 28 23 04 55')).list, [typed.id, read.id])
      assert.deepEqual((await found(t, alice, '06 28 23 04 55')).list, [typed.id, read.id])
    })
  })
}

/** The rows of `contacts` a plan read: those its scans of the table returned and those they filtered out. */
const contactRowsRead = (plan: PlanNode): number => nodesOf(plan)
  .filter(n => n['Relation Name'] === 'contacts')
  .reduce((sum, n) => sum + rowsRead(n), 0)

/** The statements (text and parameters) one request sends through `pg`. */
interface Statement { text: string, values: unknown[] }

async function statementsOf (t: TestApp, token: string, url: string): Promise<Statement[]> {
  const sent: Statement[] = []
  const watch = watchStatements(t, (text, values) => { sent.push({ text, values }) })
  try {
    const res = await t.as(token, { method: 'GET', url })
    assert.equal(res.statusCode, 200, res.body)
  } finally {
    watch.restore()
  }
  return sent
}

const ROWS = 20_000
const PHONE_INDEXES = ['contacts_phone_primary', 'contacts_phone_secondary', 'contacts_phone_work']

for (const kind of databases().filter(k => k === 'pg')) {
  describe(`${kind}: the phone search reads the contacts_phone_* indexes`, () => {
    const t = useTestApp(kind, { env: { PHONE_DEFAULT_REGION: 'FR' } })

    /**
     * The plan of a statement as the request's role runs it (the tenant's scope, `collab_app` under row-level
     * security), executed (`ANALYZE`) and rolled back; `withoutPhoneIndexes` drops the three indexes in that
     * transaction first, to show what PostgreSQL does without them.
     */
    async function planOf (tenantId: string, statement: Statement, withoutPhoneIndexes = false): Promise<PlanNode> {
      return await withClient(t.database.migrationUrl ?? '', async c => {
        await c.query('begin')
        try {
          if (withoutPhoneIndexes) await c.query(`drop index ${PHONE_INDEXES.join(', ')}`)
          await c.query("select set_config('app.tenant_id', $1, true), set_config('app.user_id', 'alice', true)",
            [tenantId])
          await c.query('set local role collab_app')
          const { rows } = await c.query(`explain (analyze, format json) ${statement.text}`, statement.values)
          return (rows[0] as { 'QUERY PLAN': Array<{ Plan: PlanNode }> })['QUERY PLAN'][0]?.Plan as PlanNode
        } finally {
          await c.query('rollback')
        }
      })
    }

    it('answers a phone search of the list and of the search by a bitmap OR of the three ' +
      'indexes, not a scan', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      // one owner's 20 000 contacts, each with two numbers: without the phone indexes every one of them is read
      await withClient(t.database.migrationUrl ?? '', async c => {
        await c.query(`insert into contacts (tenant_id, owner_id, first_name, phone_primary, phone_primary_e164,
            phone_work, phone_work_e164, invalid_phones)
          select $1, 'alice', 'Person ' || i, '+33 6 1' || lpad(i::text, 7, '0'), '+3361' || lpad(i::text, 7, '0'),
            '030 ' || lpad(i::text, 7, '0'), '+4930' || lpad(i::text, 7, '0'), '{}'
          from generate_series(1, ${ROWS}) as i`, [tenant.id])
        await c.query('analyze contacts')
      })
      const c = await createContact(t, alice, { first_name: 'Target', phone_secondary: '06 28 23 04 55' })

      for (const url of [
        `/api/v1/contacts/search?query=${encodeURIComponent('+33 6 28 23 04 55')}`,
        '/api/v1/contacts?search=230455'
      ]) {
        const body = await getJson(t, alice, url)
        assert.deepEqual(body.items.map((i: Json) => i.id), [c.id], url)
        const statements = (await statementsOf(t, alice, url)).filter(s => s.text.includes('phone_primary_rev'))
        assert.ok(statements.length > 0, url)
        for (const statement of statements) {
          const plan = await planOf(tenant.id, statement)
          const nodes = nodesOf(plan)
          const indexes = new Set(nodes.map(n => n['Index Name']))
          for (const index of PHONE_INDEXES) {
            assert.ok(indexes.has(index), `${url}: ${index} unused: ${JSON.stringify(plan)}`)
          }
          assert.ok(nodes.some(n => n['Node Type'] === 'BitmapOr'), url)
          assert.ok(!nodes.some(n => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'contacts'), url)
          assert.ok(contactRowsRead(plan) < 10, `${url}: ${contactRowsRead(plan)} rows of contacts read`)
          // the same statement without the indexes reads every contact of the owner
          const without = await planOf(tenant.id, statement, true)
          assert.ok(contactRowsRead(without) >= ROWS,
            `${url}: ${contactRowsRead(without)} rows read without the indexes`)
        }
      }
    })
  })
}
