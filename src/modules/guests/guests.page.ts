/**
 * The public page of an event (docs/guests.md, "The public page"): what anyone may know of a published public event,
 * as JSON (`EventPage`) and as one small, self-contained HTML document with the registration form, rendered on the
 * server in the guest's language and usable without JavaScript.
 *
 * The HTML:
 * - escapes everything a person typed: with `escapeHtml` in the markup and the attributes, and inside the JSON-LD
 *   with `jsonForScript` (no value can close the `<script>` data block);
 * - carries OpenGraph, Twitter and canonical tags and a schema.org `Event` (location, organizer, a free offer whose
 *   availability follows the seats left, attendance mode, status);
 * - runs no script: its CSP allows the one inline style by its hash, form posts to its own origin only, and framing
 *   from the origins the event's public spaces allow (`frame-ancestors`, 'none' by default);
 * - answers a form post with the page again: the success message (role=status), or the problem next to its field
 *   (`aria-invalid`, `aria-describedby`) with what the guest typed, or above the form when it concerns no field.
 */
import crypto from 'node:crypto'
import { Type, type Static } from '@sinclair/typebox'
import { IntId, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { formatWhen, LOCALES, message, type Locale } from '../../platform/i18n/i18n.ts'
import { escapeHtml } from '../../platform/notifications/templates.ts'
import { jsonForScript, spacePagePath } from '../spaces/index.ts'
import { CLOSED_REASONS } from './guests.registration.ts'
import { EMAIL_MAX, NAME_MAX } from './guests.schemas.ts'

/** The path of an event's JSON page; its HTML page is `eventPagePath` (the spaces module links to it). */
export const eventJsonPath = (id: number): string => `/api/v1/public/events/${id}`

/** The currency of the free offer in the JSON-LD (schema.org asks for one; a price of 0 reads the same in any). */
const PRICE_CURRENCY = 'EUR'

/** Bumped when the markup changes, so that the HTML ETag of an unchanged page changes with it. */
const RENDER_VERSION = 1

// ---------------------------------------------------------------- the JSON page

const PageSpace = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  page_url: Type.String({ format: 'uri', description: 'The public page of the space (HTML)' })
}, { additionalProperties: false })

export const EventPage = model('EventPage', {
  id: Type.Integer(),
  title: Type.String(),
  description: Nullable(Type.String()),
  start_dt: Nullable(Timestamp()),
  end_dt: Nullable(Timestamp()),
  timezone: Type.String({ description: 'The IANA zone the event is written in' }),
  address: Nullable(Type.String({ description: 'Where it takes place; null: online' })),
  latitude: Nullable(Type.Number()),
  longitude: Nullable(Type.Number()),
  cancelled: Type.Boolean(),
  organizer: Nullable(Type.Object({
    name: Type.String({ description: 'The display name of the event\'s creator (never an e-mail address)' })
  }, { additionalProperties: false })),
  spaces: Type.Array(PageSpace, { description: 'The published public spaces the event belongs to' }),
  registration: Type.Object({
    open: Type.Boolean({ description: 'Whether a guest may register now' }),
    reason: Nullable(StringEnum(CLOSED_REASONS, {
      description: 'Why not: off (no public registration), cancelled, over, not_open (yet), closed, full'
    })),
    opens_at: Nullable(Timestamp('Registrations open then (null: at once)')),
    closes_at: Nullable(Timestamp('Registrations close then (the event\'s start unless set)')),
    seats_left: Nullable(Type.Integer({ minimum: 0, description: 'Seats still free; null: no limit' })),
    waitlist: Type.Boolean({ description: 'A guest past the capacity joins the waitlist' }),
    double_opt_in: Type.Boolean({ description: 'A registration counts once the mailed link is followed' })
  }, { additionalProperties: false }),
  page_url: Type.String({ format: 'uri', description: 'This page as HTML, with the registration form' }),
  register_url: Type.String({
    format: 'uri', description: 'Where a client posts a registration as JSON (`register-for-public-event`)'
  })
}, {
  examples: [{
    id: 42,
    title: 'Summer choir concert',
    description: 'Songs of the season, with the town choir.',
    start_dt: '2027-06-12T17:00:00.000Z',
    end_dt: '2027-06-12T19:00:00.000Z',
    timezone: 'Europe/Berlin',
    address: 'Town hall, Main St 1',
    latitude: null,
    longitude: null,
    cancelled: false,
    organizer: { name: 'Ann Lee' },
    spaces: [{ id: 7, title: 'Town choir', page_url: 'https://collab.example.org/api/v1/public/spaces/7/page.html' }],
    registration: {
      open: true,
      reason: null,
      opens_at: null,
      closes_at: '2027-06-12T17:00:00.000Z',
      seats_left: 12,
      waitlist: true,
      double_opt_in: true
    },
    page_url: 'https://collab.example.org/api/v1/public/events/42/page.html',
    register_url: 'https://collab.example.org/api/v1/public/events/42/registrations'
  }]
})
export type EventPageData = Omit<Static<typeof EventPage>, '$schema'>

