/**
 * Data-subject export and erasure (docs/privacy.md). One person is written through every path that stores a
 * contact's data (create, update, CSV import, upsert with an Idempotency-Key, a merge, a space link, public
 * registration with answers, check-in, a waitlist, an invitation mail, a webhook subscription and an automation rule
 * whose runs name it, the sync log), the background engines are run step by step, the export is read (JSON and ZIP),
 * then the contact is erased and every table of the database (all schemas, each row as text) and every stored file
 * is searched for the person's values: none may remain. Then the refusals, which change nothing.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { unzipSync } from 'fflate'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { Replica } from '../../../test/helpers/sync-replica.ts'
import { allowListOf } from '../../platform/http/outbound.ts'
import { drain, rule } from '../automation/automation.fixtures.ts'
import { deliverDue, dispatchWebhooks } from '../webhooks/webhooks.delivery.ts'

type Json = Record<string, any>
const HOUR = 3_600_000

/** A receiver of webhook deliveries on 127.0.0.1: every body it got. */
function useReceiver (): { bodies: string[], url: () => string } {
  const bodies: string[] = []
  let server: http.Server | undefined
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString('utf8'))
        res.writeHead(200).end('ok')
      })
    })
    await new Promise<void>(resolve => server?.listen(0, '127.0.0.1', resolve))
  })
  after(async () => {
    server?.closeAllConnections()
    await new Promise(resolve => server?.close(resolve))
  })
  return { bodies, url: () => `http://127.0.0.1:${(server?.address() as AddressInfo).port}/hook` }
}

/** Every place of the database and of the object store that holds one of `values` (lower-cased), as `schema.table`. */
async function whereHeld (t: TestApp, values: readonly string[]): Promise<string[]> {
  const patterns = values.map(v => `%${v.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`)
  const db = t.ctx.systemDb
  const tables = await sql<{ s: string, t: string }>`
    select table_schema as s, table_name as t from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
      and table_schema not like 'pg\_%' and table_schema not in ('citus', 'columnar', 'columnar_internal')
    order by 1, 2`.execute(db)
  assert.ok(tables.rows.some(r => r.t === 'contacts') && tables.rows.length > 30, 'every table is read')
  const found: string[] = []
  for (const { s, t: name } of tables.rows) {
    const r = await sql<{ row: string }>`select x::text as row from ${sql.table(`${s}.${name}`)} as x
      where lower(x::text) like any(${patterns}::text[]) limit 3`.execute(db)
    for (const row of r.rows) found.push(`${s}.${name}: ${row.row.slice(0, 300)}`)
  }
  const root = path.join(t.config.dataDir, 'objects')
  const files = fs.existsSync(root) ? fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) : []
  for (const file of files) {
    const full = path.join(root, file)
    if (!fs.statSync(full).isFile()) continue
    const text = fs.readFileSync(full).toString('latin1').toLowerCase()
    if (values.some(v => text.includes(v.toLowerCase()))) found.push(`objects/${file}`)
  }
  return found
}

