/**
 * The public page of an event (docs/guests.md, "The public page"), no credential needed:
 *
 * - `GET /api/v1/public/events/{id}`: the page as JSON (`EventPage`), or as HTML when `Accept` prefers it
 *   (`Vary: Accept, Accept-Language`);
 * - `GET /api/v1/public/events/{id}/page.html`: always the HTML, the address to share and to embed;
 * - `POST /api/v1/public/events/{id}/page.html`: the page's registration form, posted without JavaScript
 *   (`application/x-www-form-urlencoded`), answered with the page again.
 *
 * The event is found as the public registration finds it (by id on the system login, then read in its tenant), and
 * only while it is published, public and not deleted: any other id is one 404. The page shows what its guests may
 * know and nothing of the people who registered but the seats left. The form asks the questions of the event's
 * registration form in force and takes a registration exactly as the JSON route does (guests.registration.ts): the
 * same limits, checks, answers' validation, honeypot and answer; each problem is shown next to its field or question,
 * in the guest's language, with the status the JSON route would answer (400, 409, 429).
 *
 * Caching as the public space page: a weak ETag of what the answer shows, 304 on `If-None-Match`,
 * `Cache-Control: public, max-age=60, stale-while-revalidate=300`. The answer to a form post is never kept.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withSystem, withTenant } from '../../platform/db/tenant.ts'
import { etagMatches } from '../../platform/http/conditional.ts'
import { ApiError, ErrorModel, fieldError } from '../../platform/http/errors.ts'
import { withHtmlAnswer } from '../../platform/http/html-answer.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { message, negotiateLocale, type Locale } from '../../platform/i18n/i18n.ts'
import { answersFor, formOf, registerGuest, tenantLocale, type Question } from '../attendees/index.ts'
import { lockById } from '../events/index.ts'
import {
  eventPagePath, frameAncestors, ownerProfile, prefersHtml, publicName, publicSpacesOfEvent, spacePagePath
} from '../spaces/index.ts'
import { guestProblem, takeOrRefuse, type GuestLimits } from './guests.access.ts'
import {
  ANSWER_FIELD, ANSWER_FIELDS_MAX, answersOfPost, EventPage, EventPageForm, EventPageParams,
  EventPageQuery, eventJsonPath, htmlEtag, htmlHeaders, jsonEtag, renderEventPage, type EventPageData, type FormOutcome
} from './guests.page.ts'
import { publicEventRow } from './guests.page.repository.ts'
import {
  checkFields, checkOpen, closedProblem, filledHoneypot, registrationWindow, splitName
} from './guests.registration.ts'
import { publicEventTenant } from './guests.repository.ts'

const TAGS = ['Guests']

/** What the anonymous page's Cache-Control allows any cache: seconds fresh (five times that stale, revalidating). */
const MAX_AGE = 60
const CACHE_CONTROL = `public, max-age=${MAX_AGE}, stale-while-revalidate=${MAX_AGE * 5}`

/**
 * The largest form a post may carry: the name, the address and the answers to a form of a few questions,
 * percent-encoded (a body over it, such as long text answers of thousands of characters, is refused with a 413).
 */
export const FORM_BODY_LIMIT = 16 * 1024

/** The fields of the page's form besides its answers (`answers.<question id>`). */
const FORM_FIELDS = new Set(['name', 'email', 'website', 'locale'])

/** The statuses a form post answers with the page again (and its problem): the JSON route's refusals. */
const FORM_PROBLEMS = new Set([400, 409, 429])

/** A page: its data, its framing, and the languages it may answer in. */
interface PageEntry {
  page: EventPageData
  /** the CSP `frame-ancestors` source list, from the allow lists of the event's public spaces */
  frameAncestors: string
  /** the questions of the registration form in force (`formOf`), which the form asks */
  questions: readonly Question[]
  /** the tenant's language of guest texts (the fallback after `?lang=` and Accept-Language) */
  tenantLocale: Locale
}

const HTML_EXAMPLE = '<!doctype html>\n<html lang="en"><head>…</head><body><header><p class="kicker">Public event' +
  '</p><h1>Summer choir concert</h1></header><main>…<form method="post" …>…</form></main></body></html>\n'

/**
 * The page as HTML, as the OpenAPI document shows it: a string (Fastify sends a string answer of a type other than
 * JSON as it is). Named, so that the JSON page's operation refers to it for `Accept: text/html`.
 */