export const EventPageParams = Type.Object({ id: IntId })
export const EventPageQuery = Type.Object({
  lang: Type.Optional(StringEnum(LOCALES, { description: 'The language of the HTML page (default: Accept-Language)' }))
})

const FormText = (description: string) => Type.Optional(Type.String({ maxLength: 1000, description }))

/** The fields of the page's form (`application/x-www-form-urlencoded`); a browser sends all, maybe empty. */
export const EventPageForm = Type.Object({
  name: FormText(`The guest's name (1 to ${NAME_MAX} characters)`),
  email: FormText('The address the confirmation is mailed to'),
  website: FormText('The honeypot: a field hidden from people; a registration that fills it is dropped'),
  locale: Type.Optional(StringEnum(LOCALES, { description: 'The language of the page the form was on' }))
}, {
  additionalProperties: false,
  examples: [{ name: 'Ann Lee', email: 'ann@example.org', website: '', locale: 'en' }]
})

// ---------------------------------------------------------------- headers and tags

const STYLE = [
  ':root{color-scheme:light;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;',
  'background:#fff}',
  'body{margin:0 auto;max-width:42rem;padding:1rem}',
  'a{color:#0b57d0}a:focus-visible,input:focus-visible,button:focus-visible{outline:3px solid #0b57d0;',
  'outline-offset:2px}',
  'h1{font-size:1.75rem;line-height:1.2;margin:.25rem 0 .5rem}h2{font-size:1.25rem;margin:1.5rem 0 .5rem}',
  '.kicker,.note{color:#4a4a4a;margin:0 0 .75rem}.kicker{margin:0}.desc{white-space:pre-line}',
  '.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:1rem 0}',
  '.facts dt{font-weight:600}.facts dd{margin:0}.facts ul{list-style:none;margin:0;padding:0}',
  '.cancelled{color:#a00000;font-weight:700}.cancelled-title{text-decoration:line-through}',
  '.field{margin:0 0 1rem}label{display:block;font-weight:600;margin-bottom:.25rem}',
  'input{box-sizing:border-box;width:100%;max-width:28rem;padding:.5rem;font:inherit;border:1px solid #6b6b6b;',
  'border-radius:.25rem}input[aria-invalid=true]{border:2px solid #a00000}',
  '.error{color:#a00000;font-weight:600;margin:.25rem 0 0}',
  '.problem,.success,.closed{padding:.5rem .75rem;border-left:4px solid}',
  '.problem{border-color:#a00000;background:#fdf0f0}.success{border-color:#1e7b34;background:#eef8f0}',
  '.closed{border-color:#6b6b6b;background:#f3f3f3}',
  'button{font:inherit;font-weight:600;padding:.6rem 1.25rem;border:0;border-radius:.5rem;background:#0b57d0;',
  'color:#fff;cursor:pointer}',
  '.hp{position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden}'
].join('')

