/**
 * A scripted journey through the API with the generated TypeScript client (clients/typescript),
 * against the service listening on 127.0.0.1 (a random port): contacts, spaces, events, the
 * cover image, attendees, a recurring series and automation. The calls are typechecked by
 * `npm run typecheck` against the generated types, so a change of the document that breaks a
 * client breaks this file.
 *
 * Every answer the client receives is checked against the document the service serves
 * (test/helpers/openapi-validator.ts: status documented, body valid with Ajv 2020-12, ETag,
 * Location and RateLimit-* headers where documented). A self-check first proves that the
 * validator refuses a broken body.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { AddressInfo } from 'node:net'
import sharp from 'sharp'
import { createCollabClient, type CollabClient, type ErrorModel } from '../clients/typescript/index.ts'
import { databases, newTenant, useTestApp } from './helpers/build-app.ts'
import { OpenApiValidator } from './helpers/openapi-validator.ts'

/** The data of a successful call, failing the test with the error body otherwise. */
function ok<T> (result: { data?: T, error?: unknown, response: Response }, what: string): T {
  assert.ok(
    result.error === undefined && result.data !== undefined,
    `${what}: ${result.response.status} ${JSON.stringify(result.error)}`
  )
  return result.data
}

/** The fields of an event of the journey: its title and times, on London's clock. */
function londonEvent (title: string, start: string, end: string) {
  return { title, start_dt: start, end_dt: end, timezone: 'Europe/London' }
}

/** The ErrorModel of a failed call, failing the test when it succeeded or has another status. */
function failed (result: { error?: ErrorModel, response: Response }, status: number, what: string): ErrorModel {
  assert.equal(result.response.status, status, what)
  assert.ok(result.error !== undefined, what)
  assert.equal(result.error.status, status)
  return result.error
}

