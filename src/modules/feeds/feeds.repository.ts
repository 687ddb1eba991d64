/**
 * SQL of the calendar feeds: feed tokens (only their SHA-256 is stored) and the events a feed shows. A feed request
 * carries no bearer token: `findLiveToken` runs on the system login (withSystem) to find the token's tenant, and
 * everything else in that tenant's scope as the token's user.
 */
import crypto from 'node:crypto'
import { sql, type ExpressionBuilder, type SqlBool, type Expression } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { eventVisibleTo } from '../events/index.ts'
import type { FeedsTables, NewFeedToken } from './feeds.table.ts'

/** The window of a feed: events that end at most this many days ago… */
export const FEED_DAYS_BACK = 90
/** …and start at most this many days ahead (two years). */
export const FEED_DAYS_AHEAD = 730
/** At most this many events in one feed, the soonest first (from the start of the window). */
export const FEED_MAX_EVENTS = 5000
/** Live feed tokens one user may hold. */
export const FEED_TOKENS_MAX = 50

const tokens = (trx: Tx) => trx.withTables<FeedsTables>()

const SHOWN = ['id', 'scope', 'space_id', 'series_id', 'created_at', 'last_used_at'] as const

export async function insertToken (trx: Tx, values: NewFeedToken) {
  return await tokens(trx).insertInto('feed_tokens').values(values).returning(SHOWN).executeTakeFirstOrThrow()
}

export async function countLiveTokens (trx: Tx, tenantId: string, userId: string): Promise<number> {
  const row = await tokens(trx).selectFrom('feed_tokens')
    .select(eb => eb.fn.countAll<string>().as('n'))
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId).where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The user's live tokens, oldest first. */
export async function listTokens (trx: Tx, tenantId: string, userId: string) {
  return await tokens(trx).selectFrom('feed_tokens').select(SHOWN)
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId).where('revoked_at', 'is', null)
    .orderBy('id').limit(FEED_TOKENS_MAX)
    .execute()
}

