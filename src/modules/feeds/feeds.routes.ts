/**
 * Calendar feeds (RFC 5545) and their tokens (docs/integrations.md, "Calendar feeds (RFC 5545)").
 *
 * - `GET /api/v1/spaces/{id}/calendar.ics`: the events of a space. Without `token`, only for a published public
 *   space (its public events); with a space token of that space, as the token's user sees the space and its events.
 * - `GET /api/v1/me/calendar.ics?token=…`: the events the token's user created, manages (event or series manager) or
 *   attends (their contact by the verified e-mail address of their latest token).
 * - `GET /api/v1/series/{id}/calendar.ics?token=…`: the occurrences of one series, with a series token.
 * - `/api/v1/feed-tokens`: a caller makes, lists, revokes and rotates their own tokens; a token is shown once.
 *
 * A calendar app sends no bearer token: the feed routes declare `auth: 'none'` and are rate-limited per address like
 * the other anonymous routes. Each fetch re-checks everything (the token is live, its user not removed or
 * deactivated, the space still visible to them, each event's visibility): an unknown, revoked or other-tenant token,
 * a space the user no longer sees and a private space without a token all answer the same 404.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { defineModule } from '../../platform/app-context.ts'
import { permissionsOf } from '../../platform/auth/permissions.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import { withSystem, withTenant, type Tx } from '../../platform/db/tenant.ts'
import { etagMatches, setRepresentationEtag } from '../../platform/http/conditional.ts'
import { ApiError, error404NotFound, error409Conflict, fieldError, invalidField } from '../../platform/http/errors.ts'
import { noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { hashInviteToken, newInviteToken } from '../../platform/invite-tokens.ts'
import { actorRefused, asTheyAreNow } from '../disclosure/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { seriesRecurrences, visibleSeriesTitle } from '../series/index.ts'
import { findPublicSpace, findVisibleSpace, findWithdrawnSpace, resolvePublic, SpaceParams } from '../spaces/index.ts'
import { feedVersion, renderCalendar, type FeedHead } from './feeds.calendar.ts'
import { RowJsonCache } from '../../platform/db/row-json-cache.ts'
import { KeptPublicAnswers } from '../../platform/public-answers.ts'
import { KeptBody } from '../../platform/http/compression.ts'
import * as repo from './feeds.repository.ts'
import type { FeedScope } from './feeds.table.ts'
import {
  CreatedFeedToken, CreateFeedTokenBody, FeedTokenList, FeedTokenParams, PersonalFeedQuery, SeriesFeedParams,
  SeriesFeedQuery, SpaceFeedQuery
} from './feeds.schemas.ts'

const operation = operationsTagged('Calendar feeds')

/** How long a calendar app may keep a feed before asking again (seconds). */
export const FEED_MAX_AGE = 300

const CALENDAR_EXAMPLE = [
  'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Collab//Calendar feeds//EN', 'X-WR-CALNAME:Reading club',
  'BEGIN:VTIMEZONE', 'TZID:Europe/Berlin', '…', 'END:VTIMEZONE',
  'BEGIN:VEVENT', 'UID:event-42@collab.example.org', 'SEQUENCE:3', 'DTSTAMP:20261101T090000Z',
  'DTSTART;TZID=Europe/Berlin:20261105T190000', 'DTEND;TZID=Europe/Berlin:20261105T210000',
  'SUMMARY:Book night', 'LOCATION:Main street 1', 'GEO:52.52;13.405', 'STATUS:CONFIRMED',
  'URL;VALUE=URI:https://app.example.org/events/42', 'END:VEVENT', 'END:VCALENDAR', ''
].join('\r\n')

/** The documented 200 of a feed: iCalendar text (mirrors csvBody). */
const calendarBody = (description: string) =>
  ({ type: 'string', description, examples: [CALENDAR_EXAMPLE] }) as const

