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
 * - asks the questions of the event's registration form in force (`formOf`), one field per question by its type,
 *   named `answers.<question id>`;
 * - answers a form post with the page again: the success message (role=status), or each problem next to its field
 *   or question (`aria-invalid`, `aria-describedby`, the first focused) with what the guest typed and chose, or above
 *   the form when it concerns no field.
 */
import crypto from 'node:crypto'
import { Type, type Static } from '@sinclair/typebox'
import { IntId, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { formatWhen, LOCALES, message, type Locale } from '../../platform/i18n/i18n.ts'
import { escapeHtml } from '../../platform/notifications/templates.ts'
import type { Question } from '../attendees/index.ts'
import { jsonForScript, spacePagePath } from '../spaces/index.ts'
import { CLOSED_REASONS } from './guests.registration.ts'
import { EMAIL_MAX, NAME_MAX } from './guests.schemas.ts'

/** The path of an event's JSON page; its HTML page is `eventPagePath` (the spaces module links to it). */
export const eventJsonPath = (id: number): string => `/api/v1/public/events/${id}`

/** The currency of the free offer in the JSON-LD (schema.org asks for one; a price of 0 reads the same in any). */
const PRICE_CURRENCY = 'EUR'

/** Bumped when the markup changes, so that the HTML ETag of an unchanged page changes with it. */
const RENDER_VERSION = 2

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

/** A question id (attendees.forms.ts). */
const QUESTION_ID = '[a-z0-9][a-z0-9_-]{0,39}'
/** The name of the field of a question's answer: `answers.<question id>`. */
export const ANSWER_FIELD = new RegExp(`^answers\\.(${QUESTION_ID})$`)
/** The most answer fields (distinct names) a post may carry: a form asks at most 50 questions. */
export const ANSWER_FIELDS_MAX = 60
/** The most values of one answer field: a multiple choice offers at most 50 options. */
const ANSWER_VALUES_MAX = 50
/** The longest value of an answer field: the longest text answer (a long text's 5 000 characters). */
const ANSWER_VALUE_MAX = 5000

/**
 * The fields of the page's form (`application/x-www-form-urlencoded`); a browser sends all, maybe empty. The answer
 * fields (`answers.<question id>`) are read into `answers`, each the list of its values as posted (a multiple choice
 * repeats its name, one value per option ticked).
 */
export const EventPageForm = Type.Object({
  name: FormText(`The guest's name (1 to ${NAME_MAX} characters)`),
  email: FormText('The address the confirmation is mailed to'),
  website: FormText('The honeypot: a field hidden from people; a registration that fills it is dropped'),
  locale: Type.Optional(StringEnum(LOCALES, { description: 'The language of the page the form was on' })),
  answers: Type.Optional(Type.Record(
    Type.String({ pattern: `^${QUESTION_ID}$` }),
    Type.Array(Type.String({ maxLength: ANSWER_VALUE_MAX }), { maxItems: ANSWER_VALUES_MAX }),
    {
      additionalProperties: false,
      maxProperties: ANSWER_FIELDS_MAX,
      description: 'The answers to the questions of the registration form, posted as fields named ' +
        '`answers.<question id>` (a text, a number, a date, an option id, `on` for a ticked checkbox; a multiple ' +
        `choice repeats the field, one per option ticked), at most ${ANSWER_FIELDS_MAX}: here by question id, the ` +
        'values of each as posted'
    }
  ))
}, {
  additionalProperties: false,
  examples: [{ name: 'Ann Lee', email: 'ann@example.org', website: '', locale: 'en', answers: { diet: ['veg'] } }]
})

/** A record's own value at `key` (a question id such as `constructor` is no inherited property). */
const own = <T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined =>
  record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined

/**
 * The answers object of a registration (as the JSON route's `answers`) from the answer fields posted, read by the
 * type of each question of the form in force: a multiple choice the list of its values, a checkbox `on` → true and
 * absent → false, any other question its value (absent: left out). A field of a question the form does not have is
 * passed on as sent, for the validation to refuse it as the JSON route does.
 */
export function answersOfPost (
  questions: readonly Question[],
  posted: Readonly<Record<string, readonly string[]>>
): Record<string, unknown> {
  // without a prototype: a question id such as `constructor` never reads an inherited value
  const answers = Object.create(null) as Record<string, unknown>
  const known = new Set<string>()
  for (const q of questions) {
    known.add(q.id)
    const values = own(posted, q.id)
    if (q.type === 'checkbox') answers[q.id] = values?.[0] === 'on'
    else if (values !== undefined && values.length > 0) {
      answers[q.id] = q.type === 'multiple_choice' ? [...values] : values[0]
    }
  }
  for (const [id, values] of Object.entries(posted)) {
    if (!known.has(id)) answers[id] = values.length === 1 ? values[0] : [...values]
  }
  return answers
}

// ---------------------------------------------------------------- headers and tags

const STYLE = [
  ':root{color-scheme:light;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;',
  'background:#fff}',
  'body{margin:0 auto;max-width:42rem;padding:1rem}',
  'a{color:#0b57d0}a:focus-visible,input:focus-visible,textarea:focus-visible,button:focus-visible{',
  'outline:3px solid #0b57d0;outline-offset:2px}',
  'h1{font-size:1.75rem;line-height:1.2;margin:.25rem 0 .5rem}h2{font-size:1.25rem;margin:1.5rem 0 .5rem}',
  '.kicker,.note{color:#4a4a4a;margin:0 0 .75rem}.kicker{margin:0}.desc{white-space:pre-line}',
  '.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:1rem 0}',
  '.facts dt{font-weight:600}.facts dd{margin:0}.facts ul{list-style:none;margin:0;padding:0}',
  '.cancelled{color:#a00000;font-weight:700}.cancelled-title{text-decoration:line-through}',
  '.field{margin:0 0 1rem}label{display:block;font-weight:600;margin-bottom:.25rem}',
  'input,textarea{box-sizing:border-box;width:100%;max-width:28rem;padding:.5rem;font:inherit;',
  'border:1px solid #6b6b6b;border-radius:.25rem}input[aria-invalid=true],textarea[aria-invalid=true]{',
  'border:2px solid #a00000}',
  'fieldset{border:0;padding:0;min-width:0}legend{font-weight:600;padding:0;margin-bottom:.25rem}',
  '.req{font-weight:400;color:#4a4a4a}.help{color:#4a4a4a;margin:0 0 .25rem}',
  '.opt{display:flex;align-items:flex-start;gap:.5rem;margin:.25rem 0}.opt label{font-weight:400;margin:0}',
  '.opt input{width:auto;margin:.3rem 0 0;padding:0;flex:none}',
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

/** The HTML page's ETag: the data, the questions asked, the language, the framing allowed and the markup's version. */
export const htmlEtag = (page: EventPageData, questions: readonly Question[], locale: Locale,
  frameAncestors: string): string =>
  `W/"${hash(JSON.stringify([page, questions, locale, frameAncestors, RENDER_VERSION]))}.h"`

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

/** A problem of a form post: at a field (`body.name`, `body.email`, `body.answers.<id>`), or of the whole form. */
export interface FormProblem { location: string, message: string }

/** What a form post left to show: the registration taken, or its problems (at fields, or of the whole form). */
export interface FormOutcome {
  accepted?: boolean
  /** each problem once, in the order the checks found them */
  problems?: readonly FormProblem[]
  /** what the guest typed and chose, shown again after a problem: the answers as posted, by question id */
  values?: { name?: string, email?: string, answers?: Readonly<Record<string, readonly string[]>> }
}

/** How to render a page (its absolute URLs, canonical and OpenGraph and JSON-LD, are the page's own, from BASE_URL). */
export interface RenderOptions {
  locale: Locale
  /** the questions of the event's registration form in force, in its order (none: the name and address only) */
  questions?: readonly Question[]
  /** the text of why the event takes no registration (`closedProblem`'s), when it takes none */
  closedText?: string
  form?: FormOutcome
}

const FIELDS = [
  { name: 'name', key: 'page.form.name', type: 'text', autocomplete: 'name', max: NAME_MAX },
  { name: 'email', key: 'page.form.email', type: 'email', autocomplete: 'email', max: EMAIL_MAX }
] as const

/** The longest text answer when the question sets none (attendees.forms.ts, docs/guests.md "Questions"). */
const TEXT_MAX = { short_text: 200, long_text: 5000 } as const

/** The location of the problems of a question's answer. */
const answerLocation = (q: Question): string => `body.answers.${q.id}`

/** An attribute when `value` is set: ` name="value"`, escaped. */
const attr = (name: string, value: string | number | undefined): string =>
  value === undefined ? '' : ` ${name}="${escapeHtml(String(value))}"`

/** What a field shows of its problem: its message, whether it takes the focus. */
interface FieldState { error?: string, focus: boolean }

/**
 * One question as its field: a text input, a text area, a group of radios or checkboxes in a fieldset, one checkbox
 * (a consent: labelled with its text, the question's label the group's legend), a number, a date, a phone number or
 * an address. Its help describes it, and so does its problem (`aria-invalid`, `aria-describedby`).
 */
function questionHtml (q: Question, i: number, locale: Locale, posted: readonly string[] | undefined,
  state: FieldState): string {
  const id = `reg-q${i}`
  const name = escapeHtml(`answers.${q.id}`)
  const required = q.required === true
  const mark = required ? ` <span class="req">${escapeHtml(message(locale, 'page.form.required'))}</span>` : ''
  const hasHelp = q.help !== undefined && q.help.trim() !== ''
  const help = hasHelp ? `<p id="${id}-help" class="help">${escapeHtml(q.help ?? '')}</p>` : ''
  const error = state.error !== undefined ? `<p id="${id}-error" class="error">${escapeHtml(state.error)}</p>` : ''
  const describedIds = [...(hasHelp ? [`${id}-help`] : []), ...(state.error !== undefined ? [`${id}-error`] : [])]
  const describedBy = describedIds.length > 0 ? ` aria-describedby="${describedIds.join(' ')}"` : ''
  const invalid = state.error !== undefined ? ' aria-invalid="true"' : ''
  const focus = state.focus ? ' autofocus' : ''
  const value = posted?.[0] ?? ''
  const label = `<label for="${id}">${escapeHtml(q.label)}${mark}</label>`
  /** One field: the label, the help, the control, the problem. */
  const single = (control: string) => `<div class="field">${label}${help}${control}${error}</div>`
  /** A text input of `type` and its attributes: the value typed, the constraints, the problem. */
  const input = (type: string, more: string) =>
    single(`<input id="${id}" name="${name}" type="${type}"${more}${required ? ' required' : ''}` +
      `${attr('value', value)}${invalid}${describedBy}${focus}>`)
  switch (q.type) {
    case 'short_text':
      return input('text', attr('maxlength', q.max_length ?? TEXT_MAX.short_text) + attr('minlength', q.min_length))
    case 'long_text':
      // the newline after the tag is the parser's to drop: a value that starts with one keeps it
      return single(`<textarea id="${id}" name="${name}" rows="4"` +
        attr('maxlength', q.max_length ?? TEXT_MAX.long_text) + attr('minlength', q.min_length) +
        `${required ? ' required' : ''}${invalid}${describedBy}${focus}>\n${escapeHtml(value)}</textarea>`)
    case 'number':
      return input('number', attr('min', q.min) + attr('max', q.max) + ' step="any"')
    case 'date':
      return input('date', attr('min', q.min_date) + attr('max', q.max_date))
    case 'phone':
      return input('tel', ' autocomplete="tel"')
    case 'email':
      return input('email', ' spellcheck="false"')
    case 'checkbox': {
      const box = `<div class="opt"><input id="${id}" name="${name}" type="checkbox" value="on"` +
        `${value === 'on' ? ' checked' : ''}${required ? ' required' : ''}${invalid}${describedBy}${focus}>` +
        `<label for="${id}">${escapeHtml(q.consent_text ?? q.label)}${q.consent_text === undefined ? mark : ''}` +
        '</label></div>'
      return q.consent_text === undefined
        ? `<div class="field">${box}${help}${error}</div>`
        : `<fieldset class="field"><legend>${escapeHtml(q.label)}${mark}</legend>${help}${box}${error}</fieldset>`
    }
    case 'single_choice':
    case 'multiple_choice': {
      const type = q.type === 'single_choice' ? 'radio' : 'checkbox'
      // a radio group that is required needs one chosen; no attribute asks for "at least one" of checkboxes
      const requiredAttr = required && type === 'radio' ? ' required' : ''
      const options = (q.options ?? []).map((o, j) =>
        `<div class="opt"><input id="${id}-o${j}" name="${name}" type="${type}"${attr('value', o.id)}` +
        `${posted?.includes(o.id) === true ? ' checked' : ''}${requiredAttr}${invalid}${j === 0 ? focus : ''}>` +
        `<label for="${id}-o${j}">${escapeHtml(o.label)}</label></div>`).join('')
      return `<fieldset class="field"${describedBy}><legend>${escapeHtml(q.label)}${mark}</legend>` +
        `${help}${error}${options}</fieldset>`
    }
  }
}

function formHtml (page: EventPageData, o: RenderOptions): string {
  const { locale, form = {} } = o
  const questions = o.questions ?? []
  const errorAt = (location: string) => form.problems?.find(p => p.location === location)?.message
  // the first field with a problem, in the order of the page, takes the focus
  const locations = [...FIELDS.map(f => `body.${f.name}`), ...questions.map(answerLocation)]
  const focused = locations.find(l => errorAt(l) !== undefined)
  const fields = FIELDS.map(f => {
    const id = `reg-${f.name}`
    const error = errorAt(`body.${f.name}`)
    const value = form.values?.[f.name] ?? ''
    return '<div class="field">' +
      `<label for="${id}">${escapeHtml(message(locale, f.key))} ` +
      `<span class="req">${escapeHtml(message(locale, 'page.form.required'))}</span></label>` +
      `<input id="${id}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}" required ` +
      `maxlength="${f.max}"${f.type === 'email' ? ' spellcheck="false"' : ''} value="${escapeHtml(value)}"` +
      (error !== undefined ? ` aria-invalid="true" aria-describedby="${id}-error"` : '') +
      (focused === `body.${f.name}` ? ' autofocus' : '') + '>' +
      (error !== undefined ? `<p id="${id}-error" class="error">${escapeHtml(error)}</p>` : '') +
      '</div>'
  }).join('')
  const asked = questions.map((q, i) => questionHtml(q, i, locale, own(form.values?.answers, q.id), {
    error: errorAt(answerLocation(q)),
    focus: focused === answerLocation(q)
  })).join('')
  // the honeypot: present for a program that fills every field, hidden from people and from assistive technology
  const honeypot = '<div class="hp" aria-hidden="true">' +
    `<label for="reg-website">${escapeHtml(message(locale, 'page.form.website'))}</label>` +
    '<input id="reg-website" name="website" type="text" tabindex="-1" autocomplete="off" value=""></div>'
  return `<form method="post" action="/api/v1/public/events/${page.id}/page.html" accept-charset="utf-8">` +
    `<input type="hidden" name="locale" value="${locale}">` +
    fields + asked + honeypot +
    `<button type="submit">${escapeHtml(message(locale, 'page.form.submit'))}</button></form>`
}

function registrationHtml (page: EventPageData, o: RenderOptions): string {
  const { locale, form } = o
  const r = page.registration
  if (form?.accepted === true) {
    return `<p class="success" role="status">${escapeHtml(message(locale, 'registration.accepted'))}</p>`
  }
  // the problems that concern no field of the page (the registration closed, too many attempts, an answer to a
  // question the form no longer has) are read above it, each message once
  const atFields = new Set([...FIELDS.map(f => `body.${f.name}`), ...(o.questions ?? []).map(answerLocation)])
  const general = [...new Set((form?.problems ?? []).filter(p => !atFields.has(p.location)).map(p => p.message))]
  const alert = general.map(m => `<p class="problem" role="alert">${escapeHtml(m)}</p>`).join('')
  // after a refusal of the whole form, its message is the one to read (the page's own would repeat it)
  if (r.reason !== null) return alert !== '' ? alert : `<p class="closed">${escapeHtml(o.closedText ?? '')}</p>`
  const notes = [
    ...(r.seats_left === 0 && r.waitlist ? [message(locale, 'page.waitlist')] : []),
    ...(r.double_opt_in ? [message(locale, 'page.form.optin')] : [])
  ].map(n => `<p class="note">${escapeHtml(n)}</p>`).join('')
  return alert + notes + formHtml(page, o)
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