/** Revokes a live token of the user; false when there is none with that id. */
export async function revokeToken (trx: Tx, tenantId: string, userId: string, id: number): Promise<boolean> {
  const rows = await tokens(trx).updateTable('feed_tokens').set({ revoked_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId).where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returning('id').execute()
  return rows.length > 0
}

/** Replaces the hash of a live token of the user (the old token stops at once); undefined when there is none. */
export async function rotateToken (trx: Tx, tenantId: string, userId: string, id: number, tokenHash: string) {
  return await tokens(trx).updateTable('feed_tokens')
    .set({ token_hash: tokenHash, created_at: sql<Date>`now()`, last_used_at: null })
    .where('tenant_id', '=', tenantId).where('user_id', '=', userId).where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returning(SHOWN).executeTakeFirst()
}

/** A live token by its hash, in any tenant: run on the system login (withSystem). */
export async function findLiveToken (trx: Tx, tokenHash: string) {
  return await tokens(trx).selectFrom('feed_tokens')
    .select(['tenant_id', 'id', 'user_id', 'scope', 'space_id', 'series_id', 'org_id'])
    .where('token_hash', '=', tokenHash).where('revoked_at', 'is', null)
    .executeTakeFirst()
}

/** Records a use of a token, at most once an hour (a feed is polled often: no write per poll). */
export async function touchToken (trx: Tx, tenantId: string, id: number): Promise<void> {
  await tokens(trx).updateTable('feed_tokens').set({ last_used_at: sql<Date>`date_trunc('hour', now())` })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .where(eb => eb.or([
      eb('last_used_at', 'is', null),
      eb('last_used_at', '<', sql<Date>`date_trunc('hour', now())`)
    ]))
    .execute()
}

/** The title of a space (for the feed's name). */
export async function spaceTitle (trx: Tx, tenantId: string, id: number): Promise<string | undefined> {
  const row = await trx.selectFrom('spaces').select('title')
    .where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst()
  return row?.title
}

/** The name a personal feed is titled with. */
export async function userName (trx: Tx, tenantId: string, userId: string): Promise<string | undefined> {
  const row = await trx.selectFrom('users').select(['display_name', 'first_name', 'last_name', 'username'])
    .where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst()
  if (row === undefined) return undefined
  const full = [row.first_name, row.last_name].filter(p => p !== null && p.trim() !== '').join(' ')
  return row.display_name ?? (full !== '' ? full : row.username ?? undefined)
}

export interface FeedEvent {
  id: number
  title: string
  description: string | null
  address: string | null
  latitude: number | null
  longitude: number | null
  start_dt: Date
  end_dt: Date | null
  timezone: string
  cancelled_at: Date | null
  is_deleted: boolean
  /** unpublished with `cancel_in_feeds` (the only drafts a feed holds): shown as cancelled */
  unpublished: boolean
  revision: number
  created_at: Date
  updated_at: Date
  /** the series and position of an occurrence (a feed writes a series as one recurring entry) */
  series_id: number | null
  series_index: number | null
  /** the UID an import kept (docs/calendar-import.md): the feed writes it instead of its own */
  ical_uid: string | null
  /** `xmin` (`rowVersion`), and the revision of its series (whose rule the feed writes) */
  row_version: string
}

type Eb = ExpressionBuilder<Database, 'events'>

/** Who a feed is read as: a user (through a token), or anyone (the public feed of a public space). */
export type FeedReader = { kind: 'user', auth: AuthContext } | { kind: 'anyone', tenantId: string }

/**
 * Whom an event is shown to in a feed. Live events: `eventVisibleTo` (the rules of every other read). Deleted events
 * stay in the window as cancelled, to whom the rules show them without asking live links: the creator, everyone for
 * a public event (40), the callers of its organization (30). Anyone reads public events only.
 */
function shown (eb: Eb, reader: FeedReader): Expression<SqlBool> {
  if (reader.kind === 'anyone') {
    return eb.and([eb('events.tenant_id', '=', reader.tenantId), eb('events.visibility', '=', 40)])
  }
  const { auth } = reader
  const deletedTo: Array<Expression<SqlBool>> = [
    eb('events.creator_id', '=', auth.userId),
    eb('events.visibility', '=', 40)
  ]
  if (auth.orgId !== null) {
    deletedTo.push(eb.and([eb('events.visibility', '=', 30), eb('events.org_id', '=', auth.orgId)]))
  }
  return eb.or([
    eventVisibleTo(eb, auth),
    eb.and([eb('events.tenant_id', '=', auth.tenantId), eb('events.is_deleted', '=', true), eb.or(deletedTo)])
  ])
}

/**
 * What a feed reads: the events of a space; those a user created, manages or attends (their contact by the verified
 * e-mail address of their latest token, `user_claims.verified_email`, holding a place: confirmed, tentative, checked
 * in or marked no-show); or the occurrences of a series.
 */
export type FeedSource =
  { kind: 'space', spaceId: number } | { kind: 'personal', userId: string } | { kind: 'series', seriesId: number }

/** Attendee statuses that hold a place at an event: the personal feed shows the events they are for. */
const ATTENDING = ['confirmed', 'tentative', 'checked_in', 'no_show'] as const

function sourceOf (eb: Eb, tenantId: string, source: FeedSource): Expression<SqlBool> {
  if (source.kind === 'space') {
    return eb('events.id', 'in', eb.selectFrom('event_spaces as es').select('es.event_id')
      .where('es.tenant_id', '=', tenantId).where('es.space_id', '=', source.spaceId))
  }
  if (source.kind === 'series') return eb('events.series_id', '=', source.seriesId)
  const managed = (column: 'event_id' | 'series_id') => eb.selectFrom('event_managers as em')
    .select(`em.${column}`)
    .where('em.tenant_id', '=', tenantId).where('em.user_id', '=', source.userId)
    .where('em.status', '=', 'active').where(`em.${column}`, 'is not', null)
  // the user's contacts: by the verified address their latest token carried
  const contacts = eb.selectFrom('contacts as c').select('c.id')
    .where('c.tenant_id', '=', tenantId)
    .where(sql<string>`lower(c.email)`, '=', eb.selectFrom('user_claims as uc')
      .select(sql<string>`lower(uc.verified_email)`.as('email'))
      .where('uc.tenant_id', '=', tenantId).where('uc.user_id', '=', source.userId))
  const attended = (column: 'event_id' | 'series_id') => eb.selectFrom('attendees as a').select(`a.${column}`)
    .where('a.tenant_id', '=', tenantId).where(`a.${column}`, 'is not', null)
    .where('a.status', 'in', ATTENDING)
    .where('a.contact_id', 'in', contacts)
  return eb.or([
    eb('events.creator_id', '=', source.userId),
    eb('events.id', 'in', managed('event_id')),
    eb('events.series_id', 'in', managed('series_id')),
    eb('events.id', 'in', attended('event_id')),
    eb('events.series_id', 'in', attended('series_id'))
  ])
}

/**
 * The rows of a feed: published (or archived) rows, never draft clones, that end at most FEED_DAYS_BACK days ago and
 * start at most FEED_DAYS_AHEAD days ahead, soonest first, at most FEED_MAX_EVENTS; and the drafts unpublished with
 * `cancel_in_feeds` (migration 0040), shown cancelled until published again.
 */
function feedRows (trx: Tx, reader: FeedReader, source: FeedSource) {
  const tenantId = reader.kind === 'user' ? reader.auth.tenantId : reader.tenantId
  return trx.selectFrom('events')
    // the series whose rule the feed writes: its revision is part of each occurrence's version (`rowVersion`)
    .leftJoin('event_series as fs', join => join
      .onRef('fs.tenant_id', '=', 'events.tenant_id').onRef('fs.id', '=', 'events.series_id'))
    .where('events.tenant_id', '=', tenantId)
    .where(eb => eb.or([
      eb('events.status', 'in', ['published', 'archived']),
      eb.and([eb('events.status', '=', 'draft'), eb('events.cancel_in_feeds', '=', true)])
    ]))
    .where('events.published_id', 'is', null)
    .where('events.start_dt', 'is not', null)
    // a series feed shows the whole series (at most its rows' bounds); the others a window around now
    .$if(source.kind !== 'series', qb => qb
      .where('events.start_dt', '<=', sql<Date>`now() + make_interval(days => ${FEED_DAYS_AHEAD})`)
      .where(sql<Date>`coalesce(events.end_dt, events.start_dt)`, '>=',
        sql<Date>`now() - make_interval(days => ${FEED_DAYS_BACK})`))
    .where(eb => sourceOf(eb, tenantId, source))
    .where(eb => shown(eb, reader))
    .orderBy('events.start_dt').orderBy('events.id')
    .limit(FEED_MAX_EVENTS)
}

/**
 * The row version of an event (`xmin`, the transaction that wrote the version read): another after any committed
 * change, whichever code path or process made it (as RowJsonCache's, platform/db/row-json-cache.ts); for an
 * occurrence, with its series' revision (`fs`, joined in `feedRows`: one join, not a lookup per row).
 */
const rowVersion = sql<string>`events.xmin::text || coalesce('.' || fs.revision, '')`

/**
 * The digest of which rows a feed holds, in which versions: `md5` of `id.version` in the feed's order, joined by
 * commas (`digestOf` computes the same of rows read). Reads the rows' keys and versions only, so that a feed whose
 * rows did not change is answered without reading them.
 */
export async function feedDigest (trx: Tx, reader: FeedReader, source: FeedSource): Promise<string> {
  const row = await trx.selectFrom(
    feedRows(trx, reader, source).select(['events.id', 'events.start_dt', rowVersion.as('row_version')]).as('f')
  )
    .select(sql<string>`md5(coalesce(string_agg(f.id::text || '.' || f.row_version, ',' order by f.start_dt, f.id),
      ''))`.as('digest'))
    .executeTakeFirstOrThrow()
  return row.digest
}

/** `feedDigest` of rows read by `feedEvents`. */
export const digestOf = (events: readonly FeedEvent[]): string =>
  crypto.createHash('md5').update(events.map(e => `${e.id}.${e.row_version}`).join(',')).digest('hex')

/** The events of a feed (`feedRows`), with their row versions. */
export async function feedEvents (trx: Tx, reader: FeedReader, source: FeedSource): Promise<FeedEvent[]> {
  const rows = await feedRows(trx, reader, source)
    .select([
      'events.id', 'events.title', 'events.description', 'events.address', 'events.latitude', 'events.longitude',
      'events.start_dt', 'events.end_dt', 'events.timezone', 'events.cancelled_at', 'events.is_deleted',
      sql<boolean>`events.status = 'draft'`.as('unpublished'), 'events.revision', 'events.created_at',
      'events.updated_at', 'events.series_id', 'events.series_index',
      sql<string | null>`events.ical_uid`.as('ical_uid'), rowVersion.as('row_version')
    ])
    .execute()
  return rows.map(r => ({ ...r, start_dt: r.start_dt as Date }))
}