for (const kind of databases()) {
  void describe(`${kind}: data-subject export and erasure`, () => {
    const t = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1', APP_URL: 'https://app.example.org' } })
    const receiver = useReceiver()
    const webhooks = () => ({ db: t.ctx.db, allow: allowListOf(['127.0.0.1']), timeoutMs: 2000 })

    /** Runs the automation engine and the webhook dispatcher until both have nothing left. */
    async function runEngines (tenantId: string): Promise<void> {
      await drain(t.ctx.engines.automation, { tenantId })
      await dispatchWebhooks(webhooks())
      await deliverDue(webhooks())
      await drain(t.ctx.engines.automation, { tenantId })
    }

    async function publishedEvent (token: string, registration: Json): Promise<number> {
      const start = new Date(Date.now() + 48 * HOUR)
      const event = (await expectStatus(t, token, 'POST', '/api/v1/events', 201, {
        title: `Event ${crypto.randomUUID()}`,
        start_dt: start.toISOString(),
        end_dt: new Date(start.getTime() + 2 * HOUR).toISOString(),
        timezone: 'Europe/Berlin',
        visibility: 40
      })).json()
      await expectStatus(t, token, 'POST', `/api/v1/events/${event.id as number}/publish`, 204)
      await expectStatus(t, token, 'PATCH', `/api/v1/events/${event.id as number}/registration`, 200, registration)
      return event.id as number
    }

    const figures = async (token: string, id: number) => {
      const e = (await expectStatus(t, token, 'GET', `/api/v1/events/${id}`, 200)).json()
      const list = (await expectStatus(t, token, 'GET', `/api/v1/events/${id}/attendees?size=100`, 200)).json()
      return {
        confirmed: e.confirmed_count,
        waitlist: e.waitlist_count,
        seats_left: e.seats_left,
        listed: list.items.length,
        checked_in: list.items.filter((a: Json) => a.status === 'checked_in').length,
        positions: list.items.filter((a: Json) => a.status === 'waitlisted').map((a: Json) => a.waitlist_position)
      }
    }

    /**
     * A tenant whose contact `person` went through every path; `values` are what must be gone after its erasure.
     */
    async function seedPerson () {
      const tenant = newTenant(t)
      const org = { orgId: 'org-a' }
      const admin = await tenant.user('root', ['admin'], org)
      const alice = await tenant.user('alice', ['member'], org)
      const tag = crypto.randomBytes(5).toString('hex')
      const digits = String(crypto.randomInt(1_000_000, 9_999_999))
      const person = {
        first: `Zyx${tag}`,
        last: `Qorvath${tag}`,
        email: `Erin.${tag}@Example.test`,
        phone: `+49 30 ${digits}`,
        note: `allergic to ${tag}-nuts`,
        answer: `Answer ${tag} of mine`,
        absorbedEmail: `old.${tag}@example.test`
      }

      // outbound: a subscription to every topic, and a rule whose runs name the contact
      await expectStatus(t, admin, 'POST', '/api/v1/webhooks', 201, { url: receiver.url(), event_types: ['*'] })
      await rule(t, alice, {
        name: 'welcome',
        schedule: { event_type: 'contact.created' },
        actions: [{ type: 'activity', message: 'New contact' }]
      })

      // create, update, import, upsert (with an Idempotency-Key: its answer is kept)
      const created = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
        first_name: person.first,
        last_name: person.last,
        email: person.email,
        phone_primary: person.phone,
        notes: person.note,
        tags: [`t-${tag}`]
      })).json()
      const id = created.id as string
      await expectStatus(t, alice, 'PATCH', `/api/v1/contacts/${id}`, 200, { job_title: `Keeper ${tag}` })
      const csv = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts/import',
        headers: { 'content-type': 'text/csv' },
        payload: `email,city\r\n${person.email},Springfield${tag}\r\n`
      })
      assert.equal(csv.statusCode, 200, csv.body)
      const upsert = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/contacts/upsert',
        headers: { 'idempotency-key': `k-${tag}` },
        payload: { contacts: [{ email: person.email, company: `Firm ${tag}`, phone_work: person.phone }] }
      })
      assert.equal(upsert.statusCode, 200, upsert.body)

      // a merge: another contact of the same person, absorbed
      const old = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, {
        first_name: person.first, email: person.absorbedEmail
      })).json()
      await expectStatus(t, alice, 'POST', `/api/v1/contacts/${id}/merge`, 200, { absorb: [old.id] })

      // a space link
      const space = (await expectStatus(t, alice, 'POST', '/api/v1/spaces', 201, { title: `Space ${tag}` })).json()
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space.id as number}/contacts`, 201, { contact_id: id })

      // public registration with answers (matched to the contact by its address), then check-in
      const main = await publishedEvent(alice, {
        public_registration: true, double_opt_in: false, capacity: 3, waitlist_enabled: true
      })
      await expectStatus(t, alice, 'PUT', `/api/v1/events/${main}/registration/form`, 200, {
        questions: [{ id: 'diet', type: 'short_text', label: 'Diet' }]
      })
      // a rule whose message to the organiser is rendered from the trigger: the registration's answers
      await rule(t, alice, {
        name: 'tell me',
        scope: 'EVENT',
        scope_id: String(main),
        schedule: { event_type: 'attendee.added' },
        actions: [{ type: 'notify', to: 'creator', subject: 'New guest', body: 'Answers: {{answers}}' }]
      })
      const other = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Bystander' })).json()
      await expectStatus(t, alice, 'POST', `/api/v1/events/${main}/attendees`, 201,
        { contact_id: other.id, status: 'confirmed' })
      const reg = await t.app.inject({
        method: 'POST',
        url: `/api/v1/public/events/${main}/registrations`,
        payload: { name: `${person.first} ${person.last}`, email: person.email, answers: { diet: person.answer } }
      })
      assert.equal(reg.statusCode, 202, reg.body)
      const checkIn = await t.as(alice, {
        method: 'POST', url: `/api/v1/events/${main}/attendees/${id}/check-in`, payload: {}
      })
      assert.ok([200, 204].includes(checkIn.statusCode), checkIn.body)

      // a full event: the person waits in line behind another
      const full = await publishedEvent(alice, { capacity: 1, waitlist_enabled: true })
      const first = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'First' })).json()
      const second = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Second' })).json()
      for (const c of [first.id, id, second.id]) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${full}/attendees`, 201,
          { contact_id: c, status: 'confirmed' })
      }

      // an invitation mailed to the person
      const invited = await publishedEvent(alice, { capacity: 10 })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${invited}/attendees`, 201, { contact_id: id })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${invited}/invitations`, 200, {})

      await runEngines(tenant.id)
      assert.ok(receiver.bodies.some(b => b.includes(person.email)), 'a delivery carried the person')
      const values = [
        person.first, person.last, person.email, person.phone, person.note, person.answer, person.absorbedEmail,
        `Keeper ${tag}`, `Springfield${tag}`, person.phone.replace(/ /g, '')
      ]
      return { tenant, admin, alice, id, person, values, main, full, invited, space, tag }
    }

    void it('exports every place that holds the person, then erases it from all of them: no table and no stored ' +
      'file holds its values; the events keep their counts; a second erase answers the same report', async () => {
      const s = await seedPerson()
      const { alice, admin, id, person } = s
      const replica = new Replica(t, alice, '/api/v1/contacts')
      await replica.sync()
      assert.ok(replica.rows.has(id))

      // the export holds each place, with the values
      const res = await expectStatus(t, alice, 'GET', `/api/v1/contacts/${id}/personal-data`, 200)
      assert.equal(res.headers['cache-control'], 'no-store')
      const data = res.json()
      const text = (name: string) => JSON.stringify(data.sections[name]).toLowerCase()
      assert.equal(data.profile.email, person.email)
      assert.equal(data.profile.phone_primary, person.phone)
      assert.equal(data.sections.attendances.items.length, 3)
      assert.ok(text('registration_answers').includes(person.answer.toLowerCase()))
      assert.ok(data.sections.timeline.items.length >= 3)
      assert.ok(text('notifications').includes(person.email.toLowerCase()), 'the mails to the person')
      assert.ok(text('webhook_deliveries').includes(person.email.toLowerCase()))
      assert.ok(text('automation_executions').includes(person.email.toLowerCase()))
      assert.ok(text('outbox_events').includes(person.email.toLowerCase()))
      assert.ok(text('outbox_events').includes(person.absorbedEmail.toLowerCase()), 'events of the merged contact')
      assert.ok(data.sections.sync_records.items.length >= 1)
      assert.equal(data.sections.space_links.items.length, 1)
      assert.equal(data.sections.merged_contacts.items.length, 1)
      assert.deepEqual(data.sections.stored_objects, { items: [], truncated: false })
      assert.ok(data.sections.audit_entries.items.length >= 1, 'the audit entries about the contact')
      for (const section of Object.values(data.sections) as Json[]) assert.equal(section.truncated, false)

      // the ZIP holds the same document
      const zipped = await t.as(alice, { method: 'GET', url: `/api/v1/contacts/${id}/personal-data?format=zip` })
      assert.equal(zipped.statusCode, 200)
      assert.equal(zipped.headers['content-type'], 'application/zip')
      const files = unzipSync(new Uint8Array(zipped.rawPayload))
      assert.deepEqual(Object.keys(files), ['personal-data.json'])
      const inZip = JSON.parse(Buffer.from(files['personal-data.json'] as Uint8Array).toString('utf8'))
      // the same document, but the link to its schema (`$schema`, added to JSON answers)
      const { $schema: _link, ...document } = data
      assert.deepEqual(inZip, document)
      const byAccept = await t.as(alice, {
        method: 'GET', url: `/api/v1/contacts/${id}/personal-data`, headers: { accept: 'application/zip' }
      })
      assert.equal(byAccept.headers['content-type'], 'application/zip')

      const mainBefore = await figures(alice, s.main)
      const fullBefore = await figures(alice, s.full)
      assert.deepEqual([mainBefore.confirmed, mainBefore.checked_in, fullBefore.waitlist], [2, 1, 2])

      // erase
      const erased = await expectStatus(t, alice, 'POST', `/api/v1/contacts/${id}/erase`, 200)
      const report = erased.json()
      // what the engines do afterwards carries nothing either
      await runEngines(s.tenant.id)
      assert.deepEqual(await whereHeld(t, s.values), [])

      assert.equal(report.contact_id, id)
      assert.deepEqual({
        contact: report.counts.contact,
        redirects: report.counts.redirects,
        anonymised: report.counts.attendances_anonymised,
        withdrawn: report.counts.attendances_withdrawn,
        answers: report.counts.registration_answers,
        spaceLinks: report.counts.space_links,
        tombstones: report.counts.sync_tombstones > 0
      }, { contact: 1, redirects: 1, anonymised: 3, withdrawn: 1, answers: 1, spaceLinks: 1, tombstones: true })
      for (const n of ['notifications_deleted', 'notifications_scrubbed', 'outbox_events', 'webhook_deliveries',
        'automation_executions', 'idempotent_answers', 'guest_links', 'event_activity', 'space_activity']) {
        assert.ok(report.counts[n] > 0, `${n}: ${JSON.stringify(report.counts)}`)
      }

      // a second erase answers the same report; the contact is gone everywhere a client looks
      const again = await expectStatus(t, alice, 'POST', `/api/v1/contacts/${id}/erase`, 200)
      assert.deepEqual(again.json(), report)
      assert.deepEqual((await expectStatus(t, admin, 'POST', `/api/v1/contacts/${id}/erase`, 200)).json(), report)
      await expectStatus(t, alice, 'GET', `/api/v1/contacts/${id}`, 404)
      await expectStatus(t, alice, 'GET', `/api/v1/contacts/${id}/personal-data`, 404)
      const search = await expectStatus(t, alice, 'GET',
        `/api/v1/contacts?search=${encodeURIComponent(person.email)}`, 200)
      assert.equal(search.json().items.length, 0)
      await replica.sync()
      assert.equal(replica.rows.has(id), false, 'a synced client gets the tombstone')

      // the events: seats and check-ins as before, the anonymous attendance listed without a contact; the line closes
      const mainAfter = await figures(alice, s.main)
      assert.deepEqual(mainAfter, mainBefore)
      const listed = (await expectStatus(t, alice, 'GET', `/api/v1/events/${s.main}/attendees`, 200)).json().items
      assert.deepEqual(listed.filter((a: Json) => a.contact_id === null).map((a: Json) => [a.status, a.answers]),
        [['checked_in', null]])
      const fullAfter = await figures(alice, s.full)
      assert.deepEqual([fullAfter.confirmed, fullAfter.waitlist, fullAfter.positions, fullAfter.listed],
        [1, 1, [1], 3])
    })

    void it('refuses what the caller may not do, and changes nothing: another tenant, a viewer, a member who does ' +
      'not own the contact, an id that never was; a user\'s export to themself and admins only', async () => {
      const tenant = newTenant(t)
      const org = { orgId: 'org-a' }
      const alice = await tenant.user('alice', ['member'], org)
      const bob = await tenant.user('bob', ['member'], org)
      const viewer = await tenant.user('vic', ['viewer'], org)
      const admin = await tenant.user('root', ['admin'], org)
      const stranger = await newTenant(t).user('eve', ['admin'], org)
      const email = `keep-${crypto.randomUUID()}@example.test`
      const contact = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Kept', email }))
        .json()
      // a member of no organization: her contacts are personal
      const lou = await tenant.user('lou', ['member'])
      const personal = (await expectStatus(t, lou, 'POST', '/api/v1/contacts', 201, { first_name: 'Mine' })).json()
      const read = async () => (await expectStatus(t, alice, 'GET', `/api/v1/contacts/${contact.id as string}`, 200))
        .json()
      const before = await read()

      for (const [token, status] of [[stranger, 404], [viewer, 403], [bob, 403]] as const) {
        await expectStatus(t, token, 'POST', `/api/v1/contacts/${contact.id as string}/erase`, status)
        await expectStatus(t, token, 'GET', `/api/v1/contacts/${contact.id as string}/personal-data`, status)
      }
      // a personal contact is its owner's alone, admins included (docs/contacts.md)
      await expectStatus(t, admin, 'POST', `/api/v1/contacts/${personal.id as string}/erase`, 404)
      await expectStatus(t, alice, 'POST', `/api/v1/contacts/${crypto.randomUUID()}/erase`, 404)
      assert.deepEqual(await read(), before)

      // the user export: the user and admins; another member and another tenant get 404
      const aliceId = 'alice'
      const own = (await expectStatus(t, alice, 'GET', `/api/v1/users/${aliceId}/personal-data`, 200)).json()
      assert.equal(own.subject.id, aliceId)
      assert.equal(own.sections.claims.items[0].org_id, 'org-a')
      assert.deepEqual(own.sections.owned_contacts.items.map((c: Json) => c.id), [contact.id])
      assert.equal(JSON.stringify(own.sections.owned_contacts).includes(email), false, 'not the contacts\' data')
      await expectStatus(t, admin, 'GET', `/api/v1/users/${aliceId}/personal-data`, 200)
      await expectStatus(t, bob, 'GET', `/api/v1/users/${aliceId}/personal-data`, 404)
      await expectStatus(t, stranger, 'GET', `/api/v1/users/${aliceId}/personal-data`, 404)
      await expectStatus(t, admin, 'GET', '/api/v1/users/nobody/personal-data', 404)
      const zip = await t.as(alice, { method: 'GET', url: `/api/v1/users/${aliceId}/personal-data?format=zip` })
      const inZip = unzipSync(new Uint8Array(zip.rawPayload))['personal-data.json']
      assert.equal(JSON.parse(Buffer.from(inZip as Uint8Array).toString('utf8')).subject.id, aliceId)

      // the erasure by its owner; then its report to who erased it and admins only
      const report = (await expectStatus(t, alice, 'POST', `/api/v1/contacts/${contact.id as string}/erase`, 200))
        .json()
      await expectStatus(t, bob, 'POST', `/api/v1/contacts/${contact.id as string}/erase`, 404)
      await expectStatus(t, stranger, 'POST', `/api/v1/contacts/${contact.id as string}/erase`, 404)
      assert.deepEqual((await expectStatus(t, admin, 'POST', `/api/v1/contacts/${contact.id as string}/erase`, 200))
        .json(), report)
    })
  })
}
