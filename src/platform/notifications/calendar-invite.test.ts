/**
 * Calendar invitations in notification mails as calendars receive them: the iCalendar text of calendar-invite.ts
 * queued in a payload, sent by the SMTP sender to a real SMTP server (smtp-server), parsed back with mailparser and
 * its `text/calendar` part read with ical.js (the parser of Mozilla's calendars). No database: the sender is handed
 * the notification a delivery would hand it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import ICAL from 'ical.js'
import type { ParsedMail } from 'mailparser'
import { icalJsInstances, nodeIcalInstances } from '../../../test/helpers/calendar-parsers.ts'
import { assertIcsLines } from '../../../test/helpers/ics-lines.ts'
import { startSmtpServer, type SmtpCatcher } from '../../../test/helpers/smtp.ts'
import type { Tx } from '../db/tenant.ts'
import { CALENDAR_MAX_BYTES, calendarInviteText, type CalendarInvite } from './calendar-invite.ts'
import { queueNotification, type Notification, type NotificationSender } from './notifications.ts'
import { createNotificationSender } from './senders.ts'
import { calendarOf, renderMessage } from './templates.ts'

const APP_URL = 'https://app.example.org'
const FROM = 'Collab <notifications@example.org>'
const HOSTILE = 'Gala; "A, B" \\ <b>x</b>\nline2 — Café'
const UID = 'event-42@collab.example.org'

/** An invitation to the event 42, changed by `over`. */
const invite = (over: Partial<CalendarInvite> = {}): CalendarInvite => ({
  method: 'REQUEST',
  uid: UID,
  sequence: 3,
  title: HOSTILE,
  description: `${HOSTILE}\n\nBring, friends; and \\ more`,
  start: new Date('2026-06-12T17:30:00Z'),
  end: new Date('2026-06-12T21:00:00Z'),
  timeZone: 'Europe/Berlin',
  location: `Hall 1; ${HOSTILE}`,
  url: `${APP_URL}/events/42?tab=info&x=1`,
  organizer: { name: 'Collab Events', email: 'notifications@example.org' },
  attendee: { name: 'Ann Example', email: 'ann@example.test', partstat: 'ACCEPTED' },
  dtstamp: new Date('2026-05-01T08:00:00Z'),
  ...over
})

/** An e-mail notification as a delivery hands it to a sender. */
const notification = (recipient: string, payload: Record<string, unknown>): Notification => ({
  id: 1,
  tenantId: 't',
  channel: 'email',
  recipient,
  subject: 'Registration confirmed: Gala',
  body: 'Your registration was approved.',
  priority: 'normal',
  payload: { kind: 'attendee.approved', event_id: 42, ...payload },
  attempts: 0
})

/** A calendar's text read as a calendar app reads it: the VCALENDAR, its VEVENT and the event. */
function read (ics: string) {
  const calendar = new ICAL.Component(ICAL.parse(ics))
  const vevent = calendar.getFirstSubcomponent('vevent')
  assert.ok(vevent !== null, 'a VEVENT')
  return { calendar, vevent, event: new ICAL.Event(vevent) }
}

/** The mail's `text/calendar` alternatives, with the `method` of their Content-Type. */
function calendarParts (mail: ParsedMail) {
  return mail.attachments.filter(a => a.contentType === 'text/calendar').map(a => {
    const type = a.headers.get('content-type') as { params?: Record<string, string> } | undefined
    return { method: type?.params?.method, charset: type?.params?.charset, text: a.content.toString('utf8') }
  })
}

/** A parameter of a property, as ical.js reads it. */
const param = (p: ICAL.Property | null, name: string): unknown => p?.getParameter(name)