const PageHtml = Type.Unsafe<string>({
  $id: 'EventPageHtml',
  type: 'string',
  description: 'One HTML document: the event, its registration form, OpenGraph and Twitter tags, schema.org JSON-LD',
  examples: [HTML_EXAMPLE]
})

const IfNoneMatch = Type.Object({
  'if-none-match': Type.Optional(Type.String({ maxLength: 1000, description: 'ETag held: 304 if current' }))
})

/**
 * A form body, in objects without a prototype (a `__proto__` field is a field): the first value of each field of the
 * page, and in `answers` every value of each answer field `answers.<question id>` by question id (at most
 * ANSWER_FIELDS_MAX of them: a 400 beyond). Any other field is none of the page's and is ignored.
 */
function parseForm (text: string): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>
  const answers = Object.create(null) as Record<string, string[]>
  let answerFields = 0
  for (const [key, value] of new URLSearchParams(text)) {
    if (FORM_FIELDS.has(key)) {
      if (!(key in out)) out[key] = value
      continue
    }
    const id = ANSWER_FIELD.exec(key)?.[1]
    if (id === undefined) continue
    const values = answers[id]
    if (values !== undefined) {
      values.push(value)
      continue
    }
    if (++answerFields > ANSWER_FIELDS_MAX) {
      throw new ApiError(400, 'validation failed', [fieldError('body', `at most ${ANSWER_FIELDS_MAX} answer fields`)])
    }
    answers[id] = [value]
  }
  if (answerFields > 0) out.answers = answers
  return out
}

