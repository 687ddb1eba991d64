/**
 * Forged, tampered and foreign tokens of every kind the service hands out (docs/security.md, "What leaves the
 * service"): a sync token, a feed token, a manager invitation of an event and of a space, a check-in token. Each
 * answers a 4xx problem naming its parameter, never repeats the token in its text, and changes nothing: the real
 * token still works afterwards for whom it was made.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { queuedNotifications } from './helpers/outbox.ts'
import { expectStatus } from './helpers/requests.ts'
import { createEvent, publishEvent } from '../src/modules/events/events.fixtures.ts'
import { createSpace, publish } from '../src/modules/spaces/spaces.fixtures.ts'

type Json = Record<string, any>
type Answer = { statusCode: number, body: string }

/** A token with one character changed in its middle. */
const tampered = (token: string): string => {
  const i = Math.floor(token.length / 2)
  return token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1)
}
const forged = (): string => Buffer.from(`forged-${Math.random()}`).toString('base64url')

interface Kind {
  /** the parameter a refusal names */
  location: string
  status: number
  /** a real token of a fresh tenant, and who may use it */
  make: (t: TestApp) => Promise<{ token: string, foreign?: string, use: (token: string) => Promise<Answer> }>
}

/**
 * A manager invitation of an event or a space, to dana, accepted by her. Its token: in the answer of an event's
 * invite, by mail only for a space's.
 */
function invitation (kind: 'events' | 'spaces', permissions: string[]): Kind {
  return {
    location: 'body.token',
    status: 404,
    make: async t => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const dana = await tenant.user('dana', ['member'], { email: 'dana@example.test' })
      const made = kind === 'events' ? await createEvent(t, alice, { title: 'Board' }) : await createSpace(t, alice)
      if (kind === 'spaces') await publish(t, alice, made.id as number)
      const invite = (await expectStatus(t, alice, 'POST', `/api/v1/${kind}/${made.id as number}/managers/invite`, 201,
        { email: 'dana@example.test', permissions })).json()
      const [mail] = await queuedNotifications(t, tenant.id)
      return {
        token: (invite.invite_token ?? (mail?.payload as Json).invite_token) as string,
        use: async token => await t.as(dana, {
          method: 'POST', url: `/api/v1/${kind}/managers/accept`, payload: { token }
        })
      }
    }
  }
}

const KINDS: Record<string, Kind> = {
  'a sync token': {
    location: 'query.sync_token',
    status: 410,
    make: async t => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const first = (await expectStatus(t, alice, 'GET', '/api/v1/events?sync=true&size=100', 200)).json()
      return {
        token: first.sync_token as string,
        use: async token => await t.as(alice, {
          method: 'GET', url: `/api/v1/events?sync_token=${encodeURIComponent(token)}`
        })
      }
    }
  },
  'a feed token': {
    location: 'query.token',
    status: 404,
    make: async t => {
      const alice = await newTenant(t).user('alice')
      const feed = (await expectStatus(t, alice, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })).json()
      // a feed URL works for whoever holds it: its "foreign" token is one its user revoked
      const gone = (await expectStatus(t, alice, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })).json()
      await expectStatus(t, alice, 'DELETE', `/api/v1/feed-tokens/${gone.id as number}`, 204)
      return {
        token: feed.token as string,
        foreign: gone.token as string,
        use: async token => await t.app.inject({
          method: 'GET', url: `/api/v1/me/calendar.ics?token=${encodeURIComponent(token)}`
        })
      }
    }
  },
  "an event's manager invitation": invitation('events', ['attendees:read']),
  "a space's manager invitation": invitation('spaces', ['space:members']),
  'a check-in token': {
    location: 'body.token',
    status: 404,
    make: async t => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const event = await createEvent(t, alice, { title: 'Gala', start_dt: new Date().toISOString() })
      await publishEvent(t, alice, event.id as number)
      const contact = (await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Guest' })).json()
      const base = `/api/v1/events/${event.id as number}`
      await expectStatus(t, alice, 'POST', `${base}/attendees`, 201, { contact_id: contact.id, status: 'confirmed' })
      const issued = (await expectStatus(t, alice, 'POST', `${base}/attendees/${contact.id as string}/check-in-token`,
        201)).json()
      return {
        token: issued.token as string,
        use: async token => await t.as(alice, { method: 'POST', url: `${base}/check-in/token`, payload: { token } })
      }
    }
  }
}

for (const kind of databases()) {
  void describe(`${kind}: forged, tampered and foreign tokens of every kind`, () => {
    const t = useTestApp(kind)
    for (const [name, k] of Object.entries(KINDS)) {
      void it(`${name}: a forged, a tampered and another tenant's token answer ${k.status} naming ${k.location}; ` +
        'the real one still works', async () => {
        const mine = await k.make(t)
        const theirs = await k.make(t)
        const tries: Array<[string, string]> = [['forged', forged()], ['tampered', tampered(mine.token)],
          ['foreign', mine.foreign ?? theirs.token]]
        for (const [what, token] of tries) {
          const res = await mine.use(token)
          assert.equal(res.statusCode, k.status, `${what}: ${res.body}`)
          const problem = JSON.parse(res.body) as Json
          assert.ok((problem.errors as Json[] | undefined)?.some(e => e.location === k.location),
            `${what}: ${res.body}`)
          assert.ok(!res.body.includes(token), `${what}: the answer repeats the token`)
        }
        // nothing changed: the real tokens still answer whom they were made for
        for (const real of [mine, theirs]) {
          const res = await real.use(real.token)
          assert.ok(res.statusCode >= 200 && res.statusCode < 300, res.body)
        }
      })
    }
  })
}
