/**
 * The public space page as HTML (docs/integrations.md, "The public page in a browser"): one small,
 * self-contained document rendered on the server from the same `SpacePage` the JSON answer holds (and the same
 * entry of the page cache), with no script to run, an inline style allowed by its hash in the CSP, and the
 * upcoming events as schema.org `Event`s in a JSON-LD data block for search engines and calendar tools.
 *
 * Everything a person typed (titles, descriptions, addresses, time zones) is escaped: with `escapeHtml` in the
 * markup, and inside the JSON-LD by `jsonForScript`, which writes `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`
 * so that no value can close the `<script>` element.
 *
 * @example
 *   const html = renderPublicPage(page, { baseUrl: 'https://collab.example.org', selfPath: '/api/v1/public/spaces/7' })
 */
import crypto from 'node:crypto'
import { escapeHtml } from '../../platform/notifications/templates.ts'
import type { SpacePage } from './spaces.schemas.ts'

/** What the HTML shows of an event beyond the JSON page's fields (read by the same statement, not serialized). */
export interface EventDetails {
  cancelled_at?: Date | string
  latitude?: number
  longitude?: number
}

export type PublicEventOfPage = SpacePage['upcoming_events'][number] & EventDetails
export type PublicPageData = Omit<SpacePage, 'upcoming_events'> & { upcoming_events: PublicEventOfPage[] }

/** The path of a space's iCalendar feed (docs/integrations.md, "Calendar feeds"). */
export const calendarPath = (spaceId: number): string => `/api/v1/spaces/${spaceId}/calendar.ics`

/** The path of the page as HTML of its own, for a reference (numeric id or public handle). */
export const htmlPath = (ref: string | number): string => `/api/v1/public/spaces/${encodeURIComponent(ref)}/page.html`

/** The path of a public event's own page, with its registration form (the guests module's, docs/guests.md). */
export const eventPagePath = (eventId: number): string => `/api/v1/public/events/${eventId}/page.html`

/** Bumped when the markup changes, so that the HTML ETag of an unchanged page changes with it. */
const RENDER_VERSION = 2

const STYLE = [
  ':root{color-scheme:light;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;',
  'background:#fff}',
  'body{margin:0 auto;max-width:42rem;padding:1rem}',
  'a{color:#0b57d0}a:focus-visible{outline:3px solid #0b57d0;outline-offset:2px;border-radius:2px}',
  'h1{font-size:1.75rem;line-height:1.2;margin:.25rem 0 .5rem}h2{font-size:1.25rem;margin:1.5rem 0 .5rem}',
  'h3{font-size:1.05rem;margin:0}',
  '.kicker,.meta{color:#4a4a4a;margin:0}.desc{white-space:pre-line}',
  '.events{list-style:none;padding:0;margin:0}.events li{border-top:1px solid #d0d0d0;padding:.75rem 0}',
  '.cal{display:inline-block;padding:.5rem .75rem;border:2px solid #0b57d0;border-radius:.5rem;font-weight:600;',
  'text-decoration:none}',
  '.cancelled{color:#a00000;font-weight:700}.cancelled-title{text-decoration:line-through}',
  'footer{margin-top:2rem;border-top:1px solid #d0d0d0;padding-top:.75rem;font-size:.9rem}',
  'footer ul{list-style:none;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:1rem}'
].join('')

/** The Content-Security-Policy of the HTML page: no script runs, the one inline style by its hash. */
export const HTML_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${crypto.createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

/** The headers every HTML answer carries (besides caching). */
export const HTML_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': HTML_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer'
}