const STYLE_HASH = crypto.createHash('sha256').update(STYLE).digest('base64')

/**
 * The Content-Security-Policy of the HTML page: no script runs, the one inline style by its hash, the form posts to
 * this origin only, and only `frameAncestors` (a source list, `frameAncestors` of the spaces module) may frame it.
 */
export const pageCsp = (frameAncestors: string): string => [
  "default-src 'none'",
  `style-src 'sha256-${STYLE_HASH}'`,
  "base-uri 'none'",
  "form-action 'self'",
  `frame-ancestors ${frameAncestors}`
].join('; ')

/** The headers every HTML answer carries (besides caching). */
export const htmlHeaders = (frameAncestors: string): Record<string, string> => ({
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': pageCsp(frameAncestors),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer'
})

const hash = (text: string): string => crypto.createHash('sha256').update(text).digest('base64url').slice(0, 27)

/** The JSON page's ETag (weak: the same data, whatever the serialization). */
export const jsonEtag = (page: EventPageData): string => `W/"${hash(JSON.stringify(page))}"`

/** The HTML page's ETag: the data, the language, the framing allowed and the markup's version. */
export const htmlEtag = (page: EventPageData, locale: Locale, frameAncestors: string): string =>
  `W/"${hash(JSON.stringify([page, locale, frameAncestors, RENDER_VERSION]))}.h"`

