import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  databases, newTenant, orgCallers, useTestApp, type Tenant, type TestApp
} from '../../../test/helpers/build-app.ts'
import { itemsByCursor, pagesByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { expectStatus, getJson } from '../../../test/helpers/requests.ts'
import { updateRows } from '../../../test/helpers/rows.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { FEW_CONTACTS, listDuplicates } from './contacts.duplicates.repository.ts'

type Json = Record<string, any>

const URL = '/api/v1/contacts/duplicates'

async function createContact (t: TestApp, token: string, body: Json): Promise<string> {
  return (await expectStatus(t, token, 'POST', '/api/v1/contacts', 201, body)).json().id
}

/**
 * Sets E.164 numbers through SQL: the write path that fills them from the typed numbers (contacts.phones.ts) is another
 * change of issue #23, so these tests do not depend on how it reads a number.
 */
async function setE164 (
  t: TestApp,
  tenantId: string,
  id: string,
  numbers: { phone_primary_e164?: string, phone_secondary_e164?: string, phone_work_e164?: string }
): Promise<void> {
  await updateRows(t, tenantId, 'contacts', numbers, { id })
}

/**
 * The two ways a page is read (contacts.duplicates.repository.ts): `few`, a caller who sees at most FEW_CONTACTS
 * contacts, whose keys are read from their contacts; `many`, a caller of org-a when org-a also holds FEW_CONTACTS
 * contacts without keys (no e-mail, phone or company), who walks the tenant's key indexes.
 */
const MODES = ['few', 'many'] as const

async function pad (t: TestApp, tenantId: string, mode: typeof MODES[number]): Promise<void> {
  if (mode === 'few') return
  await withTenant(t.ctx.db, { tenantId }, async trx => {
    await trx.insertInto('contacts').values(Array.from({ length: FEW_CONTACTS }, (_, i) => ({
      tenant_id: tenantId, owner_id: 'filler', org_id: 'org-a', first_name: `Filler ${i}`
    }))).execute()
  })
}

/** Groups as `[reason, key, count, ids of the contacts shown]`, in the order of the answer. */
const summary = (items: Json[]) => items.map(g => [g.reason, g.key, g.count, g.contacts.map((c: Json) => c.id)])

for (const kind of databases()) {
  for (const mode of MODES) {
    describe(`${kind}: contact duplicates (${mode})`, () => {
      const t = useTestApp(kind)
      /** A fresh tenant, padded for the mode. */
      const tenantOf = async (): Promise<Tenant> => {
        const tenant = newTenant(t)
        await pad(t, tenant.id, mode)
        return tenant
      }

      it('groups e-mails whatever their case and surrounding spaces; /duplicates is not taken for an id', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const a = await createContact(t, alice, { first_name: 'Ada', email: 'Ada@Example.org' })
        const b = await createContact(t, alice, { first_name: 'Ada L.', email: 'ada@example.ORG' })
        const c = await createContact(t, alice, { first_name: 'A.', email: 'ada@example.org' })
        // stored before e-mails were trimmed on write: the key trims them
        await updateRows(t, tenant.id, 'contacts', { email: '  ADA@example.org ' }, { id: c })
        await createContact(t, alice, { first_name: 'Grace', email: 'grace@example.org' })

        const page = await getJson(t, alice, URL)
        assert.deepEqual(summary(page.items), [['email', 'ada@example.org', 3, [a, b, c]]])
        assert.equal(page.next_cursor, null)
        // every field of a contact, as GET /contacts/{id} shows it
        const { $schema: _schema, ...read } = await getJson(t, alice, `/api/v1/contacts/${a}`)
        assert.deepEqual(page.items[0].contacts[0], read)
      })

      it('groups one E.164 number across the three phone fields, each contact once', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const contact = async (name: string) => await createContact(t, alice, { first_name: name })
        const a = await contact('A')
        const b = await contact('B')
        const c = await contact('C')
        const d = await contact('D')
        const e = await contact('E')
        await setE164(t, tenant.id, a, { phone_primary_e164: '+41441234567' })
        await setE164(t, tenant.id, b, { phone_work_e164: '+41441234567', phone_primary_e164: '+41440000001' })
        await setE164(t, tenant.id, c, { phone_secondary_e164: '+41441234567' })
        // one contact with one number in two fields is no group
        await setE164(t, tenant.id, d, { phone_primary_e164: '+41449999999', phone_secondary_e164: '+41449999999' })
        // the same number in two fields of one contact and in a field of another: two contacts
        await setE164(t, tenant.id, e, {
          phone_primary_e164: '+41448888888', phone_secondary_e164: '+41448888888', phone_work_e164: '+41440000001'
        })

        const page = await getJson(t, alice, `${URL}?reason=phone`)
        assert.deepEqual(summary(page.items), [
          ['phone', '+41440000001', 2, [b, e]],
          ['phone', '+41441234567', 3, [a, b, c]]
        ])
      })

      it('groups first and last name with the company: case and spaces ignored, accents kept, ' +
        'a company needed', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const a = await createContact(t, alice, {
          first_name: 'Ada', last_name: 'Lovelace', company: 'Analytical Engines'
        })
        const b = await createContact(t, alice, {
          first_name: ' ada ', middle_name: 'King', last_name: 'LOVELACE', company: 'analytical   engines '
        })
        // the same name with another company, with none, or with an accent: no group with the others
        await createContact(t, alice, { first_name: 'Ada', last_name: 'Lovelace', company: 'Babbage & Co' })
        await createContact(t, alice, { first_name: 'Ada', last_name: 'Lovelace' })
        await createContact(t, alice, { first_name: 'Adà', last_name: 'Lovelace', company: 'Analytical Engines' })
        // a company without any name is no key
        await createContact(t, alice, { company: 'Analytical Engines' })
        await createContact(t, alice, { company: 'Analytical Engines', nickname: 'x' })

        const page = await getJson(t, alice, `${URL}?reason=name_company`)
        assert.deepEqual(summary(page.items), [['name_company', 'ada lovelace | analytical engines', 2, [a, b]]])
        assert.deepEqual((await getJson(t, alice, `${URL}?reason=email`)).items, [])
      })

      it('shows only what the caller sees: no other member\'s personal contact, organization or tenant, ' +
        'not even counted', async () => {
        const tenant = await tenantOf()
        const { admin, alice, bob, carol, erinBefore } = await orgCallers(tenant)
        const shared = { email: 'shared@example.org', first_name: 'Sam', last_name: 'Shared', company: 'Acme' }
        const a1 = await createContact(t, alice, shared)
        const c1 = await createContact(t, carol, shared)
        const c2 = await createContact(t, carol, shared)
        await createContact(t, erinBefore, shared)
        await createContact(t, erinBefore, shared)
        const other = newTenant(t)
        await createContact(t, await other.user('alice', ['member'], { orgId: 'org-a' }), shared)
        await createContact(t, await other.user('alice', ['member'], { orgId: 'org-a' }), shared)

        // one contact of org-a: no group for alice and bob, whatever the others hold
        assert.deepEqual((await getJson(t, alice, URL)).items, [])
        assert.deepEqual((await getJson(t, bob, URL)).items, [])

        const a2 = await createContact(t, bob, shared)
        // by key: "sam shared…" before "shared@…"
        const expected = (ids: string[]) => [
          ['name_company', 'sam shared | acme', ids.length, ids],
          ['email', 'shared@example.org', ids.length, ids]
        ]
        assert.deepEqual(summary((await getJson(t, alice, URL)).items), expected([a1, a2]))
        assert.deepEqual(summary((await getJson(t, carol, URL)).items), expected([c1, c2]))
        // admins see every organization's contacts, never another member's personal ones
        assert.deepEqual(summary((await getJson(t, admin, URL)).items), expected([a1, c1, c2, a2]))
        // erin's personal contacts are hers alone; the other tenant's pair is its own
        assert.equal((await getJson(t, erinBefore, URL)).items[0].count, 2)
        assert.deepEqual((await getJson(t, await tenant.user('dave', ['viewer'], { orgId: 'org-c' }), URL)).items, [])
      })

      it('shows a group\'s first ten contacts, oldest first, and counts them all', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const ids: string[] = []
        for (let i = 0; i < 12; i++) {
          ids.push(await createContact(t, alice, { first_name: `N${i}`, email: 'many@example.org' }))
        }
        const [group] = (await getJson(t, alice, URL)).items
        assert.equal(group.count, 12)
        assert.deepEqual(group.contacts.map((c: Json) => c.id), ids.slice(0, 10))
      })

      it('walks every group once by cursor, in the order of one page, ' +
        'and refuses a cursor of another filter', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        // seven e-mail groups, three phone groups, two name groups, and contacts that share nothing
        for (let i = 0; i < 7; i++) {
          for (let j = 0; j < 2 + (i % 3); j++) {
            await createContact(t, alice, { first_name: `E${i}-${j}`, email: `group${i}@example.org` })
          }
          await createContact(t, alice, { first_name: `Single${i}`, email: `single${i}@example.org` })
        }
        for (let i = 0; i < 3; i++) {
          for (const field of ['phone_primary_e164', 'phone_work_e164'] as const) {
            await setE164(t, tenant.id, await createContact(t, alice, { first_name: `P${i}` }), {
              [field]: `+4144555000${i}`
            })
          }
        }
        for (const [first, last] of [['Kim', 'Park'], ['Lee', 'Chan']]) {
          await createContact(t, alice, { first_name: first, last_name: last, company: 'Acme' })
          await createContact(t, alice, { first_name: first, last_name: last, company: 'ACME' })
        }

        const whole = (await getJson(t, alice, `${URL}?limit=50`)).items
        assert.equal(whole.length, 12)
        assert.deepEqual(
          whole.map((g: Json) => g.reason).sort(),
          [...Array(7).fill('email'), ...Array(2).fill('name_company'), ...Array(3).fill('phone')]
        )
        for (const limit of [1, 2, 5]) {
          const pages = await pagesByCursor(t, alice, `${URL}?limit=${limit}`)
          assert.ok(pages.every(p => p.items.length <= limit))
          assert.deepEqual(pages.flatMap(p => p.items), whole, `limit ${limit}`)
        }
        const phones = await itemsByCursor(t, alice, `${URL}?reason=phone&limit=2`)
        assert.deepEqual(phones, whole.filter((g: Json) => g.reason === 'phone'))

        const cursor = (await getJson(t, alice, `${URL}?limit=2`)).next_cursor
        const refused = await refusedCursor(t, alice, `${URL}?reason=email&limit=2`, cursor)
        assert.equal(refused.json().errors[0].location, 'query.cursor')
        await expectStatus(t, alice, 'GET', `${URL}?limit=51`, 400)
        await expectStatus(t, alice, 'GET', `${URL}?reason=address`, 400)
      })

      it('ends a page where the walk read its budget, then goes on after the key it stopped in', async () => {
        const tenant = await tenantOf()
        const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
        const auth: AuthContext = {
          tenantId: tenant.id,
          userId: 'alice',
          email: null,
          orgId: 'org-a',
          roles: ['member'],
          effectiveRole: 'member',
          permissions: new Set(['contacts:read']),
          exp: Math.floor(Date.now() / 1000) + 600
        }
        // keys in order: a ×2, b ×1, c ×5 (more than the budget of 3), d ×2, e ×1
        const counts = { a: 2, b: 1, c: 5, d: 2, e: 1 }
        const ids: Record<string, string[]> = {}
        for (const [key, n] of Object.entries(counts)) {
          for (let i = 0; i < n; i++) {
            (ids[key] ??= []).push(await createContact(t, alice, { first_name: key, email: `${key}@example.org` }))
          }
        }
        const read = async (cursor?: string) => await withTenant(t.ctx.db, auth, trx =>
          listDuplicates(trx, auth, { limit: 10, cursor }, { budget: 3, few: mode === 'few' ? 1000 : 0 }))
        const pages = []
        let cursor: string | undefined
        do {
          const page = await read(cursor)
          pages.push(page.items.map(g => [g.key, g.count]))
          cursor = page.next_cursor ?? undefined
        } while (cursor !== undefined && pages.length < 10)
        // a, a, b: the budget ends in b (one contact); c, c, c: ends in c, counted whole; d, d, e: ends in e (one
        // contact); then nothing is left: an empty last page
        assert.deepEqual(pages, [
          [['a@example.org', 2]],
          [['c@example.org', 5]],
          [['d@example.org', 2]],
          []
        ])
        assert.deepEqual(await itemsByCursor(t, alice, URL).then(items => items.map(g => g.count)), [2, 5, 2])
      })
    })
  }
}