for (const kind of databases()) {
  void describe(`${kind}: a journey with the generated client, ` +
    'every answer checked against the served document', () => {
    const t = useTestApp(kind)
    let baseUrl: string
    let validator: OpenApiValidator
    const issues: string[] = []
    let checked = 0

    /** A client as `token`, whose every answer goes through the validator. */
    const clientFor = (token: string): CollabClient => {
      const api = createCollabClient({ baseUrl, token })
      api.use({
        async onResponse ({ request, response, schemaPath }) {
          const type = response.headers.get('content-type') ?? ''
          const text = type.includes('json') ? await response.clone().text() : ''
          issues.push(
            ...validator.check({
              method: request.method,
              path: schemaPath,
              status: response.status,
              headers: response.headers,
              body: text === '' ? undefined : (JSON.parse(text) as unknown)
            })
          )
          checked++
        }
      })
      return api
    }

    before(async () => {
      await t.app.listen({ host: '127.0.0.1', port: 0 })
      const { port } = t.app.server.address() as AddressInfo
      baseUrl = `http://127.0.0.1:${port}`
      const served = await fetch(`${baseUrl}/openapi.json`)
      assert.equal(served.status, 200)
      validator = new OpenApiValidator((await served.json()) as Record<string, unknown>)
    })

    void it("the validator compiles the document's schemas and refuses a broken body", () => {
      const headers = new Headers({
        'content-type': 'application/json',
        'ratelimit-limit': '1',
        'ratelimit-remaining': '1',
        'ratelimit-reset': '1',
        etag: '"1"'
      })
      const contact = { id: '00000000-0000-4000-8000-000000000000', first_name: 'Ada' }
      const broken = validator.check({
        method: 'GET',
        path: '/api/v1/contacts/{id}',
        status: 200,
        headers,
        body: { ...contact, id: 42 }
      })
      assert.ok(
        broken.some(i => i.includes('body does not match')),
        broken.join('\n')
      )
      const problem = { status: 404, title: 'Not Found', type: 'about:blank', code: 'not_found' }
      const problemHeaders = new Headers({ 'content-type': 'application/problem+json' })
      assert.deepEqual(
        validator.check({
          method: 'GET',
          path: '/api/v1/contacts/{id}',
          status: 404,
          headers: problemHeaders,
          body: problem
        }),
        []
      )
      assert.ok(
        validator.check({
          method: 'GET',
          path: '/api/v1/contacts/{id}',
          status: 404,
          headers: problemHeaders,
          body: { ...problem, status: '404' }
        }).length > 0
      )
      assert.ok(
        validator
          .check({ method: 'GET', path: '/api/v1/contacts/{id}', status: 404, headers, body: problem })
          .some(i => i.includes('content type'))
      )
      assert.ok(
        validator
          .check({
            method: 'GET',
            path: '/api/v1/contacts',
            status: 200,
            headers,
            body: { items: [], page: 1, size: 20, total: 0 }
          })
          .some(i => i.includes('etag sent but not documented'))
      )
    })

    void it('contacts, spaces, events, cover, attendees, series and automation', async () => {
      const tenant = newTenant(t)
      const api = clientFor(await tenant.user('alice', ['admin']))

      const me = ok(await api.GET('/api/v1/auth/me'), 'me')
      assert.equal(me.user_id, 'alice')

      // contacts: create (ETag, Location), read, a conditional patch, a stale one, the list with its defaults
      const created = await api.POST('/api/v1/contacts', {
        body: { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.org' }
      })
      const ada = ok(created, 'create contact')
      assert.equal(created.response.status, 201)
      assert.equal(created.response.headers.get('location'), `/api/v1/contacts/${ada.id}`)
      const etag = created.response.headers.get('etag') ?? ''
      const read = ok(await api.GET('/api/v1/contacts/{id}', { params: { path: { id: ada.id } } }), 'get contact')
      assert.equal(read.email, 'ada@example.org')
      const patched = ok(
        await api.PATCH('/api/v1/contacts/{id}', {
          params: { path: { id: ada.id }, header: { 'If-Match': etag } },
          body: { company: 'Analytical Engines' }
        }),
        'patch contact'
      )
      assert.equal(patched.company, 'Analytical Engines')
      const stale = failed(
        await api.PATCH('/api/v1/contacts/{id}', {
          params: { path: { id: ada.id }, header: { 'If-Match': etag } },
          body: { company: 'Nobody' }
        }),
        412,
        'stale If-Match'
      )
      assert.match(stale.detail ?? '', /changed/)
      const contacts = ok(await api.GET('/api/v1/contacts'), 'list contacts')
      assert.deepEqual([contacts.page, contacts.size, contacts.total], [1, 20, 1])
      const found = ok(
        await api.GET('/api/v1/contacts/search', { params: { query: { query: 'Lovelace' } } }),
        'search contacts'
      )
      assert.ok(JSON.stringify(found).includes(ada.id))
      const missing = failed(
        await api.GET('/api/v1/contacts/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } }),
        404,
        'unknown contact'
      )
      assert.equal(missing.title, 'Not Found')
      const invalid = failed(
        await api.GET('/api/v1/contacts', { params: { query: { size: 1000 } } }),
        400,
        'size over its bound'
      )
      assert.deepEqual(
        invalid.errors?.map(e => e.location),
        ['query.size']
      )

      // an Idempotency-Key replays the first answer
      const key = {
        params: { header: { 'Idempotency-Key': `journey-${kind}` } },
        body: { first_name: 'Charles', email: 'charles@example.org' }
      }
      const first = ok(await api.POST('/api/v1/contacts', key), 'idempotent create')
      const again = await api.POST('/api/v1/contacts', key)
      assert.equal(ok(again, 'idempotent replay').id, first.id)
      assert.equal(again.response.headers.get('idempotent-replayed'), 'true')

      // spaces
      const space = ok(await api.POST('/api/v1/spaces', { body: { title: 'Research' } }), 'create space')
      ok(await api.GET('/api/v1/spaces/{id}', { params: { path: { id: space.id } } }), 'get space')
      const spaces = ok(await api.GET('/api/v1/spaces', { params: { query: { size: 5 } } }), 'list spaces')
      assert.ok(spaces.items.some(s => s.id === space.id))

      // a dry run of a calendar import into the space: `dry_run` is a boolean, the report says what would be
      // created, and nothing is stored
      const ics = [
        'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//journey//EN', 'BEGIN:VEVENT', 'UID:journey-planning@example.org',
        'DTSTAMP:20270101T000000Z', 'DTSTART:20270601T090000Z', 'DTEND:20270601T100000Z', 'SUMMARY:Planning',
        'END:VEVENT', 'END:VCALENDAR', ''
      ].join('\r\n')
      const report = ok(await api.POST('/api/v1/spaces/{id}/calendar-import', {
        params: { path: { id: space.id }, query: { dry_run: true } },
        body: ics,
        headers: { 'content-type': 'text/calendar' },
        bodySerializer: body => String(body)
      }), 'dry-run calendar import')
      assert.deepEqual([report.dry_run, report.created, report.items.map(i => i.action)], [true, 1, ['create']])
      const spaceEvents = ok(await api.GET('/api/v1/spaces/{id}/events', { params: { path: { id: space.id } } }),
        'space events after the dry run')
      assert.equal(spaceEvents.total, 0)

      // events: create, link to the space, publish (no body: its options are all optional), read
      const event = ok(
        await api.POST('/api/v1/events', {
          body: { ...londonEvent('Lecture', '2027-05-03T09:00:00Z', '2027-05-03T10:00:00Z'), visibility: 30 }
        }),
        'create event'
      )
      ok(
        await api.POST('/api/v1/events/{id}/spaces', {
          params: { path: { id: event.id } },
          body: { space_id: space.id }
        }),
        'link event to space'
      )
      const published = await api.POST('/api/v1/events/{id}/publish', { params: { path: { id: event.id } } })
      assert.equal(published.response.status, 204, JSON.stringify(published.error))
      const lecture = ok(await api.GET('/api/v1/events/{id}', { params: { path: { id: event.id } } }), 'get event')
      assert.equal(lecture.status, 'published')
      assert.deepEqual(
        lecture.spaces.map(s => s.id),
        [space.id]
      )
      const events = ok(await api.GET('/api/v1/events', { params: { query: { status: 'published' } } }), 'list events')
      assert.ok(events.items.some(e => e.id === event.id))

      // the cover image: multipart upload, binary download
      const png = await sharp({ create: { width: 4, height: 3, channels: 3, background: '#3366cc' } })
        .png()
        .toBuffer()
      const form = new FormData()
      form.append('file', new Blob([png], { type: 'image/png' }), 'cover.png')
      const withCover = ok(
        await api.PUT('/api/v1/events/{id}/cover', {
          params: { path: { id: event.id } },
          body: { file: new Blob([png]) },
          bodySerializer: () => form
        }),
        'upload cover'
      )
      assert.ok(withCover.cover_image_key !== null)
      const cover = await api.GET('/api/v1/events/{id}/cover', { params: { path: { id: event.id } }, parseAs: 'blob' })
      assert.equal(cover.response.headers.get('content-type'), 'image/png')
      assert.ok(ok(cover, 'download cover').size > 0)

      // attendees: add, list, check in
      ok(
        await api.POST('/api/v1/events/{id}/attendees', {
          params: { path: { id: event.id } },
          body: { contact_id: ada.id }
        }),
        'add attendee'
      )
      const checkIn = await api.POST('/api/v1/events/{id}/attendees/{contact_id}/check-in', {
        params: { path: { id: event.id, contact_id: ada.id } },
        body: {}
      })
      assert.equal(checkIn.response.status, 204, JSON.stringify(checkIn.error))
      const attendees = ok(
        await api.GET('/api/v1/events/{id}/attendees', { params: { path: { id: event.id } } }),
        'list attendees'
      )
      assert.deepEqual(
        attendees.items.map(a => [a.contact_id, a.status]),
        [[ada.id, 'checked_in']]
      )

      // two 409s of one operation told apart by the typed `code` (docs/errors.md), not by their English
      ok(await api.PATCH('/api/v1/events/{id}/registration', {
        params: { path: { id: event.id } }, body: { capacity: 1, waitlist_enabled: false }
      }), 'capacity 1')
      const addTo = async (contactId: string) => await api.POST('/api/v1/events/{id}/attendees', {
        params: { path: { id: event.id } }, body: { contact_id: contactId, status: 'confirmed' }
      })
      const conflicts = [failed(await addTo(ada.id), 409, 'again'), failed(await addTo(first.id), 409, 'full')]
      const react: Partial<Record<ErrorModel['code'], string>> = {
        already_attending: 'read the attendee', event_full: 'offer the waitlist'
      }
      const reactions = conflicts.map(conflict => react[conflict.code] ?? `unexpected ${conflict.code}`)
      assert.deepEqual(reactions, ['read the attendee', 'offer the waitlist'])
      assert.ok(conflicts.every(c => c.type.endsWith(`/problems/${c.code}`)))

      // a weekly series, its occurrences
      const series = ok(
        await api.POST('/api/v1/events/with-series', {
          body: {
            ...londonEvent('Seminar', '2027-06-07T14:00:00Z', '2027-06-07T15:00:00Z'),
            series: { freq: 'weekly', repeat_days: [1], ends_on: 'after_n', end_count: 4 }
          }
        }),
        'create event with series'
      )
      assert.equal(series.occurrences.length, 4)
      const occurrences = ok(
        await api.GET('/api/v1/events/{id}/series/occurrences', { params: { path: { id: series.event.id } } }),
        'list occurrences'
      )
      assert.equal(occurrences.total, 4)
      ok(await api.GET('/api/v1/events/{id}/series', { params: { path: { id: series.event.id } } }), 'get series')

      // automation: the catalogues, a rule, a manual run, its executions
      const triggers = ok(await api.GET('/api/v1/automation/triggers'), 'triggers')
      assert.ok(JSON.stringify(triggers).includes('contact.created'))
      ok(await api.GET('/api/v1/automation/actions'), 'actions')
      const rule = ok(
        await api.POST('/api/v1/automation/rules', {
          body: {
            name: 'Welcome',
            scope: 'GLOBAL',
            schedule: { event_type: 'contact.created' },
            actions: [{ type: 'notify', to: 'creator', subject: 'Hello', body: 'A contact was added' }]
          }
        }),
        'create rule'
      )
      ok(await api.GET('/api/v1/automation/rules/{rule_id}', { params: { path: { rule_id: rule.id } } }), 'get rule')
      const run = await api.POST('/api/v1/automation/rules/{rule_id}/execute', {
        params: { path: { rule_id: rule.id } },
        body: {}
      })
      assert.equal(run.response.status, 202, JSON.stringify(run.error))
      ok(
        await api.GET('/api/v1/automation/rules/{rule_id}/executions', { params: { path: { rule_id: rule.id } } }),
        'list executions'
      )

      // no token: 401 with WWW-Authenticate, an ErrorModel like every error
      const anonymous = createCollabClient({ baseUrl })
      const refused = await anonymous.GET('/api/v1/contacts')
      failed(refused, 401, 'no token')
      assert.equal(refused.response.headers.get('www-authenticate'), 'Bearer')

      assert.ok(checked >= 30, `only ${checked} answers checked`)
      assert.deepEqual(issues, [])
    })
  })
}