export async function guestPageRoutes (parent: App, ctx: AppContext, limits: GuestLimits): Promise<void> {
  const { db, config } = ctx

  /** The page of a public event, read now; 404 (in `locale`) for any other id. */
  async function pageFor (id: number, locale: Locale): Promise<PageEntry> {
    const tenantId = await withSystem(db, trx => publicEventTenant(trx, id))
    const entry = tenantId === undefined
      ? undefined
      : await withTenant(db, { tenantId }, async (trx): Promise<PageEntry | undefined> => {
        const event = await publicEventRow(trx, tenantId, id)
        if (event === undefined) return undefined
        const window = await registrationWindow(trx, event)
        const spaces = await publicSpacesOfEvent(trx, tenantId, id)
        const profile = await ownerProfile(trx, tenantId, event.creator_id)
        const organizer = profile === undefined ? '' : publicName(profile, '')
        const page: EventPageData = {
          id: event.id,
          title: event.title,
          description: event.description,
          start_dt: event.start_dt,
          end_dt: event.end_dt,
          timezone: event.timezone,
          address: event.address,
          latitude: event.latitude,
          longitude: event.longitude,
          cancelled: event.cancelled_at !== null,
          organizer: organizer === '' ? null : { name: organizer },
          spaces: spaces.map(s => ({ id: s.id, title: s.title, page_url: `${config.baseUrl}${spacePagePath(s.id)}` })),
          registration: {
            open: window.reason === null,
            reason: window.reason,
            opens_at: window.opensAt,
            closes_at: window.closesAt,
            seats_left: window.seatsLeft,
            waitlist: window.waitlist,
            double_opt_in: window.settings?.double_opt_in ?? true
          },
          page_url: `${config.baseUrl}${eventPagePath(event.id)}`,
          register_url: `${config.baseUrl}${eventJsonPath(event.id)}/registrations`
        }
        return {
          page,
          frameAncestors: frameAncestors(spaces.flatMap(s => s.embed_origins)),
          questions: (await formOf(trx, event))?.questions ?? [],
          tenantLocale: await tenantLocale(trx, tenantId)
        }
      })
    if (entry === undefined) throw guestProblem(404, locale, 'error.event_not_found', 'path.id')
    return entry
  }

  /** The language of a page: `?lang=`, else Accept-Language, else the tenant's. */
  const localeOf = (request: { query: { lang?: Locale }, headers: FastifyRequest['headers'] }, fallback: Locale) =>
    request.query.lang ?? negotiateLocale(request.headers['accept-language'], fallback)

  /** The page as HTML: read (with its ETag and caching) or the answer to a form post (never kept). */
  function sendHtml (request: FastifyRequest, reply: FastifyReply, entry: PageEntry, locale: Locale,
    form?: { status: number, outcome: FormOutcome }) {
    const { page, questions } = entry
    const closedText = page.registration.reason === null
      ? undefined
      : closedProblem(page.registration.reason, {
        opensAt: page.registration.opens_at === null ? null : new Date(page.registration.opens_at)
      }, page, locale).detail
    void reply.headers(htmlHeaders(entry.frameAncestors))
    if (form !== undefined) {
      void reply.code(form.status).header('cache-control', 'no-store')
      return reply.send(renderEventPage(page, { locale, questions, closedText, form: form.outcome }))
    }
    const etag = htmlEtag(page, questions, locale, entry.frameAncestors)
    void reply.header('etag', etag).header('cache-control', CACHE_CONTROL)
    if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send()
    return reply.send(renderEventPage(page, { locale, questions, closedText }))
  }

  // Its own scope: the form parser (and its small body limit) serves these routes alone; every other route keeps
  // JSON and BODY_LIMIT_BYTES. Only the form is read here: a client posting JSON uses the registration route.
  await parent.register(async (instance) => {
    const app = instance.withTypeProvider<TypeBoxTypeProvider>()
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_request, body, done) => {
        try {
          done(null, parseForm(body as string))
        } catch (err) {
          done(err as Error)
        }
      })

    app.get('/api/v1/public/events/:id', {
      schema: {
        description: 'A published public event as anyone may see it, with its registration state.',
        operationId: 'get-public-event',
        summary: 'Public page of a published public event, with its registration (no credential needed)',
        tags: TAGS,
        params: EventPageParams,
        querystring: EventPageQuery,
        headers: IfNoneMatch,
        response: { 200: EventPage, 304: NoContent }
      },
      config: {
        auth: 'none',
        swaggerTransform: ({ schema, url }) => ({
          url,
          schema: withHtmlAnswer(schema, {
            description: 'The page; the same page as HTML when `Accept` prefers `text/html` to JSON ' +
              '(`Vary: Accept, Accept-Language`)',
            headers: { ETag: { type: 'string', description: 'The page\'s version: send it in `If-None-Match`' } },
            json: EventPage,
            html: 'EventPageHtml'
          })
        })
      }
    }, async (request, reply) => {
      const asked = localeOf(request, config.defaultLocale)
      const entry = await pageFor(request.params.id, asked)
      void reply.header('vary', 'Accept, Accept-Language, accept-encoding')
      if (prefersHtml(request.headers.accept)) {
        return sendHtml(request, reply, entry, localeOf(request, entry.tenantLocale))
      }
      const etag = jsonEtag(entry.page)
      void reply.header('etag', etag).header('cache-control', CACHE_CONTROL)
      return etagMatches(request.headers['if-none-match'], etag) ? reply.code(304).send(null) : entry.page
    })

    app.get('/api/v1/public/events/:id/page.html', {
      schema: {
        description: 'The public page of an event rendered as HTML with its registration form; embeddable by the ' +
          'sites its spaces allow.',
        operationId: 'get-public-event-html',
        summary: 'The public event page as HTML, with its registration form (no credential needed; embeddable)',
        tags: TAGS,
        params: EventPageParams,
        querystring: EventPageQuery,
        headers: IfNoneMatch,
        produces: ['text/html'],
        response: {
          200: Type.Unsafe<string>({ ...PageHtml, headers: { ETag: { type: 'string' } } }),
          304: NoContent
        }
      },
      config: { auth: 'none' }
    }, async (request, reply) => {
      const entry = await pageFor(request.params.id, localeOf(request, config.defaultLocale))
      void reply.header('vary', 'Accept-Language, accept-encoding')
      return sendHtml(request, reply, entry, localeOf(request, entry.tenantLocale))
    })

    app.post('/api/v1/public/events/:id/page.html', {
      schema: {
        operationId: 'post-public-event-form',
        summary: 'Register from the public event page\'s form (no JavaScript): answered with the page again',
        description: 'The form of `get-public-event-html`, posted by a browser: the name, the address and an ' +
          '`answers.<question id>` field per question of the registration form. It registers exactly as ' +
          '`register-for-public-event` (the same limits, checks, answers and mails) and answers with the page: ' +
          '200 with the success message, or each problem next to its field or question, in the guest\'s language, ' +
          'with the status the registration route answers (400, 409, 429). A field that is none of the form\'s is ' +
          `ignored. A request that is no form of the page (more than ${ANSWER_FIELDS_MAX} answer fields, a body ` +
          'over 16 KiB, another content type) and an event that is not public get a problem+json.',
        tags: TAGS,
        params: EventPageParams,
        querystring: EventPageQuery,
        consumes: ['application/x-www-form-urlencoded'],
        body: EventPageForm,
        produces: ['text/html'],
        response: {
          200: Type.Unsafe<string>({ type: 'string', description: 'The page with the success message (HTML)' }),
          400: {
            ...ErrorModel,
            description: 'Fields or answers to correct: the page again (HTML), each message next to its field'
          },
          409: {
            ...ErrorModel,
            description: 'Registration closed, not open yet, full, cancelled or over: the page again (HTML), ' +
              'with the message'
          }
        }
      },
      bodyLimit: FORM_BODY_LIMIT,
      config: { auth: 'none', auditActor: 'guest' }
    }, async (request, reply) => {
      const b = request.body
      const id = request.params.id
      const asked = b.locale ?? localeOf(request, config.defaultLocale)
      // bounded before any work, as the registration route: a refusal is shown on the page like any other
      let limited: ApiError | undefined
      try {
        await takeOrRefuse(limits.address, `ip:${request.ip}`, asked)
        await takeOrRefuse(limits.event, `event:${id}`, asked)
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 429) throw err
        limited = err
      }
      const tenantId = await withSystem(db, trx => publicEventTenant(trx, id))
      if (tenantId === undefined) throw guestProblem(404, asked, 'error.event_not_found', 'path.id')
      const locale = b.locale ??
        localeOf(request, await withTenant(db, { tenantId }, trx => tenantLocale(trx, tenantId)))
      const posted = b.answers ?? {}
      const values = { name: b.name ?? '', email: b.email ?? '', answers: posted }
      let outcome: FormOutcome = { accepted: true }
      let status = 200
      try {
        if (limited !== undefined) {
          throw new ApiError(429, message(locale, 'error.too_many_requests'), [], limited.headers)
        }
        // a name or an address to correct is shown with the answers to correct, all at once
        let fields: ReturnType<typeof checkFields> | ApiError
        try {
          fields = checkFields(values, locale)
        } catch (err) {
          if (!(err instanceof ApiError) || err.status !== 400) throw err
          fields = err
        }
        const toCorrect = fields instanceof ApiError ? fields : undefined
        // the honeypot: answered as any registration, nothing stored, nothing mailed
        if (toCorrect !== undefined || !filledHoneypot(b.website)) {
          await withTenant(db, { tenantId }, async trx => {
            const event = await lockById(trx, tenantId, id)
            // a field to correct comes first, as on the JSON route (then the registration closed)
            const settings = await checkOpen(trx, event, locale).catch((err: unknown) => {
              throw toCorrect !== undefined && err instanceof ApiError && err.status === 409 ? toCorrect : err
            })
            const form = await formOf(trx, event)
            const answers = await answersFor(trx, event, answersOfPost(form?.questions ?? [], posted), locale)
              .catch((err: unknown) => {
                if (!(err instanceof ApiError) || err.status !== 400 || toCorrect === undefined) throw err
                throw new ApiError(400, toCorrect.detail, [...toCorrect.errors, ...err.errors])
              })
            if (fields instanceof ApiError) throw fields
            await registerGuest(trx, event, { ...splitName(fields.name), email: fields.email, locale }, {
              doubleOptIn: settings.double_opt_in,
              limitPerEmail: settings.registration_limit_per_email
            }, answers)
          })
        }
      } catch (err) {
        if (!(err instanceof ApiError) || !FORM_PROBLEMS.has(err.status)) throw err
        status = err.status
        void reply.headers(err.headers)
        const problems = err.errors.length > 0
          ? err.errors.map(e => ({ location: e.location ?? '', message: e.message ?? err.detail }))
          : [{ location: '', message: err.detail }]
        outcome = { problems, values }
      }
      // read after the registration: the seats left may have changed
      const entry = await pageFor(id, locale)
      return sendHtml(request, reply, entry, locale, { status, outcome })
    })
  })
}
