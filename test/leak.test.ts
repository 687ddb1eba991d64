/**
 * The generated leak test of the outbound rule (docs/security.md, "What leaves the service"). One world per
 * database: every kind of resource a reader may not read (a private event, another organization's event, an event
 * of the organization the reader left, an event whose grant was revoked, an attendance on an event whose attendees
 * the reader may not read, a personal contact, another organization's contact, a private draft space, a private
 * series) is created and changed with a marker of its kind in every text field, beside a twin the reader may read
 * with a marker of its own. Then every channel is read as its reader: a rule's run history and the webhook its
 * action posts to a real receiver, an outbound webhook subscription's deliveries (received and listed), a contact's
 * timeline, space analytics and their CSV, the notifications list, calendar feeds, sync pages, exports, and the
 * lists and searches.
 *
 * A case per channel × kind fails when the hidden marker appears. A case per channel checks that the twins' markers
 * do reach it: what the channel would carry if a check were dropped (`npm run test:mutation` drops one and watches
 * this file fail).
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { expectStatus } from './helpers/requests.ts'
import { queuedNotifications } from './helpers/outbox.ts'
import { insertRow } from './helpers/rows.ts'
import { Replica } from './helpers/sync-replica.ts'
import { addManager, createEvent, publishEvent } from '../src/modules/events/events.fixtures.ts'
import { createSpace, publish } from '../src/modules/spaces/spaces.fixtures.ts'
import { drain, rule } from '../src/modules/automation/automation.fixtures.ts'
import { TOPIC_AUDIENCE } from '../src/modules/disclosure/disclosure.ts'
import { allowListOf } from '../src/platform/http/outbound.ts'
import { deliverDue, dispatchWebhooks } from '../src/modules/webhooks/webhooks.delivery.ts'

type Json = Record<string, any>

/** The kinds of what a reader may not read, and who of the two readers may not read each. */
const KINDS = {
  'private event': ['member'],
  'event of another organization': ['member'],
  'event of the organization the reader left': ['member'],
  'event whose grant was revoked': ['member'],
  'attendance the reader may not read': ['member'],
  'personal contact': ['member', 'admin'],
  'contact of another organization': ['member'],
  'private draft space': ['member'],
  'private series': ['member']
} as const
type Kind = keyof typeof KINDS
type Reader = 'member' | 'admin'

/** The twins the reader may read, whose markers a channel must carry (its positive control). */
type Twin = 'event' | 'contact' | 'attendance' | 'space' | 'series'

interface Channel {
  reader: Reader
  /** the twins this channel carries: their markers must appear in what it gives */
  carries: Twin[]
  read: (w: World) => Promise<string>
}

interface World {
  t: TestApp
  tenantId: string
  member: string
  admin: string
  hidden: Record<Kind, string>
  seen: Record<Twin, string>
  ruleIds: string[]
  subscriptionId: string
  received: { member: string[], admin: string[] }
  spaceId: number
  memberEventId: number
  contactIds: string[]
  feeds: string[]
  replicas: Replica[]
  exports: string[]
}

const mark = (label: string): string => `${label}${Math.random().toString(36).slice(2, 10)}X`

/** Every text field of an event carries the marker. */
const eventText = (m: string): Json => ({
  title: `Title ${m}`,
  description: `Description ${m}`,
  address: `Street ${m}`,
  keywords: [`kw${m}`],
  metadata: { note: m }
})
const contactText = (m: string): Json => ({
  first_name: `First${m}`,
  last_name: `Last${m}`,
  email: `${m.toLowerCase()}@example.test`,
  company: `Company ${m}`,
  notes: `Notes ${m}`
})
const soon = (days: number): Json => ({
  start_dt: new Date(Date.now() + days * 86_400_000).toISOString(),
  end_dt: new Date(Date.now() + days * 86_400_000 + 3_600_000).toISOString()
})

const body = async (t: TestApp, token: string, url: string): Promise<string> => {
  const res = await t.as(token, { method: 'GET', url })
  return `${res.statusCode} ${res.body}`
}

/** Every page of a list as `token` reads it, as text. */
async function allPages (t: TestApp, token: string, url: string): Promise<string> {
  const out: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 50; page++) {
    const sep = url.includes('?') ? '&' : '?'
    const res = await t.as(token, {
      method: 'GET',
      url: `${url}${sep}size=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`
    })
    out.push(res.body)
    const next = res.statusCode === 200 ? res.json().next_cursor : null
    if (typeof next !== 'string') break
    cursor = next
  }
  return out.join('\n')
}

