/**
 * Typed problem details (docs/errors.md): every problem names its kind by `code` and an absolute `type` URI that
 * answers a page; a client tells two 409s apart by `code`; a sync token refused after a change of the caller's
 * access says so (`sync_access_changed`, not "another list"); the OpenAPI document lists the codes each operation
 * may answer, and the error handler records any answer whose code its operation does not declare: this file
 * asserts that none did, after exercising the common kinds, and that the record does catch one.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { expectStatus, type Method } from './helpers/requests.ts'
import { problemIssues } from './helpers/problem.ts'
import { ApiError } from '../src/platform/http/errors.ts'
import { registerErrorHandling } from '../src/platform/http/error-handler.ts'
import {
  mayAnswer, PROBLEM_CODES, PROBLEM_TYPES, problemTypesMarkdown, specificCodesOf
} from '../src/platform/http/problem-types.ts'
import { addMember, createEvent, insertSpace, publishEvent } from '../src/modules/events/events.fixtures.ts'
import { createContact } from '../src/modules/attendees/attendees.fixtures.ts'

type Json = Record<string, any>

/** The problem of an answer, checked as an ErrorModel whose `type` is the URI of its `code`. */
function problemOf (t: TestApp, res: { statusCode: number, headers: Record<string, unknown>, body: string }): Json {
  assert.deepEqual(problemIssues(res), [], res.body)
  const body = JSON.parse(res.body) as Json
  assert.equal(body.type, `${t.config.baseUrl}/problems/${String(body.code)}`)
  return body
}

async function expectCode (
  t: TestApp, token: string, method: Method, url: string, status: number, code: string, body?: unknown
): Promise<Json> {
  const res = await expectStatus(t, token, method, url, status, body)
  const problem = problemOf(t, res)
  assert.equal(problem.code, code, res.body)
  return problem
}

void describe('the problem catalogue', () => {
  void it('is docs/errors.md\'s table, code for code', () => {
    const doc = fs.readFileSync('docs/errors.md', 'utf8')
    const shown = doc.split('<!-- problem-types:start -->')[1]?.split('<!-- problem-types:end -->')[0]?.trim()
    assert.equal(shown, problemTypesMarkdown(),
      'regenerate the table of docs/errors.md: npx tsx -e "import(\'./src/platform/http/problem-types.ts\')' +
      '.then(m => console.log(m.problemTypesMarkdown()))"')
  })

  void it('names every code in snake_case, with a title and a description of what to do', () => {
    for (const code of PROBLEM_CODES) {
      assert.match(code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/)
      assert.ok(PROBLEM_TYPES[code].title.length > 0 && PROBLEM_TYPES[code].description.length > 40, code)
    }
  })

  void it('declares a specific code only where its scope names the operation', () => {
    const getContact = { method: 'GET', tags: ['Contacts'], operationId: 'get-contact' }
    const addAttendee = { method: 'POST', tags: ['Event attendees'], operationId: 'add-event-attendee' }
    assert.equal(mayAnswer(getContact, 'already_attending'), false)
    assert.equal(mayAnswer(getContact, 'not_found'), true)
    assert.equal(mayAnswer(addAttendee, 'already_attending'), true)
    assert.equal(mayAnswer(addAttendee, 'idempotency_key_reused'), true)
    assert.ok(specificCodesOf(addAttendee).includes('event_full'))
    assert.ok(!specificCodesOf(addAttendee).includes('idempotency_key_reused'), 'listed once for every POST')
  })

  void it('records an answer whose code its operation does not declare', async () => {
    const app = Fastify()
    registerErrorHandling(app, 'http://x.test')
    app.get('/contact', { schema: { operationId: 'get-contact', tags: ['Contacts'] } }, async () => {
      throw new ApiError(409, 'not for a read', [], {}, 'already_attending')
    })
    const res = await app.inject({ method: 'GET', url: '/contact' })
    assert.equal(res.json().code, 'already_attending')
    assert.deepEqual([...app.undeclaredProblemCodes], ['get-contact already_attending'])
    await app.close()
  })
})