void describe('calendar invitations in notification mails', () => {
  let smtp: SmtpCatcher
  let sender: NotificationSender
  before(async () => {
    smtp = await startSmtpServer()
    sender = createNotificationSender(
      { smtpUrl: smtp.url, baseUrl: 'https://collab.example.org', appUrl: APP_URL, smtpFrom: FROM },
      { info () {} }
    )
  })
  after(async () => {
    await sender.close?.()
    await smtp.close()
  })

  /** Sends a notification to a new address; the mail as the SMTP server received it. */
  async function deliver (payload: Record<string, unknown>): Promise<ParsedMail> {
    const to = `guest-${crypto.randomUUID()}@example.test`
    await sender.send(notification(to, payload))
    const [got] = smtp.to(to)
    assert.ok(got !== undefined, 'the mail reached the SMTP server')
    return got.mail
  }

  void it('sends a REQUEST as a text/calendar alternative that calendars read: METHOD, UID, SEQUENCE, UTC times, ' +
    'escaped texts, organizer and attendee', async () => {
    const ics = calendarInviteText(invite())
    const mail = await deliver({ calendar: { method: 'REQUEST', ics } })
    assert.equal(mail.text, 'Your registration was approved.\n', 'the text part is unchanged')
    const parts = calendarParts(mail)
    assert.equal(parts.length, 1, 'one text/calendar alternative')
    const [part] = parts
    assert.equal(part?.method, 'REQUEST')
    assert.equal(part?.charset, 'utf-8')
    assert.equal(part?.text, ics, 'the invitation arrives as queued')
    assert.deepEqual(
      mail.attachments.filter(a => a.contentType === 'application/ics').map(a => [a.filename, a.content.length]),
      [['invite.ics', Buffer.byteLength(ics)]],
      'and as invite.ics, for the clients that read attachments'
    )

    const { calendar, vevent, event } = read(part?.text ?? '')
    assert.equal(calendar.getFirstPropertyValue('method'), 'REQUEST')
    assert.equal(calendar.getFirstPropertyValue('x-wr-timezone'), 'Europe/Berlin')
    assert.equal(calendar.getAllSubcomponents('vevent').length, 1)
    assert.equal(event.uid, UID)
    assert.equal(event.sequence, 3)
    assert.equal(vevent.getFirstPropertyValue('status'), 'CONFIRMED')
    assert.equal(event.startDate.toJSDate().toISOString(), '2026-06-12T17:30:00.000Z')
    assert.equal(event.endDate.toJSDate().toISOString(), '2026-06-12T21:00:00.000Z')
    assert.ok(event.startDate.zone === ICAL.Timezone.utcTimezone, 'DTSTART in UTC')
    assert.match(ics, /\r\nDTSTART:20260612T173000Z\r\nDTEND:20260612T210000Z\r\n/)
    assert.equal(
      (vevent.getFirstPropertyValue('dtstamp') as ICAL.Time).toJSDate().toISOString(),
      '2026-05-01T08:00:00.000Z'
    )
    assert.equal(event.summary, HOSTILE)
    assert.equal(event.location, `Hall 1; ${HOSTILE}`)
    assert.equal(event.description, `${HOSTILE}\n\nBring, friends; and \\ more`)
    assert.equal(vevent.getFirstPropertyValue('url'), `${APP_URL}/events/42?tab=info&x=1`)

    const organizer = vevent.getFirstProperty('organizer')
    assert.equal(String(organizer?.getFirstValue()).toLowerCase(), 'mailto:notifications@example.org')
    assert.equal(param(organizer, 'cn'), 'Collab Events')
    const attendees = vevent.getAllProperties('attendee')
    assert.equal(attendees.length, 1)
    assert.equal(String(attendees[0]?.getFirstValue()).toLowerCase(), 'mailto:ann@example.test')
    assert.equal(param(attendees[0] ?? null, 'cn'), 'Ann Example')
    assert.equal(param(attendees[0] ?? null, 'partstat'), 'ACCEPTED')
    assert.equal(param(attendees[0] ?? null, 'rsvp'), 'FALSE')
  })

  void it('cancels with the same UID and a higher SEQUENCE: METHOD:CANCEL, STATUS:CANCELLED', async () => {
    const first = read(calendarInviteText(invite({ sequence: 0 })))
    const ics = calendarInviteText(invite({
      method: 'CANCEL',
      sequence: 1,
      attendee: { name: 'Ann Example', email: 'ann@example.test', partstat: 'DECLINED' }
    }))
    const mail = await deliver({ calendar: { method: 'CANCEL', ics } })
    const [part] = calendarParts(mail)
    assert.equal(part?.method, 'CANCEL')
    const { calendar, vevent, event } = read(part?.text ?? '')
    assert.equal(calendar.getFirstPropertyValue('method'), 'CANCEL')
    assert.equal(vevent.getFirstPropertyValue('status'), 'CANCELLED')
    assert.equal(event.uid, first.event.uid)
    assert.ok(event.sequence > first.event.sequence, 'a higher SEQUENCE than the invitation it cancels')
    assert.equal(param(vevent.getFirstProperty('attendee'), 'partstat'), 'DECLINED')
    assert.equal(first.vevent.getFirstPropertyValue('status'), 'CONFIRMED')
  })

  void it('ends every line with CRLF, the last one too, folds at 75 octets, and is read by ical.js and node-ical, ' +
    'as queued and as mailed', async () => {
    const long = `${'Très long, texte; avec des virgules — Zoë. '.repeat(8)}\nFin`
    for (const method of ['REQUEST', 'CANCEL'] as const) {
      const ics = calendarInviteText(invite({ method, description: long, title: `${HOSTILE} ${long}` }))
      assertIcsLines(ics)
      const mail = await deliver({ calendar: { method, ics } })
      const [part] = calendarParts(mail)
      assertIcsLines(part?.text ?? '')
      const [byNodeIcal] = nodeIcalInstances(part?.text ?? '')
      const [byIcalJs] = icalJsInstances(part?.text ?? '')
      for (const got of [byNodeIcal, byIcalJs]) {
        assert.deepEqual([got?.uid, got?.start.toISOString(), got?.end.toISOString(), got?.summary],
          [UID, '2026-06-12T17:30:00.000Z', '2026-06-12T21:00:00.000Z', `${HOSTILE} ${long}`], method)
      }
    }
  })

  void it('writes an event without an end as an hour long, and refuses one without a start', () => {
    const { event } = read(calendarInviteText(invite({ end: null })))
    assert.equal(event.endDate.toJSDate().toISOString(), '2026-06-12T18:30:00.000Z')
    const reversed = read(calendarInviteText(invite({ end: new Date('2026-06-12T17:00:00Z') })))
    assert.equal(reversed.event.endDate.toJSDate().toISOString(), '2026-06-12T18:30:00.000Z', 'an end before start')
    assert.throws(() => calendarInviteText(invite({ start: null })), /without a start/)
    assert.throws(() => calendarInviteText(invite({ sequence: -1 })), /SEQUENCE/)
    assert.throws(() => calendarInviteText(invite({ sequence: 1.5 })), /SEQUENCE/)
    assert.throws(() => calendarInviteText(invite({ url: 'javascript:alert(1)' })), /URL/)
    assert.throws(() => calendarInviteText(invite({
      attendee: { name: null, email: 'ann@example.test\r\nATTENDEE:mailto:eve@example.test', partstat: 'ACCEPTED' }
    })), /no address/)
    // no description, location or URL, an unknown zone, no attendee name: the properties are left out
    const bare = calendarInviteText(invite({
      description: null,
      location: '  ',
      url: null,
      timeZone: 'Mars/Olympus',
      attendee: { name: null, email: 'ann@example.test', partstat: 'NEEDS-ACTION' }
    }))
    assert.doesNotMatch(bare, /\r\n(DESCRIPTION|LOCATION|URL|X-WR-TIMEZONE)[;:]/)
    const { vevent } = read(bare)
    assert.equal(param(vevent.getFirstProperty('attendee'), 'cn'), undefined)
    assert.equal(param(vevent.getFirstProperty('attendee'), 'partstat'), 'NEEDS-ACTION')
  })

  void it('keeps a name with quotes, backslashes and line breaks one CN parameter', () => {
    const { vevent } = read(calendarInviteText(invite({
      organizer: { name: 'Collab "Events"; \\ Team\nBerlin', email: 'notifications@example.org' },
      attendee: { name: 'Ann, "B" — Zoë', email: 'ann@example.test', partstat: 'TENTATIVE' }
    })))
    const organizer = vevent.getFirstProperty('organizer')
    assert.equal(param(organizer, 'cn'), "Collab 'Events'; / Team Berlin")
    assert.equal(String(organizer?.getFirstValue()).toLowerCase(), 'mailto:notifications@example.org')
    const attendee = vevent.getFirstProperty('attendee')
    assert.equal(param(attendee, 'cn'), "Ann, 'B' — Zoë")
    assert.equal(param(attendee, 'partstat'), 'TENTATIVE')
    assert.equal(String(attendee?.getFirstValue()).toLowerCase(), 'mailto:ann@example.test')
  })

  void it('bounds an invitation: long texts are cut under CALENDAR_MAX_BYTES', () => {
    const ics = calendarInviteText(invite({
      title: 'T'.repeat(100_000), description: 'é;\n'.repeat(200_000), location: ',\\'.repeat(50_000)
    }))
    assert.ok(Buffer.byteLength(ics) <= CALENDAR_MAX_BYTES, `${Buffer.byteLength(ics)} bytes`)
    const { event } = read(ics)
    assert.ok(event.description.endsWith('…') && event.description.startsWith('é;\né;\n'))
    assert.ok(event.summary.length > 1000 && event.summary.length < 1100)
    assert.ok(calendarOf({ calendar: { method: 'REQUEST', ics } }) !== undefined, 'and read back')
  })

  void it('sends the List-Unsubscribe header when asked and none otherwise; no calendar, no text/calendar part',
    async () => {
      const asked = await deliver({ unsubscribe: { label: 'Unsubscribe', path: '/unsubscribe', query: { t: 'a b' } } })
      const url = `${APP_URL}/unsubscribe?t=a+b`
      const header = asked.headerLines.find(h => h.key === 'list-unsubscribe')
      assert.equal(header?.line, `List-Unsubscribe: <${url}>`)
      assert.ok(asked.text?.endsWith(`\n\nUnsubscribe: ${url}\n`), asked.text)
      assert.ok(String(asked.html).includes(`<p><a href="${url}">Unsubscribe</a></p>`), String(asked.html))
      assert.deepEqual(calendarParts(asked), [])
      assert.deepEqual(asked.attachments, [], 'no attachment of any kind')

      const plain = await deliver({ link: { label: 'Open the event', path: '/events/42' } })
      assert.equal(plain.headerLines.find(h => h.key === 'list-unsubscribe'), undefined)
      assert.equal(plain.text, `Your registration was approved.\n\nOpen the event: ${APP_URL}/events/42\n`)
      assert.deepEqual(plain.attachments, [])

      // a stored calendar that is no calendar is not sent
      const broken = await deliver({ calendar: { method: 'PUBLISH', ics: calendarInviteText(invite()) } })
      assert.deepEqual(broken.attachments, [])
    })

  void it('reads back only a well-formed calendar of at most CALENDAR_MAX_BYTES', () => {
    const ics = calendarInviteText(invite())
    assert.deepEqual(calendarOf({ calendar: { method: 'REQUEST', ics, extra: 1 } }), { method: 'REQUEST', ics })
    const cancel = calendarInviteText(invite({ method: 'CANCEL', sequence: 4 }))
    assert.deepEqual(calendarOf({ calendar: { method: 'CANCEL', ics: cancel } }), { method: 'CANCEL', ics: cancel })
    const oversized = ics.replace('END:VCALENDAR', `X-PAD:${'x'.repeat(CALENDAR_MAX_BYTES)}\r\nEND:VCALENDAR`)
    for (const calendar of [
      undefined, null, 'BEGIN:VCALENDAR', [ics], {}, { ics }, { method: 'request', ics }, { method: 'PUBLISH', ics },
      { method: 'REQUEST' }, { method: 'REQUEST', ics: 42 }, { method: 'REQUEST', ics: `\r\n${ics}` },
      { method: 'REQUEST', ics: 'BEGIN:VEVENT\r\nEND:VEVENT' }, { method: 'CANCEL', ics },
      { method: 'REQUEST', ics: oversized }
    ]) {
      assert.equal(calendarOf({ calendar }), undefined, JSON.stringify(calendar)?.slice(0, 80))
    }
  })

  void it('refuses to queue a calendar over CALENDAR_MAX_BYTES or one it could not send', async () => {
    // refused before the transaction is used: no database needed
    const trx = {} as unknown as Tx
    const base = { tenantId: 't', channel: 'email', recipient: 'ann@example.test', subject: 'S', body: 'B' }
    const ics = calendarInviteText(invite())
    const oversized = ics.replace('END:VCALENDAR', `X-PAD:${'é'.repeat(CALENDAR_MAX_BYTES / 2)}\r\nEND:VCALENDAR`)
    await assert.rejects(
      queueNotification(trx, { ...base, calendar: { method: 'REQUEST', ics: oversized } }),
      /more than 65536/
    )
    await assert.rejects(
      queueNotification(trx, { ...base, payload: { calendar: { method: 'REQUEST', ics: oversized } } }),
      /more than 65536/
    )
    await assert.rejects(
      queueNotification(trx, { ...base, calendar: { method: 'CANCEL', ics } }),
      /no METHOD:CANCEL/
    )
  })

  void it('renders the unsubscribe link last, escaped in HTML, joined to the app', () => {
    const mail = renderMessage({
      subject: 'Hi',
      body: 'Hello <you>',
      payload: {
        link: { label: 'Open', path: '/events/1' },
        unsubscribe: { label: '<Stop> "mails" & more', path: '/unsubscribe', query: { token: 'a"b<c>&d', x: "y'z" } }
      }
    }, APP_URL)
    const url = `${APP_URL}/unsubscribe?token=a%22b%3Cc%3E%26d&x=y%27z`
    assert.equal(mail.unsubscribeUrl, url)
    assert.equal(mail.text, `Hello <you>\n\nOpen: ${APP_URL}/events/1\n\n<Stop> "mails" & more: ${url}\n`)
    assert.ok(mail.html.endsWith(
      `<p><a href="${APP_URL}/events/1">Open</a></p>\n` +
      `<p><a href="${url.replace(/&/g, '&amp;')}">&lt;Stop&gt; &quot;mails&quot; &amp; more</a></p>\n</body></html>\n`
    ), mail.html)
    assert.ok(!mail.html.includes('<Stop>') && !mail.html.includes('"mails"'))
    // a path to another host or no link: none; a blank label: the word Unsubscribe
    const render = (unsubscribe: unknown) =>
      renderMessage({ subject: 'S', body: 'B', payload: { unsubscribe } }, APP_URL)
    assert.equal(render({ label: 'x', path: '//evil.example/u' }).unsubscribeUrl, undefined)
    assert.equal(render('https://evil.example').unsubscribeUrl, undefined)
    assert.equal(render({ label: ' ', path: '/u' }).text, `B\n\nUnsubscribe: ${APP_URL}/u\n`)
  })
})