const FEED_RESPONSES = {
  200: calendarBody('The feed (RFC 5545, `text/calendar; charset=utf-8`)'),
  304: NoContent
}

/**
 * Who a feed token reads as: its user with read permissions only (never a tenant admin's reach), as they are now
 * (`asTheyAreNow`: the organization their latest token carried), else in the organization of when the token was made.
 */
async function readerOf (
  trx: Tx,
  token: { tenant_id: string, user_id: string, org_id: string | null }
): Promise<AuthContext> {
  return await asTheyAreNow(trx, {
    userId: token.user_id,
    tenantId: token.tenant_id,
    email: null,
    orgId: token.org_id,
    roles: ['viewer'],
    effectiveRole: 'viewer',
    permissions: new Set(permissionsOf(['viewer'])),
    exp: 0
  })
}

/** A feed's version and its text; no text when If-None-Match names the version (304). */
interface FeedAnswer { version: string, text: Buffer | undefined }

/** A public space's anonymous feed as kept: its version, its text and the codings of it made so far. */
interface PublicFeed { version: string, text: KeptBody }

/**
 * Sends a feed with its ETag, or 304 when the request's If-None-Match named it; a kept body in the coding the request
 * asks for, made once (compression.ts), any other text compressed as it leaves.
 */
async function sendFeed (
  request: FastifyRequest,
  reply: FastifyReply,
  { version, text }: { version: string, text: Buffer | KeptBody | undefined },
  shared = false
): Promise<FastifyReply> {
  // the version is a digest of what the feed shows: a 304 is the platform's (not-modified.ts), its headers these
  setRepresentationEtag(reply, `"${version}"`)
  // a public space's feed, the same for every reader without a token, any cache may keep; a token's feed, only the
  // calendar app that holds the token (docs/api-conventions.md, "Caching")
  void reply
    .header('cache-control', shared ? `public, max-age=${FEED_MAX_AGE}` : `private, max-age=${FEED_MAX_AGE}`)
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff')
  if (text === undefined) return await reply.code(304).send()
  void reply.header('content-type', 'text/calendar; charset=utf-8')
  return await (text instanceof KeptBody ? text.send(request, reply) : reply.send(text))
}

const notFound = () => error404NotFound('feed not found')

