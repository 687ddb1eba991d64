/**
 * Every notification text in one place: one function per kind builds its subject, its plain text
 * and its link when the notification is queued; `renderMessage` turns a queued notification into
 * the mail that is sent (subject, plain-text part, HTML part) when it is delivered.
 *
 * Links are stored as a path and query in the row's payload (`payload.link`) and joined to the
 * web app's public address (`APP_URL`, default `BASE_URL`) only when sent, so the services that
 * queue need no configuration. The HTML part is built from the plain text: every character of it,
 * titles and messages people typed included, is escaped. Paths and decisions:
 * docs/notifications.md, "Templates and links".
 *
 * A notification may also carry an iCalendar invitation (`payload.calendar`: its METHOD and text, written by
 * calendar-invite.ts when queued; the SMTP sender attaches it as the `text/calendar` alternative calendars read) and
 * an unsubscribe link (`payload.unsubscribe`: a link like `payload.link`, written last in both parts and sent as the
 * List-Unsubscribe header). Both are read back strictly (`calendarOf`, `unsubscribeOf`): anything else is none.
 *
 * @example
 *   await queueNotification(trx, { tenantId, channel: 'email', recipient, ...spacePublished({ spaceId: 7, title:
 * 'Choir' }) })
 */
import { CALENDAR_MAX_BYTES, CALENDAR_METHODS, calendarBytes, type CalendarMethod } from './calendar-invite.ts'

/** A link of a notification: a path of the web app, its query, and the words of the link. */
export interface NotificationLink {
  label: string
  /** absolute path in the web app, e.g. `/events/12` */
  path: string
  query?: Record<string, string>
}

/** What a template gives to `queueNotification`. */
export interface Template {
  subject: string
  /** the plain text, without the link (stored as the row's `body`) */
  body: string
  link?: NotificationLink
  /** what the notification is about (`kind`, ids), merged into the row's payload */
  payload: Record<string, unknown>
  /** an iCalendar invitation (kept in `payload.calendar`) */
  calendar?: NotificationCalendar
  /** where the recipient stops these mails (kept in `payload.unsubscribe`) */
  unsubscribe?: NotificationLink
}

/** An iCalendar invitation carried by a notification (`payload.calendar`). */
export interface NotificationCalendar {
  /** the iTIP method, the same as the text's METHOD */
  method: CalendarMethod
  /** the VCALENDAR (calendarInviteText), at most CALENDAR_MAX_BYTES */
  ics: string
}

/** The mail as sent. */
export interface RenderedMessage {
  subject: string
  text: string
  html: string
  /** the invitation to send as the `text/calendar` alternative */
  calendar?: NotificationCalendar
  /** the unsubscribe link joined to the web app (List-Unsubscribe) */
  unsubscribeUrl?: string
}