/** Whether `If-None-Match` names `etag` (weakly) or is `*`. */
export function etagMatches (ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const raw = Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch
  const bare = etag.replace(/^W\//, '')
  return raw.split(',').map(t => t.trim()).some(t => t === '*' || t.replace(/^W\//, '') === bare)
}

// ---------------------------------------------------------------- the HTML page

const toDate = (v: Date | string | null): Date | null => {
  if (v === null) return null
  const d = v instanceof Date ? v : new Date(v)
  return Number.isNaN(d.getTime()) ? null : d
}

const SCHEMA = 'https://schema.org/'

/** The schema.org availability of the free offer: what a guest can do now. */
function availability (r: EventPageData['registration']): string {
  if (r.reason === 'not_open') return `${SCHEMA}PreOrder`
  if (r.reason !== null) return `${SCHEMA}SoldOut`
  if (r.seats_left === 0) return `${SCHEMA}BackOrder`
  return `${SCHEMA}InStock`
}

/** The page as a schema.org Event (https://schema.org/Event), for search engines and calendar tools. */
export function eventLd (page: EventPageData): Record<string, unknown> {
  const start = toDate(page.start_dt)
  const end = toDate(page.end_dt)
  const hasGeo = page.latitude !== null && page.longitude !== null
  const inPerson = page.address !== null || hasGeo
  const location = inPerson
    ? {
        '@type': 'Place',
        ...(page.address !== null ? { name: page.address, address: page.address } : {}),
        ...(hasGeo ? { geo: { '@type': 'GeoCoordinates', latitude: page.latitude, longitude: page.longitude } } : {})
      }
    : { '@type': 'VirtualLocation', url: page.page_url }
  const r = page.registration
  const opens = toDate(r.opens_at)
  return {
    '@context': 'https://schema.org',
    '@type': 'Event',
    name: page.title,
    ...(page.description !== null && page.description.trim() !== '' ? { description: page.description } : {}),
    ...(start !== null ? { startDate: start.toISOString() } : {}),
    ...(end !== null ? { endDate: end.toISOString() } : {}),
    eventStatus: `${SCHEMA}${page.cancelled ? 'EventCancelled' : 'EventScheduled'}`,
    eventAttendanceMode: `${SCHEMA}${inPerson ? 'OfflineEventAttendanceMode' : 'OnlineEventAttendanceMode'}`,
    location,
    ...(page.organizer !== null ? { organizer: { '@type': 'Person', name: page.organizer.name } } : {}),
    // a public registration is free: an offer exists while the event takes (or will take) registrations at all
    ...(r.reason !== 'off'
      ? {
          offers: {
            '@type': 'Offer',
            price: 0,
            priceCurrency: PRICE_CURRENCY,
            availability: availability(r),
            url: page.page_url,
            ...(opens !== null ? { validFrom: opens.toISOString() } : {})
          }
        }
      : {}),
    url: page.page_url
  }
}

/** What a form post left to show: the registration taken, or a problem (at a field, or of the whole form). */
export interface FormOutcome {
  accepted?: boolean
  /** `body.name`, `body.email`, or anything else for a problem of the form as a whole */
  problem?: { location: string, message: string }
  /** what the guest typed, shown again after a problem */
  values?: { name?: string, email?: string }
}

/** How to render a page (its absolute URLs, canonical and OpenGraph and JSON-LD, are the page's own, from BASE_URL). */
export interface RenderOptions {
  locale: Locale
  /** the text of why the event takes no registration (`closedProblem`'s), when it takes none */
  closedText?: string
  form?: FormOutcome
}

const FIELDS = [
  { name: 'name', key: 'page.form.name', type: 'text', autocomplete: 'name', max: NAME_MAX },
  { name: 'email', key: 'page.form.email', type: 'email', autocomplete: 'email', max: EMAIL_MAX }
] as const

function formHtml (page: EventPageData, locale: Locale, form: FormOutcome = {}): string {
  const invalid = FIELDS.find(f => form.problem?.location === `body.${f.name}`)?.name
  const fields = FIELDS.map(f => {
    const id = `reg-${f.name}`
    const error = invalid === f.name ? form.problem?.message : undefined
    const value = form.values?.[f.name] ?? ''
    return '<div class="field">' +
      `<label for="${id}">${escapeHtml(message(locale, f.key))}</label>` +
      `<input id="${id}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}" required ` +
      `maxlength="${f.max}"${f.type === 'email' ? ' spellcheck="false"' : ''} value="${escapeHtml(value)}"` +
      (error !== undefined ? ` aria-invalid="true" aria-describedby="${id}-error" autofocus` : '') + '>' +
      (error !== undefined ? `<p id="${id}-error" class="error">${escapeHtml(error)}</p>` : '') +
      '</div>'
  }).join('')
  // the honeypot: present for a program that fills every field, hidden from people and from assistive technology
  const honeypot = '<div class="hp" aria-hidden="true">' +
    `<label for="reg-website">${escapeHtml(message(locale, 'page.form.website'))}</label>` +
    '<input id="reg-website" name="website" type="text" tabindex="-1" autocomplete="off" value=""></div>'
  return `<form method="post" action="/api/v1/public/events/${page.id}/page.html" accept-charset="utf-8">` +
    `<input type="hidden" name="locale" value="${locale}">` +
    fields + honeypot +
    `<button type="submit">${escapeHtml(message(locale, 'page.form.submit'))}</button></form>`
}

function registrationHtml (page: EventPageData, o: RenderOptions): string {
  const { locale, form } = o
  const r = page.registration
  if (form?.accepted === true) {
    return `<p class="success" role="status">${escapeHtml(message(locale, 'registration.accepted'))}</p>`
  }
  const atField = FIELDS.some(f => form?.problem?.location === `body.${f.name}`)
  const alert = form?.problem !== undefined && !atField
    ? `<p class="problem" role="alert">${escapeHtml(form.problem.message)}</p>`
    : ''
  // after a refusal of the whole form, its message is the one to read (the page's own would repeat it)
  if (r.reason !== null) return alert !== '' ? alert : `<p class="closed">${escapeHtml(o.closedText ?? '')}</p>`
  const notes = [
    ...(r.seats_left === 0 && r.waitlist ? [message(locale, 'page.waitlist')] : []),
    ...(r.double_opt_in ? [message(locale, 'page.form.optin')] : [])
  ].map(n => `<p class="note">${escapeHtml(n)}</p>`).join('')
  return alert + notes + formHtml(page, locale, form)
}

/** The whole HTML document of an event's public page in `locale`. */
export function renderEventPage (page: EventPageData, o: RenderOptions): string {
  const { locale } = o
  const t = (key: Parameters<typeof message>[1], values?: Record<string, string | number>) =>
    escapeHtml(message(locale, key, values))
  const title = escapeHtml(page.title)
  const start = toDate(page.start_dt)
  const whenText = formatWhen(locale, start, toDate(page.end_dt), page.timezone)
  const where = page.address ?? message(locale, 'where.online')
  const description = page.description?.trim() ?? ''
  const summary = description !== ''
    ? description.slice(0, 300)
    : message(locale, 'page.summary', { when: whenText, where })
  const canonical = page.page_url
  const r = page.registration
  const facts = [
    [t('page.when'), start !== null
      ? `<time datetime="${start.toISOString()}">${escapeHtml(whenText)}</time>`
      : escapeHtml(whenText)],
    [t('page.where'), escapeHtml(where)],
    ...(page.organizer !== null ? [[t('page.organizer'), escapeHtml(page.organizer.name)]] : []),
    ...(r.seats_left !== null && !['off', 'cancelled', 'over'].includes(r.reason ?? '')
      ? [[t('page.seats'), t('mail.seats_left', { count: r.seats_left })]]
      : []),
    ...(page.spaces.length > 0
      ? [[t('page.spaces'), '<ul>' + page.spaces.map(s =>
          `<li><a href="${spacePagePath(s.id)}">${escapeHtml(s.title)}</a></li>`).join('') +
          '</ul>']]
      : [])
  ].map(([dt, dd]) => `<dt>${dt ?? ''}</dt><dd>${dd ?? ''}</dd>`).join('')
  const alternates = LOCALES.map(l =>
    `<link rel="alternate" hreflang="${l}" href="${escapeHtml(`${canonical}?lang=${l}`)}">`).join('') +
    `<link rel="alternate" hreflang="x-default" href="${escapeHtml(canonical)}">`
  const meta = (attr: 'name' | 'property', key: string, value: string) =>
    `<meta ${attr}="${key}" content="${escapeHtml(value)}">`
  return `<!doctype html>\n<html lang="${locale}"><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${title}</title>` +
    meta('name', 'description', summary) +
    `<link rel="canonical" href="${escapeHtml(canonical)}">` + alternates +
    `<link rel="alternate" type="application/json" href="${eventJsonPath(page.id)}">` +
    meta('property', 'og:type', 'website') + meta('property', 'og:title', page.title) +
    meta('property', 'og:description', summary) + meta('property', 'og:url', canonical) +
    meta('name', 'twitter:card', 'summary') + meta('name', 'twitter:title', page.title) +
    meta('name', 'twitter:description', summary) +
    `<style>${STYLE}</style>` +
    `<script type="application/ld+json">${jsonForScript(eventLd(page))}</script>` +
    '</head><body>' +
    `<header><p class="kicker">${t('page.kicker')}</p>` +
    `<h1${page.cancelled ? ' class="cancelled-title"' : ''}>${title}</h1>` +
    (page.cancelled ? `<p class="cancelled">${t('error.event_cancelled')}</p>` : '') + '</header>' +
    `<main><dl class="facts">${facts}</dl>` +
    (description !== '' ? `<p class="desc">${escapeHtml(page.description ?? '')}</p>` : '') +
    '<section aria-labelledby="register"><h2 id="register">' + t('page.register') + '</h2>' +
    registrationHtml(page, o) + '</section></main></body></html>\n'
}