export const feedsModule = defineModule(async (app, { db, config, writes }) => {
  const host = new URL(config.baseUrl).hostname
  // rendered feeds by feed and reader, checked against their version (32 MiB: some 15 feeds of 5 000 events)
  const rendered = new RowJsonCache(32 << 20)
  // the anonymous feeds of public spaces, by space: the same for every reader without a token, kept for
  // PUBLIC_PAGE_CACHE_MS as the public page is (their text is also in `rendered`: this saves reading the version)
  const publicFeeds = new KeptPublicAnswers<PublicFeed>(config.publicPageCacheMs, writes, 100)
  const feedUrl = (row: { scope: FeedScope, space_id: number | null, series_id: number | null }, token: string) =>
    row.scope === 'space'
      ? `${config.baseUrl}/api/v1/spaces/${String(row.space_id)}/calendar.ics?token=${token}`
      : row.scope === 'series'
        ? `${config.baseUrl}/api/v1/series/${String(row.series_id)}/calendar.ics?token=${token}`
        : `${config.baseUrl}/api/v1/me/calendar.ics?token=${token}`

  /**
   * A feed's version from the digest of its rows' keys and versions, and its text: none when `ifNoneMatch` names the
   * version; the text kept under `key` (the feed and its reader) when it is of that version, shared by the
   * subscribers of one public space; else the rows read and rendered, and kept under the version of the rows as read
   * (a change committed since the digest gives them another).
   */
  async function feedAnswer (
    trx: Tx,
    ifNoneMatch: string | string[] | undefined,
    key: string,
    head: FeedHead,
    reader: repo.FeedReader,
    source: repo.FeedSource,
    withdrawn?: 'empty' | 'cancelled'
  ): Promise<FeedAnswer> {
    // a withdrawn space's feed (docs/spaces.md, "Unpublish"): none of its events, or all of them cancelled
    const marked = (rows: string): string => withdrawn === undefined ? rows : `${withdrawn}:${rows}`
    const empty = withdrawn === 'empty'
    const version = feedVersion(head, marked(empty ? '' : await repo.feedDigest(trx, reader, source)))
    if (etagMatches(ifNoneMatch, `"${version}"`)) return { version, text: undefined }
    const kept = rendered.get(key, version)
    if (kept !== undefined) return { version, text: kept }
    const rows = empty ? [] : await repo.feedEvents(trx, reader, source)
    const events = withdrawn === 'cancelled' ? rows.map(e => ({ ...e, unpublished: true })) : rows
    const read = feedVersion(head, marked(empty ? '' : repo.digestOf(events)))
    const tenantId = reader.kind === 'user' ? reader.auth.tenantId : reader.tenantId
    const seriesIds = events.flatMap(e => e.series_id === null ? [] : [e.series_id])
    const series = await seriesRecurrences(trx, tenantId, seriesIds)
    const text = Buffer.from(renderCalendar({ ...head, events, series }))
    rendered.set(key, read, text)
    return { version: read, text }
  }

  /**
   * The feed of a published public space as everyone without a token reads it (its public events), with its text,
   * kept for the next anonymous readers (`publicFeeds`); 404 when the space is not a published public one.
   */
  async function publicFeed (id: number): Promise<PublicFeed> {
    const mark = publicFeeds.mark()
    const entry = await withSystem(db, trx => resolvePublic(trx, { id }))
    if (entry === undefined) throw notFound()
    const tenantId = entry.tenant_id
    const answer = await withTenant(db, { tenantId }, async trx => {
      const space = await findPublicSpace(trx, tenantId, id)
      const withdrawn = space === undefined ? await findWithdrawnSpace(trx, tenantId, id) : undefined
      const title = space?.title ?? withdrawn?.title
      if (title === undefined) return undefined
      return await feedAnswer(trx, undefined, `${tenantId}:space:${String(id)}:anyone`,
        { name: title, host, appUrl: config.appUrl }, { kind: 'anyone', tenantId },
        { kind: 'space', spaceId: id },
        withdrawn === undefined ? undefined : withdrawn.cancel_in_feeds ? 'cancelled' : 'empty')
    })
    if (answer?.text === undefined) throw notFound()
    const full = { version: answer.version, text: new KeptBody(answer.text) }
    publicFeeds.set(String(id), tenantId, full, mark)
    return full
  }

  /** The live token of a feed address, in any tenant, with its user still allowed in; else 404. */
  async function liveToken (token: string) {
    const found = await withSystem(db, trx => repo.findLiveToken(trx, hashInviteToken(token)))
    if (found === undefined) {
      throw new ApiError(404, 'feed not found', [fieldError('query.token', 'unknown or revoked feed token')])
    }
    return found
  }

  /**
   * A feed read with a token, as its user now (`readerOf`): 404 when the user is refused or `named` finds nothing
   * they may subscribe to (else the feed's name and what it reads); the token's use recorded.
   */
  async function tokenFeed (
    found: Awaited<ReturnType<typeof liveToken>>,
    ifNoneMatch: string | string[] | undefined,
    named: (trx: Tx, auth: AuthContext) => Promise<{ name: string, source: repo.FeedSource } | undefined>
  ): Promise<FeedAnswer> {
    const answer = await withTenant(db, { tenantId: found.tenant_id, userId: found.user_id }, async trx => {
      const auth = await readerOf(trx, found)
      if ((await actorRefused(trx, auth.tenantId, auth.userId)) !== undefined) return undefined
      const feed = await named(trx, auth)
      if (feed === undefined) return undefined
      const out = await feedAnswer(trx, ifNoneMatch, `${found.tenant_id}:token:${found.id}`,
        { name: feed.name, host, appUrl: config.appUrl }, { kind: 'user', auth }, feed.source)
      await repo.touchToken(trx, auth.tenantId, found.id)
      return out
    })
    if (answer === undefined) throw notFound()
    return answer
  }

  app.get('/api/v1/spaces/:id/calendar.ics', {
    schema: {
      description: 'The space\'s events as an iCalendar feed: a public space without a token, else with a space feed ' +
        'token in the URL. Calendar apps subscribe to it.',
      operationId: 'get-space-calendar-feed',
      summary: 'Calendar feed of a space (a public space without token, else with a space feed token)',
      tags: ['Calendar feeds'],
      params: SpaceParams,
      querystring: SpaceFeedQuery,
      produces: ['text/calendar'],
      response: FEED_RESPONSES
    },
    config: { auth: 'none' }
  }, async (request, reply) => {
    const id = request.params.id
    const token = request.query.token
    if (token === undefined) {
      const answer = publicFeeds.get(String(id)) ?? await publicFeed(id)
      const unchanged = etagMatches(request.headers['if-none-match'], `"${answer.version}"`)
      return await sendFeed(request, reply, unchanged ? { version: answer.version, text: undefined } : answer, true)
    }
    const found = await liveToken(token)
    if (found.scope !== 'space' || found.space_id !== id) throw notFound()
    return await sendFeed(request, reply, await tokenFeed(found, request.headers['if-none-match'],
      async (trx, auth) => {
        if (await findVisibleSpace(trx, auth, id) === undefined) return undefined
        const name = await repo.spaceTitle(trx, auth.tenantId, id) ?? 'Space'
        return { name, source: { kind: 'space', spaceId: id } }
      }))
  })

  app.get('/api/v1/me/calendar.ics', {
    schema: {
      description: 'The events the token\'s user created, manages or attends as an iCalendar feed. Calendar apps ' +
        'subscribe to it with a personal feed token.',
      operationId: 'get-personal-calendar-feed',
      summary: 'Personal calendar feed: the events the token\'s user created, manages or attends',
      tags: ['Calendar feeds'],
      querystring: PersonalFeedQuery,
      produces: ['text/calendar'],
      response: FEED_RESPONSES
    },
    config: { auth: 'none' }
  }, async (request, reply) => {
    const found = await liveToken(request.query.token)
    if (found.scope !== 'personal') throw notFound()
    return await sendFeed(request, reply, await tokenFeed(found, request.headers['if-none-match'],
      async (trx, auth) => {
        const who = await repo.userName(trx, auth.tenantId, auth.userId)
        const name = who !== undefined ? `${who}'s events` : 'My events'
        return { name, source: { kind: 'personal', userId: auth.userId } }
      }))
  })

  app.get('/api/v1/series/:id/calendar.ics', {
    schema: {
      description: 'A series as one recurring iCalendar entry with its exceptions, with a series feed token.',
      operationId: 'get-series-calendar-feed',
      summary: 'Calendar feed of a series (one recurring entry with its exceptions), with a series feed token',
      tags: ['Calendar feeds'],
      params: SeriesFeedParams,
      querystring: SeriesFeedQuery,
      produces: ['text/calendar'],
      response: FEED_RESPONSES
    },
    config: { auth: 'none' }
  }, async (request, reply) => {
    const id = request.params.id
    const found = await liveToken(request.query.token)
    if (found.scope !== 'series' || found.series_id !== id) throw notFound()
    return await sendFeed(request, reply, await tokenFeed(found, request.headers['if-none-match'],
      async (trx, auth) => {
        const title = await visibleSeriesTitle(trx, auth, id)
        return title === undefined ? undefined : { name: title, source: { kind: 'series', seriesId: id } }
      }))
  })

  app.post('/api/v1/feed-tokens', operation('create-feed-token', 'Make a calendar feed token (shown once)', {
    description: 'Makes a secret token that opens a calendar feed without signing in; shown only in this answer. Put ' +
      'it in the feed URL a calendar app subscribes to.',
    body: CreateFeedTokenBody,
    response: { 201: CreatedFeedToken }
  }, requirePolicy('feed', 'create')), async (request, reply) => {
    const { scope, space_id: spaceId, series_id: seriesId } = request.body
    if (scope === 'space' && spaceId === undefined) {
      throw invalidField('body.space_id', 'required with scope space')
    }
    if (scope !== 'space' && spaceId !== undefined) {
      throw invalidField('body.space_id', 'only with scope space', spaceId)
    }
    if (scope === 'series' && seriesId === undefined) {
      throw invalidField('body.series_id', 'required with scope series')
    }
    if (scope !== 'series' && seriesId !== undefined) {
      throw invalidField('body.series_id', 'only with scope series', seriesId)
    }
    const auth = request.auth
    const created = await withTenant(db, auth, async trx => {
      if (spaceId !== undefined && await findVisibleSpace(trx, auth, spaceId) === undefined) {
        throw error404NotFound('space not found')
      }
      if (seriesId !== undefined && await visibleSeriesTitle(trx, auth, seriesId) === undefined) {
        throw error404NotFound('series not found')
      }
      if (await repo.countLiveTokens(trx, auth.tenantId, auth.userId) >= repo.FEED_TOKENS_MAX) {
        throw error409Conflict(`at most ${repo.FEED_TOKENS_MAX} live feed tokens per user: revoke one first`, [
          fieldError('body', 'too many feed tokens')
        ], 'credential_limit')
      }
      const { token, hash } = newInviteToken()
      const row = await repo.insertToken(trx, {
        tenant_id: auth.tenantId,
        user_id: auth.userId,
        scope,
        space_id: spaceId ?? null,
        series_id: seriesId ?? null,
        org_id: auth.orgId,
        token_hash: hash
      })
      return { ...row, token, url: feedUrl(row, token) }
    })
    return await reply.code(201).send(created)
  })

  app.get('/api/v1/feed-tokens', operation('list-feed-tokens', 'The caller\'s live calendar feed tokens', {
    description: 'The caller\'s live calendar feed tokens, without their secrets.',
    response: { 200: FeedTokenList }
  }, requirePolicy('feed', 'read')), async request => {
    const items = await withTenant(db, request.auth, trx =>
      repo.listTokens(trx, request.auth.tenantId, request.auth.userId))
    return { items }
  })

  noContentRoute(app, db, 'delete', '/api/v1/feed-tokens/:id', operation('revoke-feed-token',
    'Revoke a calendar feed token (its feeds answer 404 from now on)', {
      description: 'Revokes a feed token: its feeds answer 404 from now on.',
      params: FeedTokenParams
    }, requirePolicy('feed', 'revoke')), async (trx, { auth, params }) => {
    if (!await repo.revokeToken(trx, auth.tenantId, auth.userId, params.id)) {
      throw error404NotFound('feed token not found')
    }
  })

  app.post('/api/v1/feed-tokens/:id/rotate', operation('rotate-feed-token',
    'Replace the secret of a calendar feed token (the old one stops at once; shown once)', {
      description: 'Gives a feed token a new secret, shown only in this answer; the old secret stops at once.',
      params: FeedTokenParams,
      response: { 200: CreatedFeedToken }
    }, requirePolicy('feed', 'rotate')), async request => {
    const { auth, params } = request
    const { token, hash } = newInviteToken()
    const row = await withTenant(db, auth, trx => repo.rotateToken(trx, auth.tenantId, auth.userId, params.id, hash))
    if (row === undefined) throw error404NotFound('feed token not found')
    return { ...row, token, url: feedUrl(row, token) }
  })
})