/** HTML-escapes text for element content and double-quoted attribute values. */
export function escapeHtml (value: string): string {
  return value.replace(
    /[&<>"']/g,
    c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string
  )
}

/** One line, whatever the typed title held. */
function oneLine (text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ').trim()
}

const sentence = (message: string | undefined, fallback: string): string =>
  message !== undefined && message.trim() !== '' ? message : fallback

/** The address of a link in the web app at `appUrl` (no trailing slash). */
export function linkUrl (appUrl: string, link: NotificationLink): string {
  const query = new URLSearchParams(link.query ?? {}).toString()
  return `${appUrl}${link.path}${query === '' ? '' : `?${query}`}`
}

/** A stored link read back (absent, or not a link: none). */
function readLink (value: unknown): NotificationLink | undefined {
  const l = value as Partial<NotificationLink> | undefined
  if (
    typeof l !== 'object' ||
    l === null ||
    typeof l.label !== 'string' ||
    typeof l.path !== 'string' ||
    !l.path.startsWith('/') ||
    l.path.startsWith('//')
  ) { return undefined }
  const query = typeof l.query === 'object' && l.query !== null
    ? Object.fromEntries(Object.entries(l.query).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : undefined
  return { label: l.label, path: l.path, ...(query !== undefined ? { query } : {}) }
}

/** Reads `payload.link` back (absent, or not a link: none). */
export const linkOf = (payload: Record<string, unknown>): NotificationLink | undefined => readLink(payload.link)

/** Reads `payload.unsubscribe` back (absent, or not a link: none). */
export const unsubscribeOf = (payload: Record<string, unknown>): NotificationLink | undefined =>
  readLink(payload.unsubscribe)

/**
 * Why a value cannot be a notification's calendar (`payload.calendar`), or undefined when it can: an object with an
 * iTIP method of CALENDAR_METHODS and a text that is a VCALENDAR with that METHOD, at most CALENDAR_MAX_BYTES.
 */
export function calendarProblem (value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the calendar is not an object'
  const { method, ics } = value as { method?: unknown, ics?: unknown }
  if (typeof method !== 'string' || !(CALENDAR_METHODS as readonly string[]).includes(method)) {
    return `the calendar's method is not one of ${CALENDAR_METHODS.join(', ')}`
  }
  if (typeof ics !== 'string' || !ics.startsWith('BEGIN:VCALENDAR')) return 'the calendar is not iCalendar text'
  const bytes = calendarBytes(ics)
  if (bytes > CALENDAR_MAX_BYTES) return `the calendar has ${bytes} bytes, more than ${CALENDAR_MAX_BYTES}`
  // the mail's `method=` must say what the text says, or calendars read the invitation as another kind
  if (!new RegExp(`\\r?\\nMETHOD:${method}\\r?\\n`).test(ics)) return `the calendar's text has no METHOD:${method}`
  return undefined
}

/** Reads `payload.calendar` back (absent, malformed or too large: none). */
export function calendarOf (payload: Record<string, unknown>): NotificationCalendar | undefined {
  const c = payload.calendar as NotificationCalendar
  return calendarProblem(c) === undefined ? { method: c.method, ics: c.ics } : undefined
}

/**
 * The mail of a queued notification: the stored subject and text, the link joined to `appUrl`,
 * and an HTML part in which every character of the text is escaped; the unsubscribe link (when it
 * joins to a URL) last in both parts, and the calendar invitation as stored.
 */
export function renderMessage (
  n: { subject: string; body: string; payload: Record<string, unknown> },
  appUrl: string
): RenderedMessage {
  const link = linkOf(n.payload)
  const url = link !== undefined ? linkUrl(appUrl, link) : undefined
  const subject = oneLine(n.subject)
  const unsubscribe = unsubscribeOf(n.payload)
  // a URL as the WHATWG parser writes it: no line break, space or `<>` to break the List-Unsubscribe header
  const joined = unsubscribe !== undefined ? linkUrl(appUrl, unsubscribe) : undefined
  const unsubscribeUrl = joined !== undefined && URL.canParse(joined) ? new URL(joined).href : undefined
  const unsubscribeLabel = unsubscribe !== undefined && unsubscribe.label.trim() !== ''
    ? oneLine(unsubscribe.label)
    : 'Unsubscribe'
  const calendar = calendarOf(n.payload)
  const text = [
    n.body,
    ...(link !== undefined && url !== undefined ? [`${link.label}: ${url}`] : []),
    ...(unsubscribeUrl !== undefined ? [`${unsubscribeLabel}: ${unsubscribeUrl}`] : [])
  ].join('\n\n') + '\n'
  const paragraphs = n.body
    .split(/\r?\n[ \t]*\r?\n/)
    .map(p => `<p>${escapeHtml(p.trim()).replace(/\r?\n/g, '<br>\n')}</p>`)
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body>',
    ...paragraphs,
    ...(link !== undefined && url !== undefined
      ? [`<p><a href="${escapeHtml(url)}">${escapeHtml(link.label)}</a></p>`]
      : []),
    ...(unsubscribeUrl !== undefined
      ? [`<p><a href="${escapeHtml(unsubscribeUrl)}">${escapeHtml(unsubscribeLabel)}</a></p>`]
      : []),
    '</body></html>',
    ''
  ].join('\n')
  return {
    subject,
    text,
    html,
    ...(calendar !== undefined ? { calendar } : {}),
    ...(unsubscribeUrl !== undefined ? { unsubscribeUrl } : {})
  }
}

// ---- the kinds

/** That an event, a series or a space was published (the caller's message, else a sentence), with a link to `path`. */
function publishedNotice (
  what: 'event' | 'series' | 'space',
  p: { title: string, message?: string | undefined },
  path: string,
  payload: Record<string, unknown>,
  subject = `Published: ${p.title}`
): Template {
  return {
    subject: oneLine(subject),
    body: sentence(p.message, `The ${what} "${p.title}" was published.`),
    link: { label: `Open the ${what}`, path },
    payload
  }
}

/** POST /events/{id}/publish with notify: to the event's creator. */
export function eventPublished (e: {
  eventId: number
  version: number
  title: string
  message?: string | undefined
}): Template {
  return publishedNotice('event', e, `/events/${e.eventId}`, {
    kind: 'event.published',
    event_id: e.eventId,
    version: e.version
  })
}

/** POST /events/{id}/series/publish with notify: to the series' creator; the link opens the occurrence addressed. */
export function seriesPublished (s: {
  seriesId: string | number
  eventId: number
  version: number
  title: string
  message?: string | undefined
}): Template {
  return publishedNotice('series', s, `/events/${s.eventId}`, {
    kind: 'series.published',
    series_id: s.seriesId,
    event_id: s.eventId,
    version: s.version
  })
}

/** POST /spaces/{id}/publish with notify: to the space's creator. */
export function spacePublished (s: { spaceId: number, title: string, message?: string | undefined }): Template {
  const payload = { kind: 'space.published', space_id: s.spaceId }
  return publishedNotice('space', s, `/spaces/${s.spaceId}`, payload, `Space "${s.title}" was published`)
}

/** POST /events/{id}/managers or /spaces/{id}/managers with notify: to the new manager. */
export function managerAdded (m: {
  on: 'event' | 'space'
  id: number
  userId: string
  title: string
  message?: string | undefined
}): Template {
  return {
    subject: oneLine(`You now manage the ${m.on} "${m.title}"`),
    body: sentence(m.message, `You were made a manager of the ${m.on} "${m.title}".`),
    link: { label: `Open the ${m.on}`, path: `/${m.on === 'event' ? 'events' : 'spaces'}/${m.id}` },
    payload: { kind: `${m.on}.manager_added`, [`${m.on}_id`]: m.id, user_id: m.userId }
  }
}

/**
 * A manager invitation (an event, every occurrence of a series, a space): a link to the web app's
 * accept page, `/invites/accept?type=event|space&token=…`, which sends the token to the API's
 * accept route once the invitee is signed in (series invites are accepted as event invites).
 */
export function managerInvitation (i: {
  on: 'event' | 'series' | 'space'
  title: string
  token: string
  days: number
  message?: string | undefined
}): Template {
  const type = i.on === 'space' ? 'space' : 'event'
  const what = i.on === 'series' ? `every occurrence of the series "${i.title}"` : `the ${i.on} "${i.title}"`
  const invitation =
    `You are invited to manage ${what}. To accept, open the link below and sign in with this e-mail address.`
  const footer = `The invitation expires in ${i.days} days. Without the app: ` +
    `sign in and send POST /api/v1/${type}s/managers/accept with {"token": "${i.token}"}.`
  return {
    subject: oneLine(
      i.on === 'space'
        ? `You are invited to manage the space "${i.title}"`
        : `Invitation to manage the ${i.on} "${i.title}"`
    ),
    body: [...(i.message !== undefined && i.message.trim() !== '' ? [i.message] : []), invitation, footer].join('\n\n'),
    link: { label: 'Accept the invitation', path: '/invites/accept', query: { type, token: i.token } },
    payload: { kind: `${i.on}.manager_invited` }
  }
}

/** The automation action `notify`: the rule's subject and body (placeholders filled), and a link to the event. */
export function automationMessage (a: {
  subject: string
  body: string
  eventId: number
  ruleId: string
  executionId: string
}): Template {
  return {
    subject: oneLine(a.subject),
    body: a.body,
    link: { label: 'Open the event', path: `/events/${a.eventId}` },
    payload: {
      kind: 'automation.message',
      source: 'automation',
      rule_id: a.ruleId,
      execution_id: a.executionId,
      event_id: a.eventId
    }
  }
}

/**
 * That registrations await approval (docs/event-collaboration.md, "Registration"): to the event's creator and
 * managers. What attendees are told of their own place is a guest mail, in their language (docs/guests.md).
 */
export function registrationsPending (n: { eventId: number, title: string, count: number }): Template {
  return {
    subject: oneLine(`${n.count} registration(s) to approve: ${n.title}`),
    body: `${n.count} registration(s) for "${n.title}" await your approval.`,
    link: { label: 'Open the event', path: `/events/${n.eventId}` },
    payload: { kind: 'registration.pending', event_id: n.eventId }
  }
}
