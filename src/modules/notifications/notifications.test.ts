/**
 * Notifications as people receive them and as administrators see them: mails handed to a real
 * SMTP server (smtp-server, on 127.0.0.1 and a random port) and parsed back (mailparser);
 * addresses resolved when queued; undeliverable and failed notifications in the admin list.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { makeNotificationsDue, queuedNotifications } from '../../../test/helpers/outbox.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { startSmtpServer, type SmtpCatcher } from '../../../test/helpers/smtp.ts'
import { loadConfig } from '../../config.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import {
  deliverPendingNotifications, queueNotification, type Notification
} from '../../platform/notifications/notifications.ts'
import { createNotificationSender } from '../../platform/notifications/senders.ts'

type Json = Record<string, any>

const APP_URL = 'https://app.example.org'
const FROM = 'Collab <notifications@example.org>'
const EVIL = '<script>alert(1)</script>&"\'Gala'

/** A logger that keeps the warnings of delivery. */
function warnings () {
  const lines: Array<{ obj: Json, msg: string }> = []
  return { lines, warn (obj: object, msg: string) { lines.push({ obj: obj as Json, msg }) }, info () {} }
}

const list = async (t: TestApp, token: string, query = '') =>
  await t.as(token, { method: 'GET', url: `/api/v1/notifications${query}` })

