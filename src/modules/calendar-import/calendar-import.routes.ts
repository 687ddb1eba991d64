/**
 * The calendar import: `POST /api/v1/spaces/{id}/calendar-import` takes an iCalendar file (the body, or a URL
 * fetched once through the platform's outbound client) and makes its VEVENTs events and series of the space, or
 * updates what an earlier import of the same UIDs made (docs/calendar-import.md). Owns no table of its own: it
 * writes through the events and series modules and keeps the UIDs in their `ical_uid` columns (migration 0041).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { defineModule } from '../../platform/app-context.ts'
import { ApiError, ErrorModel, fieldError, invalidField } from '../../platform/http/errors.ts'
import { allowListOf, fetchBody, OutboundError, type AllowList } from '../../platform/http/outbound.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import { SpaceParams } from '../spaces/index.ts'
import { decodeCalendar, parseCalendar } from './calendar-import.parse.ts'
import {
  CalendarImportQuery, CalendarImportReport, CalendarText, CalendarUrlBody, ICS_MAX_BYTES, IMPORT_COST
} from './calendar-import.schemas.ts'
import { checkSpace, importCalendar } from './calendar-import.service.ts'

const operation = operationsTagged('Calendar import')

/** The 413 of a calendar over ICS_MAX_BYTES (Fastify's own error names no limit). */
const tooLarge = (at: string): ApiError =>
  new ApiError(413, 'the calendar is larger than 1 MiB; nothing was imported', [
    fieldError(at, `expected at most ${ICS_MAX_BYTES} bytes (1 MiB)`)
  ])

/** 415 unless the charset of a `text/calendar` content type is absent or UTF-8. */
function checkCharset (contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1]?.toLowerCase()
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(415, 'the calendar must be UTF-8', [
      fieldError('header.content-type', `expected text/calendar with charset utf-8 or none, got charset ${charset}`)
    ])
  }
}

/** The text at `url`, fetched once under the outbound rules (400 `body.url` refused, 413 too large, 502 failed). */
async function fetchCalendar (url: string, allow: AllowList): Promise<string> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidField('body.url', 'expected an absolute URL', url)
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalidField('body.url', 'expected a URL without credentials', url)
  }
  try {
    const { body } = await fetchBody(url, allow, {
      maxBytes: ICS_MAX_BYTES,
      accept: 'text/calendar, */*;q=0.5',
      label: 'calendar'
    })
    return decodeCalendar(body)
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err
    if (err.refused === true) throw invalidField('body.url', err.message, url)
    if (err.tooLarge === true) throw tooLarge('body.url')
    throw new ApiError(502, 'the calendar could not be fetched; nothing was imported', [
      fieldError('body.url', err.message, url)
    ])
  }
}

export const calendarImportModule = defineModule(async (app, ctx) => {
  const { db, config } = ctx
  const allow = allowListOf(config.automationWebhookAllow)

  // Its own scope: the text/calendar parser and its 1 MiB limit, and JSON (a URL) beside it; no other body type
  await app.register(async (instance) => {
    const scope = instance.withTypeProvider<TypeBoxTypeProvider>()
    scope.removeAllContentTypeParsers()
    // the bytes are checked (UTF-8, no NUL) before the text is handed on
    scope.addContentTypeParser('text/calendar', { parseAs: 'buffer', bodyLimit: ICS_MAX_BYTES },
      (request, raw, done) => {
        try {
          checkCharset(request.headers['content-type'])
          done(null, decodeCalendar(raw as Buffer))
        } catch (err) {
          done(err as Error, undefined)
        }
      })
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'))
    scope.setErrorHandler(err => {
      // Fastify's own error names no limit; everything else goes to the application's handler as it is
      throw (err as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? tooLarge('body') : err
    })

    scope.post('/api/v1/spaces/:id/calendar-import', operation('import-space-calendar',
      'Import an iCalendar file (the body, or a URL to fetch) as events and series of the space, all or nothing; a ' +
      'second import of the same UIDs updates them (costs 20 rate-limit tokens)', {
        description:
          'Each VEVENT becomes a draft event linked to the space (as POST /events and POST /events/{id}/spaces), one ' +
          'with an RRULE a series (as POST /events/with-series) whose RECURRENCE-ID overrides edit or cancel single ' +
          'occurrences (scope=this). Events and series keep their UID: importing the file again updates them, and ' +
          'reports what did not change. One transaction; `dry_run` answers the same report and stores nothing. ' +
          'See docs/calendar-import.md.',
        consumes: ['text/calendar', 'application/json'],
        params: SpaceParams,
        querystring: CalendarImportQuery,
        body: {
          content: {
            'text/calendar': { schema: CalendarText },
            'application/json': { schema: CalendarUrlBody }
          }
        },
        response: {
          200: CalendarImportReport,
          413: {
            ...ErrorModel,
            description: 'A calendar over 1 MiB (the body, or what the URL answered): nothing stored'
          },
          502: {
            ...ErrorModel,
            description: 'The URL could not be fetched (no answer, a status other than 2xx, a redirect): nothing stored'
          }
        }
      }, requirePolicy('space', 'import_calendar'), { config: { cost: IMPORT_COST } }), async (request) => {
      const given = request.body as string | CalendarUrlBody
      // a URL is fetched only for a caller who may import into the space
      if (typeof given !== 'string') await checkSpace(db, request.auth, request.params.id)
      const text = typeof given === 'string' ? given : await fetchCalendar(given.url, allow)
      const dryRun = request.query.dry_run === true || (typeof given !== 'string' && given.dry_run === true)
      // parsed before the transaction: no connection is held for it
      const calendar = parseCalendar(text)
      return await importCalendar(db, request.auth, request.params.id, calendar, dryRun)
    })
  })
})