/** The HTML ETag of the page whose JSON ETag is `etag` (weak, like it, and different from it). */
export const htmlEtag = (etag: string): string => etag.replace(/"$/, `.h${RENDER_VERSION}"`)

/** JSON safe inside a `<script>` element of HTML: no `<`, `>` or `&`, and no line separators JavaScript chokes on. */
export function jsonForScript (value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

const toDate = (v: Date | string | undefined): Date | undefined => {
  if (v === undefined) return undefined
  const d = v instanceof Date ? v : new Date(v)
  return Number.isNaN(d.getTime()) ? undefined : d
}

const formats = new Map<string, Intl.DateTimeFormat>()

/** A date and time as read in `timeZone` ("Fri, 4 Dec 2026, 18:00"); UTC when the zone is unknown. */
function formatIn (date: Date, timeZone: string): string {
  let format = formats.get(timeZone)
  if (format === undefined) {
    const options: Intl.DateTimeFormatOptions = {
      weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit'
    }
    try {
      format = new Intl.DateTimeFormat('en-GB', { ...options, timeZone })
    } catch {
      format = new Intl.DateTimeFormat('en-GB', { ...options, timeZone: 'UTC' })
    }
    if (formats.size < 1000) formats.set(timeZone, format)
  }
  return format.format(date)
}

const time = (date: Date, timeZone: string): string =>
  `<time datetime="${date.toISOString()}">${escapeHtml(formatIn(date, timeZone))}</time>`

/** The schema.org Event of an upcoming event (https://schema.org/Event). */
function eventLd (e: PublicEventOfPage, url: string): Record<string, unknown> {
  const start = toDate(e.start_dt)
  const end = toDate(e.end_dt)
  const hasGeo = typeof e.latitude === 'number' && typeof e.longitude === 'number'
  const place = e.address !== undefined || hasGeo
    ? {
        '@type': 'Place',
        ...(e.address !== undefined ? { name: e.address, address: e.address } : {}),
        ...(hasGeo ? { geo: { '@type': 'GeoCoordinates', latitude: e.latitude, longitude: e.longitude } } : {})
      }
    : undefined
  return {
    '@type': 'Event',
    name: e.title,
    ...(e.description !== undefined ? { description: e.description } : {}),
    ...(start !== undefined ? { startDate: start.toISOString() } : {}),
    ...(end !== undefined ? { endDate: end.toISOString() } : {}),
    eventStatus: toDate(e.cancelled_at) !== undefined
      ? 'https://schema.org/EventCancelled'
      : 'https://schema.org/EventScheduled',
    ...(place !== undefined ? { location: place } : {}),
    url
  }
}

function eventItem (e: PublicEventOfPage): string {
  const start = toDate(e.start_dt)
  const end = toDate(e.end_dt)
  const cancelled = toDate(e.cancelled_at) !== undefined
  const when = start === undefined
    ? 'Date to be announced'
    : `${time(start, e.timezone)}${end !== undefined ? ` to ${time(end, e.timezone)}` : ''}` +
      ` <span class="tz">(${escapeHtml(e.timezone)})</span>`
  return `<li id="event-${e.id}"><article aria-labelledby="event-${e.id}-title">` +
    `<h3 id="event-${e.id}-title"${cancelled ? ' class="cancelled-title"' : ''}>` +
    `<a href="${eventPagePath(e.id)}">${escapeHtml(e.title)}</a></h3>` +
    (cancelled ? '<p class="cancelled">Cancelled</p>' : '') +
    `<p class="meta">${when}</p>` +
    (e.address !== undefined ? `<p class="meta">Place: ${escapeHtml(e.address)}</p>` : '') +
    '</article></li>'
}

export interface RenderOptions {
  /** The service's public address (BASE_URL), for the absolute URLs of the JSON-LD */
  baseUrl: string
  /** The path the page was asked at (the JSON page of the reference asked) */
  selfPath: string
}

/** The whole HTML document of a public space page. */
export function renderPublicPage (page: PublicPageData, { baseUrl, selfPath }: RenderOptions): string {
  const { space } = page
  const title = escapeHtml(space.title)
  const pageUrl = `${baseUrl}${htmlPath(space.id)}`
  const calendar = calendarPath(space.id)
  const webcal = `${baseUrl.replace(/^https?:/, 'webcal:')}${calendar}`
  const ld = {
    '@context': 'https://schema.org',
    '@graph': page.upcoming_events.map(e => eventLd(e, `${pageUrl}#event-${e.id}`))
  }
  const events = page.upcoming_events.length === 0
    ? '<p>No upcoming events.</p>'
    : `<ol class="events">${page.upcoming_events.map(eventItem).join('')}</ol>`
  const subspaces = page.subspaces.length === 0
    ? ''
    : '<section aria-labelledby="subspaces"><h2 id="subspaces">Spaces within this space</h2><ul>' +
      page.subspaces.map(s => `<li><a href="${htmlPath(s.id)}">${escapeHtml(s.title)}</a></li>`).join('') +
      '</ul></section>'
  const description = space.description.trim() === ''
    ? ''
    : `<p class="desc">${escapeHtml(space.description)}</p>`
  const hostedBy = page.owner !== undefined ? `<p class="meta">Hosted by ${escapeHtml(page.owner.name)}</p>` : ''
  return '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${title}</title>` +
    (description !== '' ? `<meta name="description" content="${escapeHtml(space.description.slice(0, 300))}">` : '') +
    `<link rel="alternate" type="text/calendar" href="${calendar}" title="Events of ${title} (iCalendar)">` +
    `<link rel="alternate" type="application/json" href="${escapeHtml(selfPath)}">` +
    `<style>${STYLE}</style>` +
    `<script type="application/ld+json">${jsonForScript(ld)}</script>` +
    '</head><body>' +
    `<header><p class="kicker">Public space</p><h1>${title}</h1>${description}${hostedBy}</header>` +
    '<main><section aria-labelledby="upcoming"><h2 id="upcoming">Upcoming events</h2>' +
    `<p><a class="cal" href="${calendar}">Add to calendar: subscribe to the events of ${title}</a></p>` +
    events + '</section>' + subspaces + '</main>' +
    '<footer><nav aria-label="Calendar feeds"><ul>' +
    `<li><a href="${calendar}">Calendar feed of ${title} (iCalendar file)</a></li>` +
    `<li><a href="${escapeHtml(webcal)}">Subscribe to the events of ${title} in a calendar app (webcal)</a></li>` +
    '</ul></nav></footer></body></html>\n'
}

/**
 * Whether an `Accept` header prefers HTML to JSON: the quality of `text/html` (by its most specific range) above
 * that of `application/json`. `*\/*`, no header and equal qualities keep JSON, the API's default.
 */
export function prefersHtml (accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return false
  const ranges = accept.split(',').map(part => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';')
    const q = params.map(p => p.trim()).find(p => p.startsWith('q='))
    const quality = q === undefined ? 1 : Number(q.slice(2))
    return { type: type.trim(), q: Number.isFinite(quality) ? quality : 0 }
  })
  const qualityOf = (type: string): number => {
    const [major] = type.split('/')
    for (const candidate of [type, `${major ?? ''}/*`, '*/*']) {
      const hit = ranges.find(r => r.type === candidate)
      if (hit !== undefined) return hit.q
    }
    return 0
  }
  return qualityOf('text/html') > qualityOf('application/json')
}
