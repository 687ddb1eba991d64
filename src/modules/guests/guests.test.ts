/**
 * Guests as they take part (docs/guests.md): an invited guest answers from the link in their mail, a stranger
 * registers from the public side and confirms by mail, calendar entries that follow the event and go when it or the
 * guest's place goes, cancelling from the link promotes the next guest, in four languages; and every refusal (a
 * closed, full, cancelled or past event, a bad field, a dead link, too many requests) as a problem that changes
 * nothing. Every mail goes through the real SMTP server, is parsed with mailparser, and its calendar with ical.js.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import ICAL from 'ical.js'
import type { ParsedMail } from 'mailparser'
import { sql } from 'kysely'
import { databases, newTenant, useTestApp } from '../../../test/helpers/build-app.ts'
import { outboxEvents } from '../../../test/helpers/outbox.ts'
import { expectStatus } from '../../../test/helpers/requests.ts'
import { startSmtpServer, type SmtpCatcher } from '../../../test/helpers/smtp.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { message, type Locale } from '../../platform/i18n/i18n.ts'
import { deliverPendingNotifications } from '../../platform/notifications/notifications.ts'
import { pruneRetention } from '../../platform/retention.ts'
import { drain, eventAutomation } from '../automation/automation.fixtures.ts'
import { createNotificationSender } from '../../platform/notifications/senders.ts'

type Json = Record<string, any>

const APP_URL = 'https://app.example.org'
const HOUR = 3_600_000
const TITLE = 'Summer <b>choir</b> & "friends"'

/** What a guest's calendar app reads of an invitation. */
function calendarOf (mail: ParsedMail) {
  const part = mail.attachments.find(a => a.contentType === 'text/calendar')
  if (part === undefined) return undefined
  const type = part.headers.get('content-type') as { params?: Record<string, string> } | undefined
  const root = new ICAL.Component(ICAL.parse(part.content.toString('utf8')))
  const vevent = root.getFirstSubcomponent('vevent')
  assert.ok(vevent !== null)
  const event = new ICAL.Event(vevent)
  return {
    method: String(root.getFirstPropertyValue('method')),
    headerMethod: type?.params?.method,
    uid: event.uid,
    sequence: Number(vevent.getFirstPropertyValue('sequence')),
    start: event.startDate.toJSDate().toISOString(),
    summary: event.summary,
    location: event.location,
    status: String(vevent.getFirstPropertyValue('status'))
  }
}

/** The token of the link a mail carries to `page` (/guest/manage or /guest/confirm). */
function linkToken (mail: ParsedMail, page: string): string {
  const found = new RegExp(`${APP_URL}${page}\\?token=([A-Za-z0-9_-]+)`).exec(mail.text ?? '')
  assert.ok(found?.[1] !== undefined, `a link to ${page} in:\n${mail.text ?? ''}`)
  return found[1]
}