for (const kind of databases()) {
  void describe(`${kind}: typed problem details`, () => {
    const t = useTestApp(kind)

    void it('serves each type URI to anyone: a page, JSON on request, 404 for an unknown code', async () => {
      const page = await t.app.inject({ method: 'GET', url: '/problems/event_full' })
      assert.equal(page.statusCode, 200)
      assert.match(String(page.headers['content-type']), /^text\/html/)
      assert.match(page.body, /Event full/)
      const json = await t.app.inject({
        method: 'GET', url: '/problems/event_full', headers: { accept: 'application/json' }
      })
      assert.equal(json.json().code, 'event_full')
      assert.deepEqual(json.json().statuses, [409])
      const list = await t.app.inject({ method: 'GET', url: '/problems', headers: { accept: 'application/json' } })
      assert.deepEqual(list.json().map((p: Json) => p.code), PROBLEM_CODES)
      const all = await t.app.inject({ method: 'GET', url: '/problems' })
      for (const code of PROBLEM_CODES) assert.ok(all.body.includes(`/problems/${code}"`), code)
      const unknown = await t.app.inject({ method: 'GET', url: '/problems/event_fulll' })
      assert.equal(unknown.statusCode, 404)
      assert.equal(problemOf(t, unknown).code, 'not_found')
    })

    void it('tells two 409s apart by code: already attending, event full; and the common kinds', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice, { title: 'Small room' })
      await publishEvent(t, alice, event.id)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id}/registration`, 200,
        { capacity: 1, waitlist_enabled: false })
      const [ada, bob] = [await createContact(t, alice), await createContact(t, alice)]
      const url = `/api/v1/events/${event.id}/attendees`
      await expectStatus(t, alice, 'POST', url, 201, { contact_id: ada, status: 'confirmed' })
      const twice = await expectCode(t, alice, 'POST', url, 409, 'already_attending', { contact_id: ada })
      assert.equal(twice.errors[0].value, ada)
      await expectCode(t, alice, 'POST', url, 409, 'event_full', { contact_id: bob, status: 'confirmed' })
      // the type URI a problem names is the page of its code
      const typed = await t.app.inject({ method: 'GET', url: new URL(twice.type as string).pathname })
      assert.equal(typed.statusCode, 200)

      // an Idempotency-Key reused with another body
      const headers = { 'idempotency-key': `problem-types-${kind}` }
      const keyed = (body: Json) => t.as(alice, { method: 'POST', url: '/api/v1/contacts', headers, payload: body })
      assert.equal((await keyed({ first_name: 'Eve' })).statusCode, 201)
      const reused = await keyed({ first_name: 'Mallory' })
      assert.equal(reused.statusCode, 409)
      assert.equal(problemOf(t, reused).code, 'idempotency_key_reused')

      // archived and read-only
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/archive`, 204, {})
      await expectCode(t, alice, 'PATCH', `/api/v1/events/${event.id}`, 409, 'event_archived', { title: 'Later' })

      // the generic code of each status
      await expectCode(t, alice, 'GET', '/api/v1/contacts?size=1000', 400, 'validation_failed')
      await expectCode(t, alice, 'GET', '/api/v1/contacts/00000000-0000-4000-8000-000000000000', 404, 'not_found')
      const stale = await t.as(alice, {
        method: 'PATCH', url: `/api/v1/contacts/${ada}`, headers: { 'if-match': '"999"' }, payload: { company: 'X' }
      })
      assert.equal(stale.statusCode, 412)
      assert.equal(problemOf(t, stale).code, 'precondition_failed')
      const anonymous = await t.app.inject({ method: 'GET', url: '/api/v1/contacts' })
      assert.equal(problemOf(t, anonymous).code, 'unauthenticated')
      const method = await t.as(alice, { method: 'PUT', url: '/api/v1/contacts' })
      assert.equal(method.statusCode, 405)
      assert.equal(problemOf(t, method).code, 'method_not_allowed')
      const viewer = await tenant.user('victor', ['viewer'])
      await expectCode(t, viewer, 'POST', '/api/v1/contacts', 403, 'forbidden', { first_name: 'No' })
    })

    void it('answers sync_access_changed, not "another list", to a token from before a membership change; ' +
      'a full read then shows the newly visible event', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-a' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-b' })
      const space = await insertSpace(t, tenant.id, { title: 'Club', creator_id: 'alice' })
      const event = await createEvent(t, alice, { title: 'Members only', visibility: 20 })
      await publishEvent(t, alice, event.id)
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id}/spaces`, 201, { space_id: space })
      const first = await expectStatus(t, bob, 'GET', '/api/v1/events?sync=true', 200)
      assert.deepEqual(first.json().items, [])
      const token = encodeURIComponent(first.json().sync_token as string)
      await expectStatus(t, bob, 'GET', `/api/v1/events?sync_token=${token}`, 200)

      await addMember(t, tenant.id, space, 'bob')
      const changed = await expectCode(t, bob, 'GET', `/api/v1/events?sync_token=${token}`, 410, 'sync_access_changed')
      assert.match(changed.detail, /what you may see of this list changed/)
      // another list's token still names that reason
      await expectCode(t, bob, 'GET', `/api/v1/events?status=draft&sync_token=${token}`, 410, 'sync_token_mismatch')
      // a role change is a change of access too
      const promoted = await tenant.user('bob', ['admin'], { orgId: 'org-b' })
      const again = await expectStatus(t, bob, 'GET', '/api/v1/events?sync=true', 200)
      const next = encodeURIComponent(again.json().sync_token as string)
      await expectCode(t, promoted, 'GET', `/api/v1/events?sync_token=${next}`, 410, 'sync_access_changed')
      // the later read the problem asks for: the full list, with the event bob now sees
      const full = await expectStatus(t, bob, 'GET', '/api/v1/events?sync=true', 200)
      assert.deepEqual(full.json().items.map((e: Json) => e.id), [event.id])
    })

    void it('answered no code its operation does not declare in this file\'s requests', () => {
      assert.deepEqual([...t.app.undeclaredProblemCodes], [])
    })
  })
}
