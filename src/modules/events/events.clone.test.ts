/**
 * `POST /events/{id}/clone` (docs/events.md, "Clone"): what a clone copies and what it never copies, read back through
 * the API; who may clone (403/404, nothing created); bad input (400 naming the field, nothing created).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus, expectStatuses, getJson } from '../../../test/helpers/requests.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { createContact } from '../attendees/attendees.fixtures.ts'
import { createSpace, publish as publishSpace } from '../spaces/spaces.fixtures.ts'
import { addManager, createEvent, getEvent, publishEvent, type Json } from './events.fixtures.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const at = (ms: number): string => new Date(ms).toISOString()
/** A start a month ahead, to the minute. */
const START = Math.floor((Date.now() + 30 * DAY) / 60_000) * 60_000

const QUESTIONS = [
  {
    id: 'diet',
    type: 'single_choice',
    label: 'Diet',
    required: true,
    options: [{ id: 'any', label: 'Anything' }, { id: 'veg', label: 'Vegetarian' }]
  },
  { id: 'note', type: 'short_text', label: 'Anything else?' }
]

/** The ids of the tenant's event rows (clones of drafts included), through SQL: what a refused clone must not add. */
async function eventIds (t: TestApp, tenantId: string): Promise<number[]> {
  return await withTenant(t.ctx.db, { tenantId }, async trx =>
    (await trx.selectFrom('events').select('id').where('tenant_id', '=', tenantId).orderBy('id').execute())
      .map(r => r.id))
}

/**
 * A published meeting of alice's, moved on to `in_progress`, with everything a clone may copy or must not: a
 * description, a place, keywords, metadata with a cover, a cover key, registration settings with a public window,
 * questions, two active managers and a pending invitation, an attendee, a space.
 */