const CHANNELS: Record<string, Channel> = {
  "a rule's run history (every topic)": {
    reader: 'member',
    carries: ['event', 'contact', 'attendance', 'space', 'series'],
    read: async w => (await Promise.all(w.ruleIds.map(async id =>
      await allPages(w.t, w.member, `/api/v1/automation/rules/${id}/executions`)))).join('\n')
  },
  "the webhook a rule's action posts": {
    reader: 'member',
    carries: ['event', 'contact', 'attendance', 'space', 'series'],
    read: async w => w.received.member.join('\n')
  },
  "an outbound webhook subscription's deliveries (received)": {
    reader: 'admin',
    carries: ['contact'],
    read: async w => w.received.admin.join('\n')
  },
  // the log lists deliveries by message id, without their bodies: it is read with the body each entry names
  "an outbound webhook subscription's delivery log": {
    reader: 'admin',
    carries: ['contact'],
    read: async w => {
      const log = await allPages(w.t, w.admin, `/api/v1/webhooks/${w.subscriptionId}/deliveries`)
      const named = [...log.matchAll(/"msg_id":"([^"]+)"/g)].map(m => m[1] ?? '')
      return [log, ...named.map(id => w.received.admin.find(r => r.startsWith(`${id} `)) ?? '')].join('\n')
    }
  },
  // an item tells that its contact and event go together: it is read with what an admin reads of that attendance
  // (its notes), so an item of an attendance the reader may not read carries that attendance's marker
  "a contact's timeline": {
    reader: 'member',
    carries: ['attendance'],
    read: async w => (await Promise.all(w.contactIds.map(async id => {
      const text = await allPages(w.t, w.member, `/api/v1/contacts/${id}/timeline`)
      const events = [...new Set([...text.matchAll(/"event":\{"id":([0-9]+)/g)].map(m => m[1] ?? ''))]
      const notes = await Promise.all(events.map(async e => {
        const res = await w.t.as(w.admin, { method: 'GET', url: `/api/v1/events/${e}/attendees?size=100` })
        const row = (res.json().items as Json[] | undefined)?.find(a => a.contact_id === id || a.contact?.id === id)
        return JSON.stringify(row?.notes ?? null)
      }))
      return [text, ...notes].join('\n')
    }))).join('\n')
  },
  'space analytics and their CSV': {
    reader: 'member',
    carries: ['event'],
    read: async w => [
      await body(w.t, w.member, `/api/v1/spaces/${w.spaceId}/analytics`),
      await body(w.t, w.member, `/api/v1/spaces/${w.spaceId}/analytics/export`)
    ].join('\n')
  },
  // what the reader's rules mail to attendees: the recipients are told what the rule's creator is told
  "the mails a rule's notify action queues": {
    reader: 'member',
    carries: ['attendance'],
    read: async w => JSON.stringify((await queuedNotifications(w.t, w.tenantId))
      .filter(n => (n.payload as Json).source === 'automation')
      .map(n => [n.recipient, n.subject, n.body]))
  },
  'the notifications list': {
    reader: 'admin',
    carries: ['contact'],
    read: async w => await allPages(w.t, w.admin, '/api/v1/notifications')
  },
  'calendar feeds (personal and space)': {
    reader: 'member',
    carries: ['event'],
    read: async w => (await Promise.all(w.feeds.map(async url =>
      (await w.t.app.inject({ method: 'GET', url })).body))).join('\n')
  },
  'sync pages (events, contacts, attendees)': {
    reader: 'member',
    carries: ['event', 'contact', 'attendance'],
    read: async w => {
      for (const r of w.replicas) await r.sync(100)
      return w.replicas.map(r => JSON.stringify([...r.rows.values()])).join('\n')
    }
  },
  'exports (attendees CSV, the revoked event)': {
    reader: 'member',
    carries: ['attendance'],
    read: async w => (await Promise.all(w.exports.map(async url => await body(w.t, w.member, url)))).join('\n')
  },
  'lists and searches': {
    reader: 'member',
    carries: ['event', 'contact', 'space', 'series'],
    read: async w => (await Promise.all([
      '/api/v1/events', '/api/v1/contacts', '/api/v1/spaces', '/api/v1/events/managers/pending'
    ].map(async url => await allPages(w.t, w.member, url)))).join('\n') +
      await body(w.t, w.member, '/api/v1/spaces/tree') +
      await body(w.t, w.member, `/api/v1/events/calendar?start_date=${new Date().toISOString().slice(0, 10)}` +
        `&end_date=${new Date(Date.now() + 60 * 86_400_000).toISOString().slice(0, 10)}`) +
      (await Promise.all(Object.values(w.hidden).map(async m =>
        // the search answer repeats its query: it is asked without the marker's last letter
        await body(w.t, w.member, `/api/v1/contacts/search?query=${m.slice(0, -1)}`)))).join('\n')
  }
}

/** Builds the world: the readers' channels first, then what they may not read beside its twins. */
async function buildWorld (t: TestApp, received: World['received'], hookUrl: (who: Reader) => string): Promise<World> {
  const tenant = newTenant(t)
  const hidden = Object.fromEntries(Object.keys(KINDS).map(k => [k, mark('HIDE')])) as Record<Kind, string>
  const seen = Object.fromEntries(['event', 'contact', 'attendance', 'space', 'series']
    .map(k => [k, mark('SEEN')])) as Record<Twin, string>
  const admin = await tenant.user('root', ['admin'], { orgId: 'org-a' })
  const bob = await tenant.user('bob', ['member'], { orgId: 'org-a' })
  const olga = await tenant.user('olga', ['member'], { orgId: 'org-a' })
  const loner = await tenant.user('loner', ['member'])
  const oscar = await tenant.user('oscar', ['member'], { orgId: 'org-c' })
  const olivia = await tenant.user('olivia', ['member'], { orgId: 'org-b' })
  // the reader starts in org-b: her rules, feed tokens and space are made there, then she moves to org-a
  const before = await tenant.user('mallory', ['member'], { orgId: 'org-b' })
  const leftBehind = await createEvent(t, olivia, { title: 'Org B meeting', visibility: 30, ...soon(3) })
  await publishEvent(t, olivia, leftBehind.id as number)
  const ruleIds: string[] = []
  for (const topic of Object.keys(TOPIC_AUDIENCE)) {
    // on an attendee topic the rule also mails the event's attendees what the domain event said
    const mail = topic.startsWith('attendee.')
      ? [{ type: 'notify', to: 'attendees', subject: 'About {{title}}', body: '{{title}} {{notes}} {{contact_id}}' }]
      : []
    const r = await rule(t, before, {
      name: `on ${topic}`,
      schedule: { event_type: topic },
      actions: [{ type: 'webhook', url: hookUrl('member') }, ...mail]
    })
    ruleIds.push(r.id as string)
  }
  const space = await createSpace(t, before, { title: 'Reader space', visibility: 20 })
  await publish(t, before, space.id as number)
  const spaceId = space.id as number
  const feeds = [
    (await expectStatus(t, before, 'POST', '/api/v1/feed-tokens', 201, { scope: 'personal' })).json(),
    (await expectStatus(t, before, 'POST', '/api/v1/feed-tokens', 201, { scope: 'space', space_id: spaceId })).json()
  ].map(f => new URL(f.url as string).pathname + new URL(f.url as string).search)
  // the revoked grant: she manages bob's private event, with attendees, until the grant goes
  const revoked = await createEvent(t, bob, { title: 'Granted', visibility: 10, ...soon(4) })
  await publishEvent(t, bob, revoked.id as number)
  await addManager(t, tenant.id, revoked.id as number, 'mallory', { permissions: ['attendees:read', 'events:read'] })
  const subscription = (await expectStatus(t, admin, 'POST', '/api/v1/webhooks', 201,
    { url: hookUrl('admin'), event_types: ['*'] })).json()
  // the admin's own rules run on everything: their runs show in a contact's timeline only to who may be told of them
  for (const topic of ['attendee.added', 'space.contact_added']) {
    await rule(t, admin, { name: `admin on ${topic}`, schedule: { event_type: topic }, actions: [] })
  }

  const member = await tenant.user('mallory', ['member'], { orgId: 'org-a' })
  await expectStatus(t, member, 'GET', '/api/v1/auth/me', 200)
  await expectStatus(t, bob, 'DELETE', `/api/v1/events/${revoked.id as number}/managers/mallory`, 204)
  await expectStatus(t, member, 'GET', `/api/v1/events/${revoked.id as number}`, 404)

  // her own event with an attendee (the attendance twin), and the sync replicas, before anything hidden is written
  const mine = await createEvent(t, member, { title: `Reader event ${seen.attendance}`, visibility: 20, ...soon(5) })
  await publishEvent(t, member, mine.id as number)
  const replicas = [
    new Replica(t, member, '/api/v1/events'),
    new Replica(t, member, '/api/v1/contacts'),
    new Replica(t, member, `/api/v1/events/${mine.id as number}/attendees`)
  ]
  for (const r of replicas) await r.sync(100)

  const contact = async (token: string, m: string): Promise<string> =>
    (await expectStatus(t, token, 'POST', '/api/v1/contacts', 201, contactText(m))).json().id as string
  const attend = async (token: string, eventId: number, contactId: string, notes: string, status = 'confirmed') =>
    await expectStatus(t, token, 'POST', `/api/v1/events/${eventId}/attendees`, 201,
      { contact_id: contactId, status, notes })
  const linkToSpace = async (eventId: number): Promise<void> =>
    await insertRow(t, tenant.id, 'event_spaces', { event_id: eventId, space_id: spaceId })

  // the twins
  const vera = await contact(olga, seen.contact)
  const shownEvent = await createEvent(t, bob, { ...eventText(seen.event), visibility: 40, ...soon(6) })
  await publishEvent(t, bob, shownEvent.id as number)
  await linkToSpace(shownEvent.id as number)
  await attend(bob, shownEvent.id as number, vera, 'plain')
  await attend(member, mine.id as number, vera, `Notes ${seen.attendance}`)
  const shownSpace = await createSpace(t, olga, {
    title: `Space ${seen.space}`, description: seen.space, visibility: 40
  })
  await publish(t, olga, shownSpace.id as number)
  await expectStatus(t, olga, 'POST', `/api/v1/spaces/${shownSpace.id as number}/contacts`, 201, { contact_id: vera })
  await expectStatus(t, bob, 'POST', '/api/v1/events/with-series', 201, {
    title: `Series ${seen.series}`,
    visibility: 40,
    ...soon(7),
    series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
  })

  // what the member may not read, each linked to what she reads where a channel would show it
  const privateEvent = await createEvent(t, bob, { ...eventText(hidden['private event']), visibility: 10, ...soon(8) })
  await publishEvent(t, bob, privateEvent.id as number)
  const otherOrg = await createEvent(t, oscar,
    { ...eventText(hidden['event of another organization']), visibility: 30, ...soon(9) })
  await publishEvent(t, oscar, otherOrg.id as number)
  await expectStatus(t, olivia, 'PATCH', `/api/v1/events/${leftBehind.id as number}`, 200,
    eventText(hidden['event of the organization the reader left']))
  await expectStatus(t, bob, 'PATCH', `/api/v1/events/${revoked.id as number}`, 200,
    eventText(hidden['event whose grant was revoked']))
  for (const e of [privateEvent, otherOrg, leftBehind, revoked]) {
    await linkToSpace(e.id as number)
    const notes = `Notes ${hidden['attendance the reader may not read']}`
    // bob reads vera; the other organizations do not: their attendance is written by hand
    if (e === privateEvent || e === revoked) await attend(bob, e.id as number, vera, notes)
    else {
      await insertRow(t, tenant.id, 'attendees',
        { event_id: e.id as number, series_id: null, contact_id: vera, status: 'confirmed', notes })
    }
  }
  const closed = await createEvent(t, olga, { title: 'Open day', visibility: 40, ...soon(10) })
  await publishEvent(t, olga, closed.id as number)
  await attend(olga, closed.id as number, vera, `Notes ${hidden['attendance the reader may not read']}`)
  const personal = await contact(loner, hidden['personal contact'])
  const foreign = await contact(oscar, hidden['contact of another organization'])
  for (const c of [personal, foreign]) {
    await insertRow(t, tenant.id, 'space_contacts', { space_id: spaceId, contact_id: c, created_by: 'loner' })
  }
  const lonerEvent = await createEvent(t, loner, { title: 'Dinner', visibility: 40, ...soon(11) })
  await publishEvent(t, loner, lonerEvent.id as number)
  await attend(loner, lonerEvent.id as number, personal, 'invited', 'invited')
  await attend(olga, closed.id as number, (await contact(olga, seen.contact + 'b')), 'invited', 'invited')
  await expectStatus(t, loner, 'POST', `/api/v1/events/${lonerEvent.id as number}/cancel`, 200, { reason: 'rain' })
  await expectStatus(t, olga, 'POST', `/api/v1/events/${closed.id as number}/cancel`, 200, { reason: 'rain' })
  const draftSpace = await createSpace(t, bob,
    { title: `Space ${hidden['private draft space']}`, description: hidden['private draft space'] })
  await expectStatus(t, bob, 'POST', `/api/v1/spaces/${draftSpace.id as number}/contacts`, 201, { contact_id: vera })
  await expectStatus(t, bob, 'POST', '/api/v1/events/with-series', 201, {
    ...eventText(hidden['private series']),
    visibility: 10,
    ...soon(12),
    series: { freq: 'daily', interval: 1, ends_on: 'after_n', end_count: 2 }
  })

  await drain(t.ctx.engines.automation, { tenantId: tenant.id })
  const engine = { db: t.ctx.db, allow: allowListOf(['127.0.0.1']), timeoutMs: 2000 }
  await dispatchWebhooks(engine)
  await deliverDue(engine)

  const contactIds = [...new Set([vera, ...(await allPages(t, member, '/api/v1/contacts'))
    .matchAll(/"id":"([0-9a-f-]{36})"/g)].map(m => typeof m === 'string' ? m : m[1] ?? ''))]
  return {
    t,
    tenantId: tenant.id,
    member,
    admin,
    hidden,
    seen,
    ruleIds,
    subscriptionId: String(subscription.id),
    received,
    spaceId,
    memberEventId: mine.id as number,
    contactIds,
    feeds,
    replicas,
    exports: [
      `/api/v1/events/${mine.id as number}/attendees/export`,
      `/api/v1/events/${revoked.id as number}/attendees/export`,
      `/api/v1/events/${revoked.id as number}/attendees`
    ]
  }
}

for (const kind of databases()) {
  void describe(`${kind}: no channel carries what its reader may not read (generated)`, () => {
    const t = useTestApp(kind, { env: { AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1' } })
    const received: World['received'] = { member: [], admin: [] }
    const receiver = http.createServer((req, res) => {
      let text = ''
      req.on('data', (c: Buffer) => { text += c.toString() })
      req.on('end', () => {
        const id = req.headers['webhook-id']
        ;(req.url === '/admin' ? received.admin : received.member).push(`${typeof id === 'string' ? id : ''} ${text}`)
        res.writeHead(204).end()
      })
    })
    let world: World | undefined
    const read = new Map<string, Promise<string>>()
    const channelText = async (name: string, channel: Channel): Promise<string> => {
      assert.ok(world !== undefined, 'the world was built')
      const w = world
      // markers are compared in lower case: an e-mail address is kept so
      if (!read.has(name)) read.set(name, channel.read(w).then(text => text.toLowerCase()))
      return await (read.get(name) ?? '')
    }
    before(async () => {
      await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
      const port = (receiver.address() as AddressInfo).port
      world = await buildWorld(t, received, who => `http://127.0.0.1:${port}/${who}`)
    })
    after(async () => { await new Promise(resolve => receiver.close(resolve)) })

    for (const [name, channel] of Object.entries(CHANNELS)) {
      void it(`${name} carries what its reader may read (the twins)`, async () => {
        const text = await channelText(name, channel)
        const w = world as World
        for (const twin of channel.carries) {
          assert.ok(text.includes(w.seen[twin].toLowerCase()),
            `${name}: the ${twin} twin is missing\n${text.slice(0, 2000)}`)
        }
      })
      for (const [k, readers] of Object.entries(KINDS) as Array<[Kind, readonly Reader[]]>) {
        if (!readers.includes(channel.reader)) continue
        void it(`${name} never carries a ${k}`, async () => {
          const text = await channelText(name, channel)
          const m = (world as World).hidden[k].toLowerCase()
          const at = text.indexOf(m)
          assert.equal(at, -1, `${name} carries the ${k}: …${text.slice(Math.max(0, at - 600), at + 200)}…`)
        })
      }
    }
  })
}