for (const kind of databases()) {
  void describe(`${kind}: notifications`, () => {
    const t = useTestApp(kind, { env: { APP_URL, SMTP_FROM: FROM } })
    let smtp: SmtpCatcher
    before(async () => { smtp = await startSmtpServer() })
    after(async () => { await smtp.close() })

    const smtpSender = (log = warnings()) => createNotificationSender({ ...t.config, smtpUrl: smtp.url }, log)
    const mailsTo = (address: string) => smtp.received.filter(r => r.to.includes(address))

    void it("mails an event publish notice to the caller's token address: From, To, Subject, text and escaped HTML, " +
      'a link into APP_URL', async () => {
      const tenant = newTenant(t)
      const address = `pia-${crypto.randomUUID()}@example.test`
      const pia = await tenant.user('pia', ['member'], { email: address })
      const created = await expectStatus(t, pia, 'POST', '/api/v1/events', 201, { title: EVIL })
      const id = created.json().id as number
      await expectStatus(t, pia, 'POST', `/api/v1/events/${id}/publish`, 204, {
        notify: true,
        message: `Doors open at 7 & "bring" <b>friends</b>\n\nSee you, ${EVIL}`
      })
      assert.deepEqual(
        (await queuedNotifications(t, tenant.id)).map(r => [r.recipient, r.status]),
        [[address, 'pending']]
      )

      const sender = smtpSender()
      try {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      } finally {
        await sender.close?.()
      }
      assert.deepEqual(
        (await queuedNotifications(t, tenant.id)).map(r => r.status),
        ['sent']
      )
      const [got] = mailsTo(address)
      assert.ok(got !== undefined, 'the mail reached the SMTP server')
      const mail = got.mail
      assert.equal(got.from, 'notifications@example.org')
      assert.deepEqual(
        mail.from?.value.map(v => [v.name, v.address]),
        [['Collab', 'notifications@example.org']]
      )
      assert.equal(mail.to !== undefined && !Array.isArray(mail.to) ? mail.to.value[0]?.address : undefined, address)
      assert.equal(mail.subject, `Published: ${EVIL}`)
      const link = `${APP_URL}/events/${id}`
      assert.ok(mail.text?.includes('Doors open at 7 & "bring" <b>friends</b>'), mail.text)
      assert.ok(mail.text?.includes(`Open the event: ${link}`), mail.text)
      const html = String(mail.html)
      assert.ok(html.includes(`<a href="${link}">Open the event</a>`), html)
      assert.ok(html.includes('Doors open at 7 &amp; &quot;bring&quot; &lt;b&gt;friends&lt;/b&gt;'), html)
      assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;Gala'), html)
      assert.ok(!html.includes('<script>') && !html.includes('<b>'), 'nothing typed reaches the HTML unescaped')
    })

    void it('mails an event manager invitation with the token in a link to the app\'s accept page', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const created = await t.as(alice, { method: 'POST', url: '/api/v1/events', payload: { title: `Board ${EVIL}` } })
      const id = created.json().id as number
      const invitee = `kim-${crypto.randomUUID()}@example.test`
      const inv = await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers/invite`, 201, {
        email: invitee,
        role: 'event_manager:full',
        message: 'Please <help>'
      })
      const token = inv.json().invite_token as string
      const sender = smtpSender()
      try {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      } finally {
        await sender.close?.()
      }
      const [got] = mailsTo(invitee)
      assert.ok(got !== undefined, 'the invitation reached the SMTP server')
      const link = `${APP_URL}/invites/accept?type=event&token=${encodeURIComponent(token)}`
      assert.equal(got.mail.subject, `Invitation to manage the event "Board ${EVIL}"`)
      assert.ok(got.mail.text?.startsWith('Please <help>'), got.mail.text)
      assert.ok(got.mail.text?.includes(`Accept the invitation: ${link}`), got.mail.text)
      const html = String(got.mail.html)
      assert.ok(html.includes(`<a href="${link.replace(/&/g, '&amp;')}">Accept the invitation</a>`), html)
      assert.ok(html.includes('Please &lt;help&gt;') && !html.includes('<help>'))
      // the link's token accepts the invitation
      const kim = await tenant.user('kim', ['member'], { email: invitee })
      await expectStatus(t, kim, 'POST', '/api/v1/events/managers/accept', 200, {
        token: new URL(link).searchParams.get('token')
      })
    })

    void it('mails a space publish notice to the stored profile address, ' +
      "else to the caller's token address", async () => {
      const tenant = newTenant(t)
      const stored = `dora-${crypto.randomUUID()}@example.test`
      const dora = await tenant.user('dora', ['member'], { email: `token-${stored}` })
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx.insertInto('users').values({ tenant_id: tenant.id, id: 'dora', email: stored }).execute()
      })
      const eve = await tenant.user('eve', ['member'], { email: `eve-${stored}` })
      for (const token of [dora, eve]) {
        const s = await expectStatus(t, token, 'POST', '/api/v1/spaces', 201, { title: 'Choir' })
        await expectStatus(t, token, 'POST', `/api/v1/spaces/${s.json().id as number}/publish`, 204, { notify: true })
      }
      assert.deepEqual(
        (await queuedNotifications(t, tenant.id)).map(r => [r.recipient, r.status]),
        [
          [stored, 'pending'],
          [`eve-${stored}`, 'pending']
        ]
      )
      const sender = smtpSender()
      try {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      } finally {
        await sender.close?.()
      }
      assert.equal(mailsTo(stored).length, 1)
      assert.equal(mailsTo(`eve-${stored}`).length, 1)
      assert.equal(mailsTo(`token-${stored}`).length, 0)
      assert.equal(mailsTo(stored)[0]?.mail.subject, 'Space "Choir" was published')
    })

    void it('records a recipient without an address as undeliverable with the reason, never retries it, ' +
      'and shows it to admins', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const bob = await tenant.user('bob')
      const created = await t.as(bob, { method: 'POST', url: '/api/v1/events', payload: { title: "Bob's party" } })
      const id = created.json().id as number
      // the admin publishes bob's event: bob has no stored profile and is not the caller
      await expectStatus(t, admin, 'POST', `/api/v1/events/${id}/publish`, 204, {
        notify: true,
        channels: ['email', 'push']
      })
      // a row queued before addresses were resolved (a user id as an e-mail recipient)
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('notification_outbox')
          .values({ tenant_id: tenant.id, channel: 'email', recipient: 'carol', subject: 'Old', body: 'x' })
          .execute()
      })
      const sent: Notification[] = []
      const log = warnings()
      const sender = {
        name: 'test',
        async send (n: Notification) {
          sent.push(n)
        }
      }
      for (let i = 0; i < 2; i++) {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000, log })
        await makeNotificationsDue(t, tenant.id)
      }
      const mine = sent.filter(n => n.tenantId === tenant.id)
      assert.deepEqual(
        mine.map(n => [n.channel, n.recipient]),
        [['push', 'bob']],
        'only the push notification went out, once'
      )
      const stored = await queuedNotifications(t, tenant.id)
      assert.deepEqual(
        stored.map(r => [r.channel, r.recipient, r.status, r.attempts]),
        [
          ['email', 'user:bob', 'undeliverable', 0],
          ['push', 'bob', 'sent', 1],
          ['email', 'carol', 'undeliverable', 0]
        ]
      )
      assert.match(stored[0]?.last_error ?? '', /no e-mail address known for user bob/)
      assert.ok(
        log.lines.some(l => l.msg === 'notification undeliverable' && l.obj.notification_id === stored[2]?.id),
        'the delivery logged the old row'
      )

      const res = await list(t, admin, '?status=undeliverable')
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.equal(body.$schema, 'http://localhost:8080/schemas/PagedBodyNotification.json')
      assert.deepEqual([body.page, body.size, body.total], [1, 20, 2])
      assert.deepEqual(
        body.items.map((i: Json) => [i.id, i.channel, i.recipient, i.status, i.attempts, i.kind]),
        [
          [stored[2]?.id, 'email', 'carol', 'undeliverable', 0, null],
          [stored[0]?.id, 'email', 'user:bob', 'undeliverable', 0, 'event.published']
        ]
      )
      assert.match(body.items[1].last_error, /no e-mail address known for user bob/)
      assert.match(body.items[0].last_error, /"carol" is not an e-mail address/)
      assert.equal('body' in body.items[0], false, 'the text (it may hold an invite token) is not listed')
    })

    void it('pages the notifications by cursor as by page, per filter; ' +
      "another filter's cursor is refused", async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await trx
          .insertInto('notification_outbox')
          .values(
            Array.from({ length: 11 }, (_, i) => ({
              tenant_id: tenant.id,
              channel: i % 2 === 0 ? 'email' : 'push',
              recipient: `r${i}@example.org`,
              subject: `S${i}`,
              body: 'x'
            }))
          )
          .execute()
      })
      for (const q of ['', '&channel=email']) {
        const all = ((await list(t, admin, `?size=100${q}`)).json().items as Json[]).map(i => i.id)
        assert.equal(all.length, q === '' ? 11 : 6)
        const walked = (await itemsByCursor(t, admin, `/api/v1/notifications?size=4${q}`)).map(i => i.id)
        assert.deepEqual(walked, all, q)
      }
      const first = (await list(t, admin, '?size=4')).json()
      const refused = await refusedCursor(t, admin, '/api/v1/notifications?size=4&channel=push', first.next_cursor)
      assert.ok(
        refused.json().errors.some((e: Json) => e.location === 'query.cursor'),
        refused.body
      )
    })

    void it('logs every failed delivery with its error and shows it to admins: retried with a due time, ' +
      'undeliverable when the server refuses the mailbox, failed at once when it refuses the message', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const alice = await tenant.user('alice')
      const created = await t.as(alice, { method: 'POST', url: '/api/v1/events', payload: { title: 'Dinner' } })
      const id = created.json().id as number
      const refused = `refused@${crypto.randomUUID()}.example.test`
      for (const email of [
        refused,
        `later@${crypto.randomUUID()}.example.test`,
        `spam@${crypto.randomUUID()}.example.test`
      ]) {
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/managers/invite`, 201, {
          email,
          role: 'event_manager:full'
        })
      }
      const [first, second, third] = await queuedNotifications(t, tenant.id)
      // the second: a temporary failure (nothing listens on the SMTP server's address any more)
      const log = warnings()
      const live = smtpSender(log)
      const dead = createNotificationSender({ ...t.config, smtpUrl: 'smtp://127.0.0.1:1' }, log)
      const sender = {
        name: 'smtp',
        async send (n: Notification) {
          await (n.id === second?.id ? dead : live).send(n)
        }
      }
      try {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000, log })
      } finally {
        await live.close?.()
        await dead.close?.()
      }
      const after = await queuedNotifications(t, tenant.id)
      assert.deepEqual(
        after.map(r => [r.status, r.attempts]),
        [
          ['undeliverable', 1],
          ['pending', 1],
          ['failed', 1]
        ]
      )
      assert.match(after[2]?.last_error ?? '', /554/)
      assert.match(after[0]?.last_error ?? '', /550/)
      const failures = log.lines.filter(
        l =>
          l.msg === 'notification delivery failed' &&
          [first?.id, second?.id, third?.id].includes(l.obj.notification_id as number)
      )
      assert.deepEqual(
        failures.map(l => [l.obj.notification_id, l.obj.status, typeof l.obj.err?.message]),
        [
          [first?.id, 'undeliverable', 'string'],
          [second?.id, 'pending', 'string'],
          [third?.id, 'failed', 'string']
        ]
      )
      assert.equal(failures[0]?.obj.err.responseCode, 550)
      assert.ok(!JSON.stringify(failures).includes('token'), 'no invite token in the log')

      const failed = (await list(t, admin, '?status=undeliverable&channel=email')).json()
      assert.deepEqual(
        failed.items.map((i: Json) => [i.recipient, i.status, i.kind]),
        [[refused, 'undeliverable', 'event.manager_invited']]
      )
      assert.match(failed.items[0].last_error, /550/)
      assert.deepEqual(
        (await list(t, admin, '?status=failed')).json().items.map((i: Json) => i.id),
        [third?.id]
      )
      const pending = (await list(t, admin, '?status=pending')).json()
      assert.equal(pending.items.length, 1)
      assert.ok(pending.items[0].last_error.length > 0)
      assert.ok(Date.parse(pending.items[0].next_attempt_at) > Date.now())
    })

    void it('delivers per tenant: a batch is shared among the tenants with due rows; ' +
      'two deliveries at once send each row once', async () => {
      const sent: Notification[] = []
      const sender = {
        name: 'collect',
        async send (n: Notification) {
          sent.push(n)
        }
      }
      // earlier tests' leftovers first (a retry waiting for its due time stays)
      while ((await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })).sent > 0);
      sent.length = 0
      const a = newTenant(t)
      const b = newTenant(t)
      const queue = async (tenantId: string, n: number) =>
        await withTenant(t.ctx.db, { tenantId }, async trx => {
          for (let i = 0; i < n; i++) {
            await queueNotification(trx, {
              tenantId,
              channel: 'email',
              recipient: `r${i}@example.test`,
              subject: `s${i}`,
              body: 'b'
            })
          }
        })
      /** one delivery of a batch of 4, each of them sent */
      const deliverFour = async () =>
        assert.deepEqual(await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 4 }), {
          sent: 4,
          retried: 0,
          failed: 0,
          undeliverable: 0
        })
      const subjectsSentTo = (tenantId: string) => sent.filter(n => n.tenantId === tenantId).map(n => n.subject)
      await queue(a.id, 6)
      await queue(b.id, 2)
      // a batch of 4: a (the oldest due row) gets 2, b its 2
      await deliverFour()
      assert.deepEqual(subjectsSentTo(a.id), ['s0', 's1'])
      assert.deepEqual(subjectsSentTo(b.id), ['s0', 's1'])
      await deliverFour()
      assert.deepEqual(subjectsSentTo(a.id), ['s0', 's1', 's2', 's3', 's4', 's5'])

      sent.length = 0
      await queue(a.id, 30)
      await queue(b.id, 30)
      let total = 0
      for (let round = 0; round < 20; round++) {
        const pair = await Promise.all([
          deliverPendingNotifications(t.ctx.db, sender, { batchSize: 10 }),
          deliverPendingNotifications(t.ctx.db, sender, { batchSize: 10 })
        ])
        const n = pair.reduce((x, r) => x + r.sent, 0)
        total += n
        if (n === 0) break
      }
      assert.equal(total, 60)
      assert.equal(sent.length, 60)
      assert.equal(new Set(sent.map(n => `${n.tenantId}/${n.id}`)).size, 60, 'no row sent twice')
      for (const x of [a, b]) {
        assert.deepEqual(
          (await queuedNotifications(t, x.id)).filter(r => r.status !== 'sent'),
          []
        )
      }
    })

    void it("lists to tenant admins only, paged, by channel and time, never another tenant's rows; " +
      'bad filters are 400 naming the field', async () => {
      const tenant = newTenant(t)
      const admin = await tenant.user('root', ['admin'])
      const other = newTenant(t)
      const otherAdmin = await other.user('root', ['admin'])
      for (const [tid, n] of [
        [tenant.id, 3],
        [other.id, 1]
      ] as const) {
        await withTenant(t.ctx.db, { tenantId: tid }, async trx => {
          for (let i = 0; i < n; i++) {
            await queueNotification(trx, {
              tenantId: tid,
              channel: i === 0 ? 'push' : 'email',
              recipient: `r${i}-${tid}@example.test`,
              subject: `S${i} ${tid}`,
              body: 'b'
            })
          }
        })
      }
      for (const role of ['viewer', 'member']) {
        const res = await list(t, await tenant.user(`u-${role}`, [role]))
        assert.equal(res.statusCode, 403, res.body)
        assert.equal(res.json().status, 403)
      }
      const all = (await list(t, admin)).json()
      assert.equal(all.total, 3)
      assert.ok(all.items.every((i: Json) => String(i.subject).endsWith(tenant.id)))
      assert.ok(!JSON.stringify(all).includes(other.id))
      const theirs = (await list(t, otherAdmin)).json()
      assert.deepEqual(
        theirs.items.map((i: Json) => i.subject),
        [`S0 ${other.id}`]
      )

      const page2 = (await list(t, admin, '?size=2&page=2')).json()
      assert.deepEqual([page2.items.length, page2.total, page2.items[0].subject], [1, 3, `S0 ${tenant.id}`])
      assert.deepEqual(
        (await list(t, admin, '?channel=push')).json().items.map((i: Json) => i.subject),
        [`S0 ${tenant.id}`]
      )
      const future = new Date(Date.now() + 3_600_000).toISOString()
      const past = new Date(Date.now() - 3_600_000).toISOString()
      assert.equal((await list(t, admin, `?created_after=${future}`)).json().total, 0)
      assert.equal((await list(t, admin, `?created_after=${past}&created_before=${future}`)).json().total, 3)

      const bad = await list(t, admin, '?status=lost')
      assert.equal(bad.statusCode, 400)
      assert.equal(bad.json().errors[0].location, 'query.status')
      const reversed = await list(t, admin, `?created_after=${future}&created_before=${past}`)
      assert.equal(reversed.statusCode, 400)
      assert.equal(reversed.json().errors[0].location, 'query.created_before')
    })
  })
}

void describe('notification configuration', () => {
  void it('APP_URL and SMTP_FROM: defaults from BASE_URL, and a bad value names the variable', () => {
    const d = loadConfig({ BASE_URL: 'https://collab.example.org/' })
    assert.deepEqual([d.appUrl, d.smtpFrom], ['https://collab.example.org', 'no-reply@collab.example.org'])
    const c = loadConfig({ APP_URL: 'https://app.example.org/', SMTP_FROM: 'Team <team@example.org>' })
    assert.deepEqual([c.appUrl, c.smtpFrom], ['https://app.example.org', 'Team <team@example.org>'])
    assert.throws(() => loadConfig({ APP_URL: 'app.example.org' }), /^ConfigError: invalid configuration: APP_URL /)
    assert.throws(() => loadConfig({ APP_URL: 'https://app.example.org/?x=1' }), /invalid configuration: APP_URL /)
    assert.throws(() => loadConfig({ SMTP_FROM: 'nobody' }), /invalid configuration: SMTP_FROM /)
    assert.throws(
      () => loadConfig({ SMTP_FROM: 'a@example.org\r\nBcc: b@example.org' }),
      (err: Error) => /invalid configuration: SMTP_FROM /.test(err.message) && !err.message.includes('\n')
    )
  })
})