async function fullEvent (t: TestApp) {
  const tenant = newTenant(t)
  const alice = await tenant.user('alice')
  const event = await createEvent(t, alice, {
    title: 'Choir rehearsal',
    description: 'Bring your scores',
    address: 'Church hall, 1 Main street',
    latitude: 48.85,
    longitude: 2.35,
    start_dt: at(START),
    end_dt: at(START + 2 * HOUR),
    timezone: 'Europe/Paris',
    keywords: ['choir', 'music'],
    metadata: { room: 'B', cover_image: { content_type: 'image/png' } },
    visibility: 40,
    priority: 5,
    template: 'meeting'
  })
  const id = event.id as number
  await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
    await trx.updateTable('events').set({ cover_image_key: `covers/${tenant.id}/${id}.png` })
      .where('tenant_id', '=', tenant.id).where('id', '=', id).execute()
  })
  await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, {
    capacity: 30,
    waitlist_enabled: true,
    requires_approval: true,
    public_registration: true,
    registration_opens_at: at(START - 14 * DAY),
    registration_closes_at: at(START - DAY),
    registration_limit_per_email: 2,
    double_opt_in: false
  })
  await expectStatus(t, alice, 'PUT', `/api/v1/events/${id}/registration/form`, 200, { questions: QUESTIONS })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers`, 201,
    { user_id: 'bob', role: 'event_manager:editor' })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers`, 201,
    { user_id: 'carol', permissions: ['attendees:read', 'attendees:checkin'] })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers/invite`, 201,
    { email: 'dora@example.test', role: 'event_manager:attendees' })
  const contact = await createContact(t, alice, { email: 'ann@example.test' })
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201,
    { contact_id: contact, status: 'confirmed' })
  const space = await createSpace(t, alice, { visibility: 40 })
  await publishSpace(t, alice, space.id)
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/spaces`, 201, { space_id: space.id })
  await publishEvent(t, alice, id)
  await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/transition`, 200, { to_state: 'in_progress' })
  return { tenant, alice, id }
}

const cloneUrl = (id: number): string => `/api/v1/events/${id}/clone`

for (const kind of databases()) {
  void describe(`${kind}: event clone`, () => {
    const t = useTestApp(kind)

    void it('copies every part by default: a draft of the caller at the new start, same duration, the ' +
      'registration window moved as far, the questions and the active managers; never attendees, spaces, series ' +
      'or cover', async () => {
      const { tenant, alice, id } = await fullEvent(t)
      const bob = await tenant.user('bob')
      const start = START + 7 * DAY + 3 * HOUR
      const res = await expectStatus(t, alice, 'POST', cloneUrl(id), 201, { start_dt: at(start) })
      const clone = res.json()
      assert.notEqual(clone.id, id)
      assert.equal(res.headers.location, `/api/v1/events/${clone.id as number}`)
      const read = await getEvent(t, alice, clone.id)
      assert.equal(res.headers.etag, read.headers.etag)
      const got = read.json()
      const { metadata, ...rest } = got
      assert.deepEqual(metadata, { room: 'B' }, 'the cover in the metadata is never copied')
      assert.deepEqual({
        status: rest.status,
        creator_id: rest.creator_id,
        title: rest.title,
        description: rest.description,
        address: rest.address,
        latitude: rest.latitude,
        longitude: rest.longitude,
        start_dt: rest.start_dt,
        end_dt: rest.end_dt,
        timezone: rest.timezone,
        keywords: rest.keywords,
        visibility: rest.visibility,
        priority: rest.priority,
        template: rest.template,
        state: rest.state,
        version: rest.version,
        published_at: rest.published_at,
        published_id: rest.published_id,
        series_id: rest.series_id,
        cover_image_key: rest.cover_image_key,
        spaces: rest.spaces,
        capacity: rest.capacity,
        waitlist_enabled: rest.waitlist_enabled,
        requires_approval: rest.requires_approval,
        confirmed_count: rest.confirmed_count
      }, {
        status: 'draft',
        creator_id: 'alice',
        title: 'Choir rehearsal',
        description: 'Bring your scores',
        address: 'Church hall, 1 Main street',
        latitude: 48.85,
        longitude: 2.35,
        start_dt: at(start),
        end_dt: at(start + 2 * HOUR),
        timezone: 'Europe/Paris',
        keywords: ['choir', 'music'],
        visibility: 40,
        priority: 5,
        template: 'meeting',
        // a new event of the template: its machine's first state, not the source's
        state: 'scheduled',
        version: 0,
        published_at: null,
        published_id: null,
        series_id: null,
        cover_image_key: null,
        spaces: [],
        capacity: 30,
        waitlist_enabled: true,
        requires_approval: true,
        confirmed_count: 0
      })

      const registration = await getJson(t, alice, `/api/v1/events/${clone.id as number}/registration`)
      assert.deepEqual(registration.guests, {
        public_registration: true,
        registration_opens_at: at(start - 14 * DAY),
        registration_closes_at: at(start - DAY),
        registration_limit_per_email: 2,
        double_opt_in: false
      })
      const form = await getJson(t, alice, `/api/v1/events/${clone.id as number}/registration/form`)
      assert.deepEqual([form.version, form.owner, form.questions], [1, 'event', QUESTIONS])
      const attendees = await getJson(t, alice, `/api/v1/events/${clone.id as number}/attendees`)
      assert.equal(attendees.total, 0)
      const managers = await getJson(t, alice, `/api/v1/events/${clone.id as number}/managers`)
      assert.deepEqual((managers.items as Json[]).map(m => [m.user_id, m.status, m.role, m.permissions]), [
        ['bob', 'active', 'event_manager:editor', (await getJson(t, alice, `/api/v1/events/${id}/managers/bob`))
          .permissions],
        ['carol', 'active', null, ['attendees:read', 'attendees:checkin']]
      ], 'the active managers, not the pending invitation')
      // bob manages the clone: he edits it
      await expectStatus(t, bob, 'PATCH', `/api/v1/events/${clone.id as number}`, 200, { description: 'By bob' })

      // the source is as it was
      const source = (await getEvent(t, alice, id)).json()
      assert.deepEqual([source.status, source.state, source.spaces.length], ['published', 'in_progress', 1])
      assert.equal((await getJson(t, alice, `/api/v1/events/${id}/attendees`)).total, 1)
      assert.equal((await getJson(t, alice, `/api/v1/events/${id}/managers`)).total, 3)

      const written = (await outboxEvents(t, tenant.id)).filter(e => e.aggregate_id === String(clone.id))
      assert.deepEqual(written.map(e => e.topic),
        ['event.created', 'event.manager_added', 'event.manager_added', 'event.updated'])
      assert.deepEqual(
        { ...written[0]?.payload as Json },
        {
          event_id: clone.id,
          template: 'meeting',
          template_version: 1,
          state: 'scheduled',
          title: 'Choir rehearsal',
          status: 'draft',
          cloned_from: id,
          copied: ['description', 'place', 'registration', 'questions', 'managers']
        }
      )
      assert.deepEqual(written.slice(1, 3).map(e => (e.payload as Json).user_id), ['bob', 'carol'])
    })

    void it('copies only the parts asked for; the title and end given replace the source\'s', async () => {
      const { alice, id } = await fullEvent(t)
      const start = START - 3 * DAY
      const clone = (await expectStatus(t, alice, 'POST', cloneUrl(id), 201, {
        start_dt: at(start),
        end_dt: at(start + 5 * HOUR),
        title: 'Extra rehearsal',
        description: false,
        place: false,
        registration: false,
        questions: false,
        managers: false
      })).json()
      const got = (await getEvent(t, alice, clone.id)).json()
      assert.deepEqual(
        [got.title, got.description, got.address, got.latitude, got.longitude, got.start_dt, got.end_dt],
        ['Extra rehearsal', null, null, null, null, at(start), at(start + 5 * HOUR)]
      )
      // always copied
      assert.deepEqual([got.keywords, got.metadata, got.visibility, got.timezone, got.template],
        [['choir', 'music'], { room: 'B' }, 40, 'Europe/Paris', 'meeting'])
      assert.deepEqual([got.capacity, got.waitlist_enabled, got.requires_approval], [null, false, false])
      const registration = await getJson(t, alice, `/api/v1/events/${clone.id as number}/registration`)
      assert.deepEqual(registration.guests, {
        public_registration: false,
        registration_opens_at: null,
        registration_closes_at: null,
        registration_limit_per_email: 3,
        double_opt_in: true
      })
      const form = await getJson(t, alice, `/api/v1/events/${clone.id as number}/registration/form`)
      assert.deepEqual([form.version, form.questions], [0, []])
      assert.equal((await getJson(t, alice, `/api/v1/events/${clone.id as number}/managers`)).total, 0)
      // without an end given, a source without an end gives none
      const open = await createEvent(t, alice, { title: 'Open end', start_dt: at(START) })
      const openClone = (await expectStatus(t, alice, 'POST', cloneUrl(open.id), 201, { start_dt: at(start) })).json()
      assert.deepEqual([openClone.start_dt, openClone.end_dt, openClone.status], [at(start), null, 'draft'])
    })

    void it('a draft clone\'s id copies the draft\'s content; a deleted event is 404', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { start_dt: at(START), end_dt: at(START + HOUR) })
      await publishEvent(t, alice, e.id)
      const draft = (await expectStatus(t, alice, 'POST', `/api/v1/events/${e.id as number}/edit`, 200)).json()
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${draft.id as number}`, 200, { title: 'Edited' })
      const clone = (await expectStatus(t, alice, 'POST', cloneUrl(draft.id), 201, { start_dt: at(START + DAY) }))
        .json()
      assert.deepEqual([clone.title, clone.published_id, clone.status, clone.end_dt],
        ['Edited', null, 'draft', at(START + DAY + HOUR)])
      await expectStatus(t, alice, 'DELETE', `/api/v1/events/${e.id as number}`, 204)
      const before = await eventIds(t, tenant.id)
      await expectStatus(t, alice, 'POST', cloneUrl(e.id), 404, { start_dt: at(START) })
      assert.deepEqual(await eventIds(t, tenant.id), before)
    })

    void it('who may clone: the event visible (404), events:write (403), managers:manage to copy managers ' +
      '(403 naming body.managers); nothing created when refused', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const dave = await tenant.user('dave')
      const bob = await tenant.user('bob')
      const vera = await tenant.user('vera', ['viewer'])
      const mallory = await newTenant(t).user('mallory', ['admin'])
      const open = await createEvent(t, alice, { title: 'Open', visibility: 40, start_dt: at(START) })
      const hidden = await createEvent(t, alice, { title: 'Hidden', visibility: 10, start_dt: at(START) })
      await addManager(t, tenant.id, open.id, 'bob', { role: 'event_manager:editor' })
      const body = { start_dt: at(START + DAY) }
      const before = await eventIds(t, tenant.id)
      await expectStatuses(t, [
        [vera, 'POST', cloneUrl(open.id), 403, body],
        [dave, 'POST', cloneUrl(hidden.id), 404, body],
        [dave, 'POST', cloneUrl(hidden.id), 404, { ...body, managers: false }],
        [mallory, 'POST', cloneUrl(open.id), 404, { ...body, managers: false }],
        [dave, 'POST', cloneUrl(999_999_999), 404, body]
      ])
      // dave sees the public event but may not pass its managers on; nor may bob, an editor without managers:manage
      for (const caller of [dave, bob]) {
        const refused = await expectStatus(t, caller, 'POST', cloneUrl(open.id), 403, body)
        assert.deepEqual(refused.json().errors.map((x: Json) => x.location), ['body.managers'], refused.body)
        assert.match(refused.json().detail, /managers:manage/)
      }
      assert.deepEqual(await eventIds(t, tenant.id), before, 'nothing created')

      // without the managers, a reader clones it as his own draft
      const mine = (await expectStatus(t, dave, 'POST', cloneUrl(open.id), 201, { ...body, managers: false })).json()
      assert.deepEqual([mine.creator_id, mine.status, mine.title], ['dave', 'draft', 'Open'])
      // bob may not see what dave cloned unless it is visible to him: it is public, and his grant did not follow
      await expectStatus(t, bob, 'PATCH', `/api/v1/events/${mine.id as number}`, 403, { title: 'No' })
      await expectStatus(t, dave, 'PATCH', `/api/v1/events/${mine.id as number}`, 200, { title: 'Mine' })
    })

    void it('refuses bad input with a 400 naming the field, and stores nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const e = await createEvent(t, alice, { start_dt: at(START) })
      const before = await eventIds(t, tenant.id)
      const cases: Array<[Json | undefined, string]> = [
        [{}, 'body.start_dt'],
        [{ start_dt: 'tomorrow' }, 'body.start_dt'],
        [{ start_dt: at(START), end_dt: at(START - HOUR) }, 'body.end_dt'],
        [{ start_dt: at(START), title: '' }, 'body.title'],
        [{ start_dt: at(START), managers: 'yes' }, 'body.managers'],
        [{ start_dt: at(START), attendees: true }, 'body.attendees']
      ]
      for (const [payload, location] of cases) {
        const res = await expectStatus(t, alice, 'POST', cloneUrl(e.id), 400, payload)
        assert.ok(res.json().errors.some((x: Json) => x.location === location), `${location} in ${res.body}`)
      }
      assert.deepEqual(await eventIds(t, tenant.id), before)
    })
  })
}