for (const kind of databases()) {
  void describe(`${kind}: guests`, () => {
    const t = useTestApp(kind, { env: { APP_URL, SMTP_FROM: 'Collab <events@example.org>' } })
    let smtp: SmtpCatcher
    before(async () => { smtp = await startSmtpServer() })
    after(async () => { await smtp.close() })

    /** Delivers what is queued through the real SMTP server; the mails `address` received, oldest first. */
    async function mailsTo (address: string): Promise<ParsedMail[]> {
      const sender = createNotificationSender({ ...t.config, smtpUrl: smtp.url }, { info () {} })
      try {
        await deliverPendingNotifications(t.ctx.db, sender, { batchSize: 1000 })
      } finally {
        await sender.close?.()
      }
      return smtp.to(address).map(r => r.mail)
    }

    const anon = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: Json, headers: Json = {}) =>
      await t.app.inject({ method, url, ...(payload !== undefined ? { payload } : {}), headers })

    /** A published event of alice's tomorrow with registration settings; public (visibility 40) when asked. */
    async function setup (registration: Json, o: { visibility?: number } = {}) {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { email: 'alice@example.org' })
      const start = new Date(Date.now() + 24 * HOUR)
      const event = (await expectStatus(t, alice, 'POST', '/api/v1/events', 201, {
        title: TITLE,
        start_dt: start.toISOString(),
        end_dt: new Date(start.getTime() + 2 * HOUR).toISOString(),
        timezone: 'Europe/Berlin',
        address: 'Town hall; Main St, 1',
        visibility: o.visibility ?? 40
      })).json()
      await expectStatus(t, alice, 'POST', `/api/v1/events/${event.id as number}/publish`, 204)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${event.id as number}/registration`, 200, registration)
      return { tenant, alice, event, id: event.id as number }
    }

    const attendees = async (token: string, id: number): Promise<Json[]> =>
      (await expectStatus(t, token, 'GET', `/api/v1/events/${id}/attendees?size=100`, 200)).json().items

    const register = async (id: number, body: Json, headers: Json = {}) =>
      await anon('POST', `/api/v1/public/events/${id}/registrations`, body, headers)

    void it('an invited guest answers from the mailed link; the organiser sees who answered and when; the ' +
      'guest cancels and the next on the waitlist gets the seat and the calendar entry', async () => {
      const { tenant, alice, id } = await setup({ capacity: 1, waitlist_enabled: true }, { visibility: 20 })
      const ann = `ann-${crypto.randomUUID()}@example.test`
      const bob = `bob-${crypto.randomUUID()}@example.test`
      const contacts: string[] = []
      for (const [first, email] of [['Ann', ann], ['Bob', bob]]) {
        const c = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: first, email })
        contacts.push(c.json().id)
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201, { contact_id: c.json().id })
      }
      const sent = await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/invitations`, 200, {})
      assert.deepEqual(sent.json(), { $schema: sent.json().$schema, invited: 2, mailed: 2 })

      const [annInvite] = await mailsTo(ann)
      assert.ok(annInvite !== undefined)
      assert.equal(annInvite.subject, message('en', 'mail.invitation.subject', { title: TITLE }))
      assert.equal(calendarOf(annInvite), undefined, 'an invitation adds nothing to a calendar before the answer')
      const annToken = linkToken(annInvite, '/guest/manage')
      const shown = await anon('GET', `/api/v1/guest/registration?token=${annToken}`)
      assert.equal(shown.statusCode, 200, shown.body)
      assert.equal(shown.headers['cache-control'], 'no-store')
      assert.deepEqual([shown.json().status, shown.json().event.title, shown.json().guest.email, shown.json().answers],
        ['invited', TITLE, ann, ['confirmed', 'tentative', 'declined']])
      assert.equal(JSON.stringify(shown.json()).includes(bob), false, 'nothing of another guest')

      const yes = await anon('POST', '/api/v1/guest/registration/answer', { token: annToken, status: 'confirmed' })
      assert.equal(yes.statusCode, 200, yes.body)
      assert.deepEqual([yes.json().status, yes.json().changed], ['confirmed', true])
      const bobToken = linkToken((await mailsTo(bob))[0] as ParsedMail, '/guest/manage')
      const wait = await anon('POST', '/api/v1/guest/registration/answer', { token: bobToken, status: 'confirmed' })
      assert.deepEqual([wait.json().status, wait.json().waitlist_position], ['waitlisted', 1])

      // the organiser sees the answers, their time and who gave them
      const rows = new Map((await attendees(alice, id)).map(r => [r.contact_id, r]))
      assert.deepEqual(contacts.map(c => [rows.get(c)?.status, rows.get(c)?.guest_responded_at !== null,
        rows.get(c)?.invitation_sent_at !== null]), [['confirmed', true, true], ['waitlisted', true, true]])
      const changes = (await outboxEvents(t, tenant.id, 'attendee.status_changed')).map(e =>
        [e.actor_id, (e.payload as Json).by, (e.payload as Json).status])
      assert.deepEqual(changes, [[null, 'guest', 'confirmed'], [null, 'guest', 'waitlisted']])
      const activity = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/activity`, 200)).json()
      assert.equal(activity.items.filter((a: Json) => a.kind === 'attendee.guest_answered').length, 2)

      // ann's confirmation adds the event to her calendar
      const annMails = await mailsTo(ann)
      const confirmed = calendarOf(annMails[1] as ParsedMail)
      assert.ok(confirmed !== undefined, 'the confirmation carries the calendar entry')
      assert.deepEqual([confirmed.method, confirmed.headerMethod, confirmed.sequence, confirmed.summary,
        confirmed.location], ['REQUEST', 'REQUEST', 1, TITLE, 'Town hall; Main St, 1'])

      // ann cancels: her entry goes (same UID, higher SEQUENCE), bob takes the seat and gets the entry
      const cancel = await anon('POST', '/api/v1/guest/registration/cancel', { token: annToken })
      assert.equal(cancel.json().status, 'declined')
      const after = new Map((await attendees(alice, id)).map(r => [r.contact_id, r]))
      assert.deepEqual(contacts.map(c => after.get(c)?.status), ['declined', 'confirmed'])
      const gone = calendarOf((await mailsTo(ann))[2] as ParsedMail)
      assert.deepEqual([gone?.method, gone?.uid, gone?.sequence, gone?.status],
        ['CANCEL', confirmed.uid, 2, 'CANCELLED'])
      const promoted = (await mailsTo(bob)).at(-1) as ParsedMail
      assert.equal(promoted.subject, message('en', 'mail.promoted.subject', { title: TITLE }))
      const bobEntry = calendarOf(promoted)
      assert.deepEqual([bobEntry?.method, bobEntry?.sequence], ['REQUEST', 1])
      assert.notEqual(bobEntry?.uid, confirmed.uid, 'one entry per guest')

      // the event moves: bob's entry follows it; ann, who cancelled, is not told
      const moved = new Date(Math.floor((Date.now() + 48 * HOUR) / 1000) * 1000)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}`, 200, {
        start_dt: moved.toISOString(),
        end_dt: new Date(moved.getTime() + HOUR).toISOString()
      })
      const update = calendarOf((await mailsTo(bob)).at(-1) as ParsedMail)
      assert.deepEqual([update?.method, update?.uid, update?.sequence, update?.start],
        ['REQUEST', bobEntry?.uid, 2, moved.toISOString()])
      assert.equal((await mailsTo(ann)).length, 3, 'no change mail to a guest without a place')

      // the event is cancelled: bob's entry goes
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/cancel`, 200, { reason: 'Flooded <hall>' })
      const cancelled = (await mailsTo(bob)).at(-1) as ParsedMail
      assert.ok(cancelled.text?.includes('Flooded <hall>'), cancelled.text)
      assert.deepEqual([calendarOf(cancelled)?.method, calendarOf(cancelled)?.sequence], ['CANCEL', 3])

      // the calendar file of the link: the same entry
      const file = await anon('GET', `/api/v1/guest/registration/event.ics?token=${bobToken}`)
      assert.equal(file.statusCode, 200, file.body)
      assert.match(String(file.headers['content-type']), /^text\/calendar/)
      const fromFile = new ICAL.Event(new ICAL.Component(ICAL.parse(file.body)).getFirstSubcomponent('vevent') ??
        undefined)
      assert.equal(fromFile.uid, bobEntry?.uid)
    })

    void it('a stranger registers from the public side, confirms by mail (double opt-in), and takes a seat or a ' +
      'place in line; a second registration answers the same and only the mail tells', async () => {
      const { tenant, alice, id } = await setup({ public_registration: true, capacity: 1, waitlist_enabled: true })
      const kim = `kim-${crypto.randomUUID()}@example.test`
      const lea = `lea-${crypto.randomUUID()}@example.test`
      const first = await register(id, { name: 'Kim Park', email: kim }, { 'accept-language': 'de-AT,de;q=0.9' })
      assert.equal(first.statusCode, 202, first.body)
      assert.equal(first.json().message, message('de', 'registration.accepted'))
      const listed = await attendees(alice, id)
      assert.deepEqual(listed.map(a => [a.status, a.source, a.locale]),
        [['awaiting_confirmation', 'registration', 'de']])
      const figures = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/registration`, 200)).json()
      assert.deepEqual([figures.confirmed_count, figures.seats_left, figures.guests.public_registration],
        [0, 1, true])

      const [optin] = await mailsTo(kim)
      assert.ok(optin !== undefined)
      assert.equal(optin.subject, message('de', 'mail.optin.subject', { title: TITLE }))
      const confirmToken = linkToken(optin, '/guest/confirm')
      // a confirmation link is no manage link
      assert.equal((await anon('GET', `/api/v1/guest/registration?token=${confirmToken}`)).statusCode, 404)
      const ok = await anon('POST', '/api/v1/public/registrations/confirm', { token: confirmToken })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.deepEqual([ok.json().status, ok.json().changed], ['confirmed', true])
      const again = await anon('POST', '/api/v1/public/registrations/confirm', { token: confirmToken })
      assert.equal(again.statusCode, 404, 'a confirmation link is used up')

      const welcome = (await mailsTo(kim)).at(-1) as ParsedMail
      assert.equal(welcome.subject, message('de', 'mail.confirmed.subject', { title: TITLE }))
      assert.equal(calendarOf(welcome)?.method, 'REQUEST')

      // the second guest lands on the waitlist once confirmed
      assert.equal((await register(id, { name: 'Lea', email: lea, locale: 'es' })).statusCode, 202)
      const leaConfirm = linkToken((await mailsTo(lea))[0] as ParsedMail, '/guest/confirm')
      const waiting = await anon('POST', '/api/v1/public/registrations/confirm', { token: leaConfirm })
      assert.deepEqual([waiting.json().status, waiting.json().waitlist_position], ['waitlisted', 1])
      assert.equal((await mailsTo(lea)).at(-1)?.subject, message('es', 'mail.waitlisted.subject', { title: TITLE }))

      // the same address again: the same answer; the mail carries the guest's link
      const before = (await mailsTo(kim)).length
      const repeat = await register(id, { name: 'Someone Else', email: kim.toUpperCase() }, { 'accept-language': 'de' })
      assert.deepEqual([repeat.statusCode, repeat.json()], [first.statusCode, first.json()])
      const already = (await mailsTo(kim)).slice(before)
      assert.deepEqual(already.map(m => m.subject), [message('de', 'mail.already.subject', { title: TITLE })])
      linkToken(already[0] as ParsedMail, '/guest/manage')
      // the contact kept its name (anonymous input never overwrites)
      const contact = (await attendees(alice, id)).find(a => a.status === 'confirmed')?.contact_id as string
      const c = (await expectStatus(t, alice, 'GET', `/api/v1/contacts/${contact}`, 200)).json()
      assert.deepEqual([c.first_name, c.last_name], ['Kim', 'Park'])

      // past the limit per address (3): answered the same, nothing mailed
      await register(id, { name: 'Kim', email: kim })
      const past = await register(id, { name: 'Kim', email: kim })
      assert.equal(past.statusCode, 202)
      assert.equal((await mailsTo(kim)).length, before + 2)

      // the honeypot: answered the same, nothing stored
      const bot = `bot-${crypto.randomUUID()}@example.test`
      const trapped = await register(id, { name: 'Bot', email: bot, website: 'http://spam.example' })
      assert.equal(trapped.statusCode, 202)
      assert.equal((await attendees(alice, id)).length, 2)
      assert.equal((await mailsTo(bot)).length, 0)
      // the guest's contact was made as alice's, visible as her contacts are
      const made = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx =>
        await trx.selectFrom('contacts').select(['owner_id', 'locale', 'email']).where('tenant_id', '=', tenant.id)
          .orderBy('created_at').execute())
      assert.deepEqual(made.map(m => [m.owner_id, m.locale]), [['alice', 'de'], ['alice', 'es']])
    })

    void it('refuses a closed, not yet open, full, cancelled, past or private event and bad fields, in the ' +
      "guest's language, and stores nothing", async () => {
      const { alice, id } = await setup({ public_registration: true, capacity: 1 })
      const asks = async (body: Json, lang: Locale, at = id) => {
        const r = await register(at, { name: 'Max', email: `max-${crypto.randomUUID()}@example.test`, ...body },
          { 'accept-language': lang })
        return [r.statusCode, r.json().errors?.[0]?.location, r.json().detail]
      }
      assert.deepEqual(await asks({ email: 'not-an-address' }, 'fr'),
        [400, 'body.email', message('fr', 'error.email_invalid')])
      assert.deepEqual(await asks({ name: '   ' }, 'es'), [400, 'body.name', message('es', 'error.required')])
      assert.deepEqual(await asks({ name: 'x'.repeat(201) }, 'de'),
        [400, 'body.name', message('de', 'error.too_long', { max: 200 })])
      assert.equal((await register(id, { name: 'x', email: 'y@example.test', extra: 1 })).statusCode, 400)

      // full without a waitlist
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, { double_opt_in: false })
      assert.equal((await register(id, { name: 'First', email: `f-${crypto.randomUUID()}@example.test` })).statusCode,
        202)
      assert.deepEqual(await asks({}, 'en'), [409, 'path.id', message('en', 'error.event_full')])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, { capacity: 50 })

      // the window
      const later = new Date(Date.now() + 6 * HOUR)
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_opens_at: later.toISOString() })
      assert.deepEqual((await asks({}, 'en')).slice(0, 2), [409, 'path.id'])
      const refused = await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 400,
        { registration_closes_at: new Date(Date.now() + HOUR).toISOString() })
      assert.equal(refused.json().errors[0].location, 'body.registration_closes_at')
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_opens_at: null, registration_closes_at: new Date(Date.now() - HOUR).toISOString() })
      assert.deepEqual(await asks({}, 'de'), [409, 'path.id', message('de', 'error.registration_closed')])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_closes_at: null, public_registration: false })
      assert.deepEqual(await asks({}, 'en'), [409, 'path.id', message('en', 'error.registration_off')])
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200, { public_registration: true })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/cancel`, 200, { reason: 'Storm' })
      assert.deepEqual(await asks({}, 'es'), [409, 'path.id', message('es', 'error.event_cancelled')])
      assert.equal((await attendees(alice, id)).length, 1, 'only the one registration that was taken')

      // a private event, and one that does not exist, look alike
      const hidden = await setup({ public_registration: true }, { visibility: 20 })
      assert.deepEqual(await asks({}, 'en', hidden.id), [404, 'path.id', message('en', 'error.event_not_found')])
      assert.deepEqual(await asks({}, 'en', 999_999_999), [404, 'path.id', message('en', 'error.event_not_found')])
    })

    void it('refuses forged, rotated, expired and used links alike, and a guest past the event', async () => {
      const { tenant, alice, id } = await setup({ public_registration: true, double_opt_in: false })
      const zoe = `zoe-${crypto.randomUUID()}@example.test`
      await register(id, { name: 'Zoe', email: zoe, locale: 'fr' })
      const token = linkToken((await mailsTo(zoe))[0] as ParsedMail, '/guest/manage')
      const dead = async (tok: string) => {
        const r = await anon('POST', '/api/v1/guest/registration/answer', { token: tok, status: 'tentative' },
          { 'accept-language': 'fr' })
        return [r.statusCode, r.json().detail]
      }
      const answer = [404, message('fr', 'error.link_invalid')]
      assert.deepEqual(await dead('A'.repeat(43)), answer)
      assert.deepEqual(await dead('../../etc'), answer)

      // a new link: mailed, and every old one stops
      const renewed = await anon('POST', '/api/v1/guest/registration/new-link', { token })
      assert.equal(renewed.statusCode, 204, renewed.body)
      assert.deepEqual(await dead(token), answer)
      const fresh = linkToken((await mailsTo(zoe)).at(-1) as ParsedMail, '/guest/manage')
      const maybe = await anon('POST', '/api/v1/guest/registration/answer', { token: fresh, status: 'tentative' })
      assert.equal(maybe.json().status, 'tentative')
      // the organiser renews it too
      const contact = (await attendees(alice, id))[0]?.contact_id as string
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees/${contact}/guest-link`, 204)
      assert.deepEqual(await dead(fresh), answer)
      const latest = linkToken((await mailsTo(zoe)).at(-1) as ParsedMail, '/guest/manage')

      // retention prunes the dead links a month on; the live one stays and works
      const pruned = await pruneRetention(t.ctx.db, {
        retention: t.config.retention,
        now: new Date(Date.now() + 31 * 24 * HOUR)
      })
      assert.ok(pruned.kinds.guestTokens.deleted >= 2, JSON.stringify(pruned.kinds.guestTokens))
      const left = await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx =>
        await trx.selectFrom('guest_tokens').select(['revoked_at']).where('tenant_id', '=', tenant.id).execute())
      assert.deepEqual(left.map(l => l.revoked_at), [null])
      assert.equal((await anon('GET', `/api/v1/guest/registration?token=${latest}`)).statusCode, 200)

      // update mails off, then the event moves: no mail
      const off = await anon('PUT', '/api/v1/guest/registration/updates', { token: latest, subscribed: false })
      assert.equal(off.json().updates, false)
      const count = (await mailsTo(zoe)).length
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}`, 200, { address: 'Elsewhere' })
      assert.equal((await mailsTo(zoe)).length, count)

      // expired: the link dies; then the event is over a week ago: the link dies as well
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await sql`update guest_tokens set expires_at = now() - interval '1 minute' where tenant_id = ${tenant.id}`
          .execute(trx)
      })
      assert.deepEqual(await dead(latest), answer)
    })

    void it('asks the questions of a versioned form: answers validated server-side in the guest\'s language, ' +
      'stored per attendee, in the list, its sync, the CSV export and the domain events; the guest changes them ' +
      'until registrations close', async () => {
      const { tenant, alice, id } = await setup({ public_registration: true, double_opt_in: false })
      const form = `/api/v1/events/${id}/registration/form`
      assert.deepEqual((await expectStatus(t, alice, 'GET', form, 200)).json().questions, [])
      const v1 = [
        {
          id: 'diet',
          type: 'single_choice',
          label: 'Diet',
          required: true,
          options: [{ id: 'any', label: 'Anything' }, { id: 'veg', label: 'Vegetarian' }]
        },
        { id: 'photos', type: 'checkbox', label: 'Photos', required: true, consent_text: 'I agree to photos.' },
        { id: 'phone', type: 'phone', label: 'Phone' },
        { id: 'age', type: 'number', label: 'Age', min: 0, max: 120 },
        { id: 'note', type: 'long_text', label: 'Note', max_length: 50 }
      ]
      const bad = await expectStatus(t, alice, 'PUT', form, 400, { questions: [v1[0], { ...v1[2], id: 'diet' }] })
      assert.deepEqual(bad.json().errors.map((e: Json) => e.location), ['body.questions[1].id'])
      await expectStatus(t, alice, 'PUT', form, 400, { questions: [{ id: 'x', type: 'single_choice', label: 'X' }] })
      const put = await expectStatus(t, alice, 'PUT', form, 200, { questions: v1 })
      assert.equal(put.json().version, 1)

      const email = `q-${crypto.randomUUID()}@example.test`
      const refused = await register(id, { name: 'Quinn', email, answers: { phone: '12', age: 300, extra: 'x' } },
        { 'accept-language': 'de' })
      assert.equal(refused.statusCode, 400, refused.body)
      assert.deepEqual(refused.json().errors.map((e: Json) => [e.location, e.message]), [
        ['body.answers.extra', message('de', 'error.unknown_question')],
        ['body.answers.diet', message('de', 'error.required')],
        ['body.answers.photos', message('de', 'error.consent_required')],
        ['body.answers.phone', message('de', 'error.phone_invalid')],
        ['body.answers.age', message('de', 'error.number_range', { min: 0, max: 120 })]
      ])
      assert.equal((await attendees(alice, id)).length, 0, 'a refused registration stores nothing')
      const ok = await register(id, {
        name: 'Quinn',
        email,
        answers: { diet: 'veg', photos: true, phone: '+49 30 901820', age: '42', note: '=HYPERLINK("x")' }
      })
      assert.equal(ok.statusCode, 202, ok.body)
      const [row] = await attendees(alice, id)
      assert.deepEqual(row?.answers, {
        diet: 'veg',
        photos: { value: true, text: 'I agree to photos.' },
        phone: '+4930901820',
        age: 42,
        note: '=HYPERLINK("x")'
      })
      const added = (await outboxEvents(t, tenant.id, 'attendee.added')).at(-1)?.payload as Json
      assert.equal(added.answers.diet, 'veg')

      // a new version: a question keeps its type; a removed question's answers stay
      await expectStatus(t, alice, 'PUT', form, 400, { questions: [{ id: 'age', type: 'short_text', label: 'Age' }] })
      const v2 = [v1[0], v1[1], {
        id: 'shirt',
        type: 'single_choice',
        label: 'Shirt',
        options: [{ id: 's', label: 'S' }, { id: 'm', label: 'M' }]
      }]
      assert.equal((await expectStatus(t, alice, 'PUT', form, 200, { questions: v2 })).json().version, 2)

      const token = linkToken((await mailsTo(email)).at(-1) as ParsedMail, '/guest/manage')
      const shown = (await anon('GET', `/api/v1/guest/registration?token=${token}`)).json()
      assert.deepEqual([shown.questions.map((q: Json) => q.id), shown.given.diet, shown.can_change_answers],
        [['diet', 'photos', 'shirt'], 'veg', true])
      const wrong = await anon('PUT', '/api/v1/guest/registration/answers', { token, answers: { diet: 'fish' } })
      assert.deepEqual([wrong.statusCode, wrong.json().errors[0].location], [400, 'body.answers.diet'])
      const changed = await anon('PUT', '/api/v1/guest/registration/answers',
        { token, answers: { diet: 'any', photos: true, shirt: 'm' } })
      assert.equal(changed.statusCode, 200, changed.body)
      assert.deepEqual(changed.json().given, {
        diet: 'any',
        photos: { value: true, text: 'I agree to photos.' },
        shirt: 'm'
      })
      const told = (await outboxEvents(t, tenant.id, 'attendee.answers_changed')).map(e =>
        [e.actor_id, (e.payload as Json).by, (e.payload as Json).answers.shirt])
      assert.deepEqual(told, [[null, 'guest', 'm']])

      // the list's sync and the CSV carry the answers; every question ever asked is a column
      const synced = (await expectStatus(t, alice, 'GET', `/api/v1/events/${id}/attendees?sync=true`, 200)).json()
      assert.equal(synced.items[0].answers.shirt, 'm')
      const csv = await t.as(alice, { method: 'GET', url: `/api/v1/events/${id}/attendees/export` })
      const lines = csv.body.trim().split('\r\n').map(l => l.split(','))
      const header = lines[0] ?? []
      const cells = Object.fromEntries(header.map((h, i) => [h, lines[1]?.[i]]))
      assert.deepEqual(header.filter(h => h.startsWith('answer:')),
        ['answer:diet', 'answer:photos', 'answer:shirt', 'answer:phone', 'answer:age', 'answer:note'])
      assert.deepEqual([cells['answer:diet'], cells['answer:photos'], cells['answer:shirt'], cells['answer:age']],
        ['any', 'true', 'm', ''])

      // closed: the answers stay as they are
      await expectStatus(t, alice, 'PATCH', `/api/v1/events/${id}/registration`, 200,
        { registration_closes_at: new Date(Date.now() - HOUR).toISOString() })
      const late = await anon('PUT', '/api/v1/guest/registration/answers', { token, answers: { diet: 'veg' } },
        { 'accept-language': 'fr' })
      // in the guest's own language (their registration's), whatever the browser asks
      assert.deepEqual([late.statusCode, late.json().detail], [409, message('en', 'error.registration_closed')])
    })

    void it('sends invitations by automation: a rule on attendee.added mails the new attendee their link', async () => {
      const { alice, id } = await setup({ capacity: 5 }, { visibility: 20 })
      const rule = await eventAutomation(t, alice, id, {
        name: 'Invite',
        trigger: { type: 'attendee.added' },
        actions: [{ type: 'send_invitations' }]
      })
      assert.equal(rule.actions[0].type, 'send_invitations')
      const to = `auto-${crypto.randomUUID()}@example.test`
      const c = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'Al', email: to })
      await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201, { contact_id: c.json().id })
      await drain(t.ctx.engines.automation)
      const [mail] = await mailsTo(to)
      assert.equal(mail?.subject, message('en', 'mail.invitation.subject', { title: TITLE }))
      const token = linkToken(mail as ParsedMail, '/guest/manage')
      const yes = await anon('POST', '/api/v1/guest/registration/answer', { token, status: 'confirmed' })
      assert.equal(yes.json().status, 'confirmed')
      const [row] = await attendees(alice, id)
      assert.ok(row?.invitation_sent_at !== null)
    })

    void it('mails in the tenant\'s language when the guest has none, in each of the four', async () => {
      for (const lang of ['en', 'de', 'fr', 'es'] as const) {
        const { tenant, alice, id } = await setup({ capacity: 10 })
        await expectStatus(t, alice, 'PUT', '/api/v1/guest-settings', 403, { default_locale: lang })
        const admin = await tenant.user('root', ['admin'])
        await expectStatus(t, admin, 'PUT', '/api/v1/guest-settings', 200, { default_locale: lang })
        const to = `g-${lang}-${crypto.randomUUID()}@example.test`
        const c = await expectStatus(t, alice, 'POST', '/api/v1/contacts', 201, { first_name: 'G', email: to })
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/attendees`, 201, { contact_id: c.json().id })
        await expectStatus(t, alice, 'POST', `/api/v1/events/${id}/invitations`, 200, {})
        const [mail] = await mailsTo(to)
        assert.equal(mail?.subject, message(lang, 'mail.invitation.subject', { title: TITLE }))
        assert.ok(mail?.text?.includes(message(lang, 'mail.invitation.link')), mail?.text)
      }
    })
  })
}

void describe('guests: too many requests', () => {
  const t = useTestApp('pglite', { env: { GUEST_LIMIT_PER_ADDRESS: '2', GUEST_LIMIT_PER_EVENT: '100' } })
  it('answers 429 with Retry-After in the guest\'s language once an address used its hour', async () => {
    const statuses = []
    for (let i = 0; i < 3; i++) {
      const r = await t.app.inject({
        method: 'POST',
        url: '/api/v1/public/events/999999999/registrations',
        payload: { name: 'Ann', email: 'ann@example.test' },
        headers: { 'accept-language': 'es' }
      })
      statuses.push(r.statusCode)
      if (r.statusCode === 429) {
        assert.equal(r.json().detail, message('es', 'error.too_many_requests'))
        assert.ok(Number(r.headers['retry-after']) > 0)
      }
    }
    assert.deepEqual(statuses, [404, 404, 429])
  })
})
