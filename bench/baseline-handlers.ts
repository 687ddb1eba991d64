/**
 * The baseline's request handlers: for each scenario, the same statements the service runs for
 * that request (the modules' queries, written out), with the caller given in the query string.
 * No framework, no token, no row-level security (the owner connects), no tenant transaction;
 * writes that the service makes atomic run in one plain transaction here as well.
 */
import crypto from 'node:crypto'
import { phoneRegionOf, phoneSearch } from '../src/modules/contacts/contacts.phones.ts'

/** a statement on the request's connection; with a `name`, prepared once per connection (the references use it) */
export type Query = <R = Record<string, unknown>>(text: string, params?: unknown[], name?: string) => Promise<R[]>

export interface Caller { tenant: string, user: string, org: string }

export interface BaselineAnswer {
  status: number
  body?: unknown
  /** a body already in JSON */
  json?: string
  headers?: Record<string, string>
}

export type Handler = (q: Query, p: URLSearchParams, caller: Caller, body: unknown) => Promise<BaselineAnswer>

export const CONTACT_COLUMNS =
  'id, org_id, owner_id, created_at, updated_at, is_favorite, first_name, middle_name, last_name, nickname, email, ' +
  'phone_primary, phone_secondary, phone_work, company, job_title, address_line1, address_line2, city, ' +
  'state_province, postal_code, ' +
  'country, website, avatar_url, notes, linked_user_id, tags, revision'

/** The events a member of an organization sees ($1 tenant, $2 user, $3 org), as events.access.repository.ts has it. */
export const EVENT_AUDIENCE = `(events.creator_id = $2 or events.visibility = 40
  or (events.visibility = 20 and coalesce(events.published_id, events.id) in (
    select es.event_id from event_spaces es where es.tenant_id = $1 and es.space_id = any(array(
      select sm.space_id from space_members sm where sm.tenant_id = $1 and sm.user_id = $2 and sm.is_active = true))))
  or coalesce(events.published_id, events.id) in (
    select em.event_id from event_managers em where em.tenant_id = $1 and em.user_id = $2 and em.status = 'active'
      and em.event_id is not null)
  or events.series_id in (
    select em.series_id from event_managers em where em.tenant_id = $1 and em.user_id = $2 and em.status = 'active'
      and em.series_id is not null)
  or (events.visibility = 30 and events.org_id = $3))`

export const EVENT_VISIBLE =
  `events.tenant_id = $1 and events.is_deleted = false and events.published_id is null and ${EVENT_AUDIENCE}`

/** A page of the contacts list as the service answers it: the rows without their sort key, the page and total. */
function contactsPage (rows: Array<Record<string, unknown>>, page: number, size: number, total: unknown) {
  return {
    status: 200,
    body: { items: rows.slice(0, size).map(({ sort_key: _k, ...r }) => r), page, size, total: Number(total ?? 0) }
  }
}

async function spacesOf (
  q: Query,
  tenant: string,
  ids: number[]
): Promise<Map<number, Array<{ id: number; title: string }>>> {
  const out = new Map<number, Array<{ id: number; title: string }>>()
  if (ids.length === 0) return out
  const rows = await q<{ event_id: number; id: number; title: string }>(
    `with es as materialized (select event_id, space_id from event_spaces where tenant_id = $1
      and event_id = any($2::bigint[]))
     select es.event_id, s.id, s.title from es inner join spaces as s on s.tenant_id = $1 and s.id = es.space_id
     where s.is_deleted = $3 order by es.event_id, s.id`,
    [tenant, ids, false]
  )
  for (const r of rows) {
    const list = out.get(r.event_id) ?? []
    list.push({ id: r.id, title: r.title })
    out.set(r.event_id, list)
  }
  return out
}

async function withSpaces<T extends Record<string, unknown>> (
  q: Query,
  tenant: string,
  rows: T[]
): Promise<Array<T & { spaces: Array<{ id: number; title: string }> }>> {
  const spaces = await spacesOf(
    q,
    tenant,
    rows.map(r => Number(r.published_id ?? r.id))
  )
  return rows.map(r => ({ ...r, spaces: spaces.get(Number(r.published_id ?? r.id)) ?? [] }))
}

/**
 * Spaces and series titles of listed events, as the service's withSpacesAll reads them (two statements, in parallel)
 */
async function withJoined (q: Query, tenant: string, rows: Array<Record<string, unknown>>) {
  const seriesIds = [...new Set(rows.flatMap(r => r.series_id == null ? [] : [Number(r.series_id)]))]
  const [spaced, titles] = await Promise.all([
    withSpaces(q, tenant, rows),
    seriesIds.length === 0
      ? []
      : q<{ id: number; title: string }>(
        'select id, title from event_series where tenant_id = $1 and id = any($2::bigint[])',
        [tenant, seriesIds]
      )
  ])
  const title = new Map(titles.map(t => [Number(t.id), t.title]))
  return spaced.map(r => ({ ...r, series_title: r.series_id == null ? null : title.get(Number(r.series_id)) ?? null }))
}

const iso = (column: string) =>
  `to_char(events.${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ${column}`

/** The Event fields but series_title and spaces, as json-render.ts selects them from the Event schema. */
export const EVENT_JSON_COLUMNS = [
  'id',
  'title',
  'status',
  'visibility',
  'timezone',
  'creator_id',
  iso('created_at'),
  iso('created_dt'),
  iso('updated_at'),
  'version',
  'is_deleted',
  'is_locked',
  'description',
  'address',
  'latitude',
  'longitude',
  iso('start_dt'),
  iso('end_dt'),
  'keywords',
  'metadata',
  'metadata_override',
  'title_override',
  'description_override',
  'org_id',
  'parent_event_id',
  iso('published_at'),
  'published_id',
  'series_id',
  'series_index',
  'template',
  'template_version',
  'state',
  'priority',
  'cover_image_key',
  iso('cancelled_at'),
  'cancellation_reason'
]
  .map(c => (c.startsWith('to_char') ? c : `events.${c}`))
  .join(', ')

export const notFound: BaselineAnswer = { status: 404, body: { status: 404, title: 'Not Found' } }

export const SPACE_SELECT = `select spaces.id, spaces.title, spaces.description, spaces.timezone, spaces.visibility,
  spaces.status, spaces.org_id,
  spaces.creator_id, spaces.position, spaces.published_at, spaces.version, spaces.is_deleted, spaces.public_handle,
    spaces.revision,
  spaces.draft, spaces.created_at, spaces.updated_at,
  coalesce((select json_agg(p.parent_id order by p.parent_id) from space_parents p join spaces ps
    on ps.tenant_id = p.tenant_id and ps.id = p.parent_id and not ps.is_deleted
    where p.tenant_id = spaces.tenant_id and p.space_id = spaces.id), '[]'::json) as parent_ids,
  spaces.draft is not null as has_draft
  from spaces`

export const SPACE_VISIBLE = `spaces.tenant_id = $2 and spaces.is_deleted = false and (spaces.creator_id = $3
  or exists (select 1 from space_managers m where m.tenant_id = spaces.tenant_id and m.space_id = spaces.id
    and m.user_id = $3 and m.status = 'active')
  or (spaces.status <> 'draft' and (spaces.visibility = 40 or (spaces.visibility = 30 and spaces.org_id = $4)
      or (spaces.visibility in (20, 30) and exists (select 1 from space_members sm where sm.tenant_id = spaces.tenant_id
        and sm.space_id = spaces.id and sm.user_id = $3 and sm.is_active = true)))))`

export const PROFILE = 'u.display_name, u.first_name, u.last_name, u.username, u.avatar_url'
export const PUBLIC_SPACES =
  "spaces.tenant_id = $1 and spaces.status = 'published' and spaces.visibility = 40 and spaces.is_deleted = false"

/**
 * The parameters $1–$8 of the member's event list, the same in the baseline and the reference: the caller, the
 * status and the lower bound of start, how deep each visibility branch reads (the page's end, or one page by cursor)
 * with one row to spare, and the offset (none by cursor).
 */
export function listWindowParams (c: Caller, after: Date, page: number, size: number, ks: string | null): unknown[] {
  const depth = ks !== null ? size : page * size
  return [c.tenant, c.user, c.org, 'published', after, depth + 1, size + 1, ks !== null ? 0 : (page - 1) * size]
}

/** The key (start, id) of the previous page's last row, when the list is read by cursor (`ks`, `ki`). */
export function keysetParams (p: URLSearchParams): unknown[] {
  const ks = p.get('ks')
  return ks !== null ? [ks, Number(p.get('ki'))] : []
}

/** The columns of a contact as the service answers it since migration 0028 (its numbers' E.164 forms and flags). */
export const CONTACT_PHONE_COLUMNS =
  `${CONTACT_COLUMNS}, phone_primary_e164, phone_secondary_e164, phone_work_e164, invalid_phones`

/**
 * A contacts search's condition (contacts.repository.ts, searchMatch) and its parameters, numbered from `first`: the
 * term in the text of names, e-mail and company, or, for a term that looks like a phone number (the service's own
 * `phoneSearch`, with the request's region), one of the three numbers' reversed digits: equal to the number's, or
 * starting with its national number's for a number kept as typed, or with a suffix's.
 */
function contactSearch (term: string, region: string | null, first: number): { where: string, params: unknown[] } {
  const like = `%${term.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`
  const phone = phoneSearch(term, region !== null ? phoneRegionOf(region) : undefined)
  const text = `search_text like $${first}`
  if (phone === undefined) return { where: text, params: [like] }
  const fields = [['phone_primary_rev', 'phone_primary_e164'], ['phone_secondary_rev', 'phone_secondary_e164'],
    ['phone_work_rev', 'phone_work_e164']]
  const [a, b] = [`$${first + 1}`, `$${first + 2}`]
  if ('suffix' in phone) {
    return {
      where: `(${text} or ${fields.map(([rev]) => `${rev} like ${a}`).join(' or ')})`,
      params: [like, `${phone.suffix}%`]
    }
  }
  if (phone.national === undefined) {
    return {
      where: `(${text} or ${fields.map(([rev]) => `${rev} = ${a}`).join(' or ')})`, params: [like, phone.number]
    }
  }
  return {
    where:
      `(${text} or ` +
      `${fields.map(([rev, e164]) => `(${rev} like ${a} and (${rev} = ${b} or ${e164} is null))`).join(' or ')})`,
    params: [like, `${phone.national}%`, phone.number]
  }
}

/**
 * The duplicates' keys (contacts.duplicates.repository.ts, KEY_COLUMNS): per reason, its rank among equal keys and
 * its indexed columns, each with what makes a contact count once (a number held in two fields counts in the first).
 */
const DUPLICATE_KEYS: Record<string, { rank: number, columns: Array<[string, string]> }> = {
  email: { rank: 1, columns: [['email_key', 'true']] },
  phone: {
    rank: 2,
    columns: [
      ['phone_primary_e164', 'true'],
      ['phone_secondary_e164', 'phone_secondary_e164 is distinct from phone_primary_e164'],
      ['phone_work_e164',
        'phone_work_e164 is distinct from phone_primary_e164 and phone_work_e164 is distinct from phone_secondary_e164']
    ]
  },
  name_company: { rank: 3, columns: [['name_company_key', 'true']] }
}
/** SCAN_BUDGET, FEW_CONTACTS and GROUP_CONTACTS_MAX of the service */
const DUPLICATES_BUDGET = 20_000
const DUPLICATES_FEW = 5_000
const GROUP_CONTACTS = 10

export const HANDLERS: Record<string, Handler> = {
  // the service's one statement (events.repository.ts, findEventJoined): the row, its spaces, its series' title and
  // its registration figures (attendees.registration.repository.ts, figuresColumn: the settings in force and the
  // attendee counts kept in row_counts)
  async 'get-event' (q, p, c) {
    const root = 'case when events.published_id is null then events.id else events.published_id end'
    const rows = await q<Record<string, unknown>>(
      `select events.*,
        (select coalesce(json_agg(json_build_object('id', s.id, 'title', s.title) order by s.id), '[]'::json)
          from event_spaces es join spaces s on s.tenant_id = $1 and s.id = es.space_id
          where es.tenant_id = $1 and es.tenant_id = events.tenant_id
            and es.event_id = ${root} and not s.is_deleted) as spaces,
        (select es.title from event_series es where es.tenant_id = $1 and es.tenant_id = events.tenant_id
          and es.id = events.series_id) as series_title,
        (select json_build_object(
            'series_id', r.series_id, 'capacity', r.capacity, 'waitlist_enabled', r.waitlist_enabled,
            'requires_approval', r.requires_approval, 'registration_inherited', r.registration_inherited,
            'series', (select json_build_object('capacity', s.capacity, 'waitlist_enabled', s.waitlist_enabled,
                'requires_approval', s.requires_approval) from event_series s
              where s.tenant_id = $1 and s.tenant_id = r.tenant_id and s.id = r.series_id and r.registration_inherited),
            'counts', (select json_build_object(
                'confirmed', coalesce(sum(c.n) filter (where c.k2 in ('confirmed', 'checked_in')), 0),
                'waitlisted', coalesce(sum(c.n) filter (where c.k2 = 'waitlisted'), 0),
                'pending', coalesce(sum(c.n) filter (where c.k2 = 'pending'), 0),
                'no_show', coalesce(sum(c.n) filter (where c.k2 = 'no_show'), 0))
              from row_counts c where c.tenant_id = $1 and c.tenant_id = r.tenant_id and c.list = 'attendees'
                and c.k1 = (select r.id::text)))
          from events r where r.tenant_id = $1 and r.id = ${root}) as figures
      from events where events.id = $4 and events.tenant_id = $1 and events.is_deleted = false and ${EVENT_AUDIENCE}`,
      [c.tenant, c.user, c.org, Number(p.get('id'))]
    )
    const event = rows[0]
    if (event === undefined) return notFound
    return { status: 200, body: event, headers: { etag: `"${String(event.revision)}"` } }
  },

  async floor (q, _p, c) {
    const items = await q(
      `select id, scope, space_id, created_at, last_used_at from feed_tokens
        where tenant_id = $1 and user_id = $2 and revoked_at is null order by id limit 50`,
      [c.tenant, c.user]
    )
    return { status: 200, body: { items } }
  },

  async 'get-contact' (q, p, c) {
    const rows = await q<{ revision: number }>(
      `select ${CONTACT_COLUMNS} from contacts where id = $1 and (tenant_id = $2 and (owner_id = $3 or org_id = $4))`,
      [p.get('id'), c.tenant, c.user, c.org]
    )
    const row = rows[0]
    if (row === undefined) return notFound
    return { status: 200, body: row, headers: { etag: `"${row.revision}"` } }
  },

  // the service's statements for a member (events.list.repository.ts, listEvents, with the kept counts of
  // migration 0019): each visibility branch read apart in the list's order (members-only from the links'
  // copy), the page from their union; the total from the buckets of whole months, the partial month from
  // the index, the members-only class from the links' copy, and the caller's own rows (a union of their
  // index reads) that no class holds
  async 'list-events' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    const page = Number(p.get('page') ?? 1)
    const after = new Date(p.get('after') ?? 0)
    const nextMonth = new Date(Date.UTC(after.getUTCFullYear(), after.getUTCMonth() + 1, 1))
    const listed =
      'events.tenant_id = $1 and events.is_deleted = false and events.published_id is null and events.status = $4 ' +
      'and events.start_dt >= $5'
    const mySpaces =
      'array(select sm.space_id from space_members sm where sm.tenant_id = $1 and sm.user_id = $2 ' +
      'and sm.is_active = true)'
    const myLinks = 'select es.event_id from event_spaces es where es.tenant_id = $1 ' +
      `and es.space_id = any(${mySpaces}) and es.event_listed and es.event_visibility = 20`
    const managed = (column: string) =>
      `select em.${column} from event_managers em where em.tenant_id = $1 and em.user_id = $2 ` +
      `and em.status = 'active' and em.${column} is not null`
    const classes = [
      'events.visibility = 40',
      `events.visibility = 20 and coalesce(events.id in (${myLinks}), false)`,
      'events.visibility = 30 and events.org_id = $3'
    ]
    const owned = [
      'events.creator_id = $2',
      `events.id = any(array(${managed('event_id')}))`,
      'events.id = any(array(select o.id from events o where o.tenant_id = $1 ' +
      `and o.series_id in (${managed('series_id')})))`
    ]
    const order = 'order by events.start_dt asc nulls last, events.id asc'
    // by cursor: the rows after the key (start, id) of the previous page's last row, no offset
    const ks = p.get('ks')
    const keyset = ks !== null ? ' and (events.start_dt, events.id) > ($9::timestamptz, $10::bigint)' : ''
    // members-only from the links' copy of their event's start, grouped by event, in the list's order
    const linked = `select b.id
      from (select l.id from (select es.event_id as id, min(es.event_start_dt) as start_dt from event_spaces es
      where es.tenant_id = $1 and es.space_id = any(${mySpaces}) and es.event_listed and es.event_visibility = 20
        and es.event_status = $4
      and es.event_start_dt >= $5
        group by es.event_id) l${ks !== null ? ' where (l.start_dt, l.id) > ($9::timestamptz, $10::bigint)' : ''}
      order by l.start_dt, l.id limit $6) b`
    const branches = [...classes.filter(b => !b.startsWith('events.visibility = 20')), ...owned].map(
      b => `select b.id from (select events.id from events where ${listed}${keyset} and (${b}) ${order} limit $6) b`
    )
    branches.push(linked)
    const items = await q(
      'select events.* from events where events.tenant_id = $1 ' +
      `and events.id in (${branches.join(' union ')}) ${order} limit $7 offset $8`,
      [...listWindowParams(c, after, page, size, ks), ...keysetParams(p)]
    )
    const buckets = (
      visibility: number,
      org: string
    ) => `(select coalesce(sum(c.n), 0) from event_list_counts c where c.tenant_id = $1 and c.status = $4
      and c.visibility = ${visibility} ${org} and c.month >= $6::date)`
    const partial = (where: string) =>
      `(select count(*) from events where ${listed} and events.start_dt < ($6::date::timestamp at time zone 'UTC') ` +
      `and ${where})`
    const [count] = await q<{ total: number }>(
      `select ${buckets(40, '')} + ${partial('events.visibility = 40')}
      + ${buckets(30, 'and c.org_id = $3')} + ${partial('events.visibility = 30 and events.org_id = $3')}
      + (select count(distinct es.event_id) from event_spaces es where es.tenant_id = $1
        and es.space_id = any(${mySpaces}) and es.event_listed
          and es.event_visibility = 20 and es.event_status = $4 and es.event_start_dt >= $5)
      + (select count(*) from events where events.tenant_id = $1
        and events.id in (${owned.map(o => `select events.id from events where ${listed} and ${o}`).join(' union ')})
          and not coalesce(${classes.map(x => `(${x})`).join(' or ')}, false)) as total`,
      [c.tenant, c.user, c.org, 'published', after, nextMonth.toISOString().slice(0, 10)]
    )
    return {
      status: 200,
      body: { items: await withJoined(q, c.tenant, items.slice(0, size)), page, size, total: Number(count?.total ?? 0) }
    }
  },

  // contacts.repository.ts, listVisible, for a member of an organization by creation time: their own and their
  // organization's contacts, each from its index up to the page's end (one more row than asked, for the next
  // cursor), the page from their union; the total from the kept counts (row_counts, migration 0020)
  async 'list-contacts' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    const page = Number(p.get('page') ?? 1)
    const visible = 'contacts.tenant_id = $1 and (contacts.owner_id = $2 or contacts.org_id = $3)'
    const branch = (where: string) =>
      `select b.id from (select id from contacts where ${visible} and ${where} ` +
      'order by created_at desc, id desc limit $4) b'
    const kept = (where: string) =>
      `(select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'contacts' and ${where})`
    const [rows, [count]] = await Promise.all([
      q(
        `select ${CONTACT_COLUMNS}, created_at as sort_key from contacts where ${visible}
          and id in (${branch('owner_id = $2')} union ${branch('org_id = $3')}) order by created_at desc, id desc
            limit $5 offset $6`,
        [c.tenant, c.user, c.org, page * size + 1, size + 1, (page - 1) * size]
      ),
      q<{ total: number }>(`select ${kept('k1 = $2')} + ${kept('k2 = $3 and k1 <> $2')} as total`, [
        c.tenant,
        c.org,
        c.user
      ])
    ])
    return contactsPage(rows, page, size, count?.total)
  },

  // spaces.insights.repository.ts, listActivity: the space (visible to the caller), then the feed: stored items,
  // "event added" from the space's links newest first, each link's event read by key if the caller sees it, and
  // "event published" from the publishes of the space's events, each publish's event read by key the same way;
  // each source up to the page's end, then the page from the three. The total: the stored items' kept count
  // (row_counts, migration 0021) and the two event sources counted.
  async 'space-activity' (q, p, c) {
    const id = Number(p.get('id'))
    const size = Number(p.get('size') ?? 20)
    const space = await q(`${SPACE_SELECT} where spaces.id = $1 and ${SPACE_VISIBLE}`, [id, c.tenant, c.user, c.org])
    if (space[0] === undefined) return notFound
    const visibleOf = (eventId: string) =>
      `select events.id, events.title from events where events.tenant_id = $1 and events.id = ${eventId} ` +
      `and ${EVENT_VISIBLE} limit 1`
    const added = `from event_spaces es join lateral (${visibleOf('es.event_id')}) v on true where es.tenant_id = $1 ` +
      'and es.space_id = $4'
    const published = `from event_spaces es join event_activity ea on ea.tenant_id = es.tenant_id
      and ea.event_id = es.event_id
      join lateral (${visibleOf('ea.event_id')}) v on true where es.tenant_id = $1 and es.space_id = $4
        and ea.kind = 'published'`
    const first = (select: string, order: string) => `(select * from (${select} order by ${order} limit $5) f)`
    const [rows, [count]] = await Promise.all([
      q(
        `select x.created_at, x.message, x.resource_id, x.title, x.type from (
          ${first('select a.created_at, a.message, a.resource_id, a.title, a.type, 0 as src, a.id as seq ' +
            'from space_activity a where a.tenant_id = $1 and a.space_id = $4', 'created_at desc, src desc, seq desc')}
          union all ${first("select es.created_at, 'event added to the space' as message, " +
            `v.id::text as resource_id, v.title, 'event' as type, 1 as src, es.id as seq ${added}`,
            'created_at desc, src desc, seq desc')}
          union all ${first("select ea.at as created_at, 'event published' as message, " +
            `v.id::text as resource_id, v.title, 'event' as type, 2 as src, ea.id as seq ${published}`,
            'created_at desc, src desc, seq desc')}
        ) x order by x.created_at desc, x.src desc, x.seq desc limit $5 offset 0`,
        [c.tenant, c.user, c.org, id, size + 1]
      ),
      q<{ total: number }>(
        `select (select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'space_activity'
          and k1 = ($4::bigint)::text)
          + (select count(*) ${added}) + (select count(*) ${published}) as total`,
        [c.tenant, c.user, c.org, id]
      )
    ])
    return { status: 200, body: { items: rows.slice(0, size), page: 1, total: Number(count?.total ?? 0) } }
  },

  // automation.service.ts: the rule (tenant admins may read every rule), then automation.repository.ts listExecutions
  async 'rule-executions' (q, p, c) {
    const id = p.get('id')
    const size = Number(p.get('size') ?? 20)
    const [rule] = await q('select * from automation_rules where tenant_id = $1 and id = $2', [c.tenant, id])
    if (rule === undefined) return notFound
    const [rows, [count]] = await Promise.all([
      q(
        'select * from automation_executions where tenant_id = $1 and rule_id = $2 order by created_at desc, id desc ' +
        'limit $3 offset 0',
        [c.tenant, id, size + 1]
      ),
      // the total from the kept counts (row_counts, migration 0020)
      q<{ n: number }>(
        "select coalesce(sum(n), 0) as n from row_counts where tenant_id = $1 and list = 'executions' and k1 = $2",
        [c.tenant, id]
      )
    ])
    return { status: 200, body: { items: rows.slice(0, size), page: 1, total: Number(count?.n ?? 0) } }
  },

  async 'search-contacts' (q, p, c) {
    const term = p.get('query') ?? ''
    const limit = Number(p.get('limit') ?? 20)
    const like = `%${term.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`
    const rows = await q<{ total: string }>(
      `select ${CONTACT_COLUMNS.split(', ')
        .map(col => `c.${col}`)
        .join(', ')}, m.total from (
        select id, last_name, first_name, similarity(search_text, $5) as rank, count(*) over () as total from contacts
        where (tenant_id = $1 and (owner_id = $2 or org_id = $3)) and search_text like $4
        order by rank desc, last_name, first_name, id limit $6) m
      join contacts c on c.tenant_id = $1 and c.id = m.id
      order by m.rank desc, m.last_name, m.first_name, m.id`,
      [c.tenant, c.user, c.org, like, term.toLowerCase(), limit]
    )
    return {
      status: 200,
      body: {
        items: rows.map(({ total: _total, ...contact }) => contact),
        query: term,
        total: Number(rows[0]?.total ?? 0)
      }
    }
  },

  // contacts.repository.ts, searchVisible, for a term that looks like a phone number: the matches by text or by
  // number ranked and counted in one pass, the page's full rows by key
  async 'search-contacts-phone' (q, p, c) {
    const term = p.get('query') ?? ''
    const limit = Number(p.get('limit') ?? 20)
    const match = contactSearch(term, p.get('region'), 6)
    const rows = await q<{ total: string }>(
      `select ${CONTACT_PHONE_COLUMNS.split(', ').map(col => `c.${col}`).join(', ')}, m.total from (
        select id, last_name, first_name, similarity(search_text, $4) as rank, count(*) over () as total from contacts
        where (tenant_id = $1 and (owner_id = $2 or org_id = $3)) and ${match.where}
        order by rank desc, last_name, first_name, id limit $5) m
      join contacts c on c.tenant_id = $1 and c.id = m.id
      order by m.rank desc, m.last_name, m.first_name, m.id`,
      [c.tenant, c.user, c.org, term.toLowerCase(), limit + 1, ...match.params]
    )
    return {
      status: 200,
      body: {
        items: rows.slice(0, limit).map(({ total: _total, ...contact }) => contact),
        query: term,
        total: Number(rows[0]?.total ?? 0)
      }
    }
  },

  // contacts.repository.ts, listVisible with a search that looks like a phone number, newest first: the page of the
  // matches and their count, two statements
  async 'list-contacts-phone' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    const page = Number(p.get('page') ?? 1)
    const match = contactSearch((p.get('query') ?? '').trim(), p.get('region'), 4)
    const where = `tenant_id = $1 and (owner_id = $2 or org_id = $3) and ${match.where}`
    const paging = 4 + match.params.length
    const [rows, [count]] = await Promise.all([
      q(
        `select ${CONTACT_PHONE_COLUMNS}, created_at as sort_key from contacts where ${where}
          order by created_at desc, id desc limit $${paging} offset $${paging + 1}`,
        [c.tenant, c.user, c.org, ...match.params, size + 1, (page - 1) * size]
      ),
      q<{ total: string }>(`select count(*) as total from contacts where ${where}`,
        [c.tenant, c.user, c.org, ...match.params])
    ])
    return contactsPage(rows, page, size, count?.total)
  },

  // contacts.duplicates.repository.ts, listDuplicates, first page: whether the caller sees few contacts; the walk of
  // the key indexes (merged in key order, grouped as it streams, at most DUPLICATES_BUDGET entries); the groups of the
  // key where the walk stopped counted whole; the first contacts of each group, oldest first, from its key's index
  async 'contact-duplicates' (q, p, c) {
    const limit = Number(p.get('limit') ?? 20)
    const reason = p.get('reason')
    const reasons = reason !== null ? [reason] : Object.keys(DUPLICATE_KEYS)
    const visible = '(tenant_id = $1 and (owner_id = $2 or org_id = $3))'
    const params = [c.tenant, c.user, c.org]
    const [few] = await q<{ n: string }>(
      `select (select count(*)
        from (select from contacts where tenant_id = $1 and owner_id = $2 limit ${DUPLICATES_FEW + 1}) as own)
        + (select count(*)
          from (select from contacts where tenant_id = $1 and org_id = $3 limit ${DUPLICATES_FEW + 1}) as shared) as n`,
      params
    )
    const columns = reasons.flatMap(r => (DUPLICATE_KEYS[r]?.columns ?? []).map(([column, once]) =>
      ({ column, once, rank: DUPLICATE_KEYS[r]?.rank ?? 0, reason: r })))
    const entries = Number(few?.n ?? 0) <= DUPLICATES_FEW
      ? `select k.key, k.reason, true as seen from contacts cross join lateral (values ${columns.map(k =>
          `(case when ${k.once} then ${k.column} end, ${k.rank})`).join(', ')}) as k (key, reason)
        where ${visible} and k.key is not null`
      : columns.map(k => `(select ${k.column} as key, ${k.rank} as reason, ${visible} as seen from contacts
          where tenant_id = $1 and ${k.column} is not null and ${k.once} order by ${k.column})`).join(' union all ')
    const keys = await q<{ key: string, n1: string, n2: string, n3: string, last: string }>(
      `select key, n1, n2, n3, last from (
        select key, count(*) filter (where seen and reason = 1) as n1,
          count(*) filter (where seen and reason = 2) as n2,
               count(*) filter (where seen and reason = 3) as n3, max(at) as last
        from (
          select key, reason, seen, row_number() over (order by key) as at from (${entries}) as entries
          order by key limit ${DUPLICATES_BUDGET}
        ) as walked
        group by key
      ) as keys
      where n1 >= 2 or n2 >= 2 or n3 >= 2 or last = ${DUPLICATES_BUDGET}
      order by key limit $4`,
      [...params, limit + 1]
    )
    const groupsOf = (k: { key: string, n1: string, n2: string, n3: string }) => Object.keys(DUPLICATE_KEYS)
      .map((r, i) => ({ reason: r, key: k.key, count: Number([k.n1, k.n2, k.n3][i]) }))
      .filter(g => g.count >= 2)
    const edge = keys.find(k => Number(k.last) === DUPLICATES_BUDGET)
    const groups = keys.filter(k => k !== edge).flatMap(groupsOf)
    let resume: [string, number] | undefined
    if (edge !== undefined) {
      for (const r of reasons) {
        const held = (DUPLICATE_KEYS[r]?.columns ?? []).map(([column, once]) =>
          `(select id from contacts where ${column} = $4 and ${visible} and ${once})`)
        const [n] = await q<{ n: string }>(`select count(*) as n from (${held.join(' union all ')}) as held`,
          [...params, edge.key])
        if (Number(n?.n ?? 0) >= 2) groups.push({ reason: r, key: edge.key, count: Number(n?.n) })
      }
      resume = [edge.key, Math.max(...reasons.map(r => DUPLICATE_KEYS[r]?.rank ?? 0))]
    }
    const items = groups.slice(0, limit)
    const last = items[items.length - 1]
    const next = groups.length > limit && last !== undefined ? [last.key, DUPLICATE_KEYS[last.reason]?.rank] : resume
    const contacts: Array<Array<Record<string, unknown>>> = items.map(() => [])
    if (items.length > 0) {
      const values = items.map((g, i) => `(${i}::int, $${4 + 2 * i}::text, $${5 + 2 * i}::int)`)
      const branches = Object.values(DUPLICATE_KEYS).map(({ rank, columns: cols }) =>
        `(select id, created_at from (${cols.map(([column, once]) => `(select id, created_at from contacts
          where ${column} = g.key and ${visible} and ${once} and g.reason = ${rank}
          order by created_at, id limit ${GROUP_CONTACTS})`).join(' union all ')}) as held)`)
      const rows = await q<{ ord: number }>(
        `select g.ord, ${CONTACT_PHONE_COLUMNS.split(', ').map(col => `c.${col}`).join(', ')}
        from (values ${values.join(', ')}) as g (ord, key, reason)
        cross join lateral (
          select id, created_at from (${branches.join(' union all ')}) as held
          order by created_at, id limit ${GROUP_CONTACTS}
        ) as first
        join contacts c on c.tenant_id = $1 and c.id = first.id
        order by g.ord, first.created_at, first.id`,
        [...params, ...items.flatMap(g => [g.key, DUPLICATE_KEYS[g.reason]?.rank])]
      )
      for (const { ord, ...contact } of rows) contacts[ord]?.push(contact)
    }
    return {
      status: 200,
      body: {
        items: items.map((g, i) => ({ ...g, key: g.key.replaceAll('\u001f', ' | '), contacts: contacts[i] ?? [] })),
        next_cursor: next === undefined ? null : Buffer.from(JSON.stringify(next)).toString('base64url')
      }
    }
  },

  // the statements of the service's calendar when none of the month's events is cached
  // (events.service.ts, renderEvents): rows and versions, then spaces, series titles and the
  // events' JSON rendered by PostgreSQL
  async 'calendar-month' (q, p, c) {
    const from = new Date(`${p.get('start') ?? ''}T00:00:00Z`)
    const to = new Date(new Date(`${p.get('end') ?? ''}T00:00:00Z`).getTime() + 86_400_000)
    const rows = await q<{ id: number; version: string; series_id: number | null }>(
      `select events.id, events.xmin::text as version, events.series_id
      from events where ${EVENT_VISIBLE} and events.status in ('draft', 'published')
      and events.start_dt is not null and events.start_dt < $4
      and events.start_dt >= (select $5::timestamptz - coalesce(max(coalesce(longest.end_dt,
        longest.start_dt) - longest.start_dt), interval '0') from events longest
        where longest.tenant_id = $1 and not longest.is_deleted and longest.published_id is null
          and longest.start_dt is not null)
      and coalesce(events.end_dt, events.start_dt) >= $5
      order by events.start_dt asc, events.id asc limit $6`,
      [c.tenant, c.user, c.org, to, from, 5000]
    )
    const ids = rows.map(r => r.id)
    const seriesIds = [...new Set(rows.flatMap(r => r.series_id === null ? [] : [r.series_id]))]
    const [spaces, titles, rendered] = await Promise.all([
      spacesOf(q, c.tenant, ids),
      seriesIds.length === 0
        ? []
        : q<{ id: number; title: string }>(
          'select id, title from event_series where tenant_id = $1 and id = any($2::bigint[])',
          [c.tenant, seriesIds]
        ),
      q<{ id: number; json: string }>(
        `select events.id, to_json(r)::text as json from events cross join lateral (select ${EVENT_JSON_COLUMNS}) r
        where events.tenant_id = $1 and events.id = any($2::bigint[])`,
        [c.tenant, ids]
      )
    ])
    const title = new Map(titles.map(t => [t.id, t.title]))
    const json = new Map(rendered.map(r => [r.id, r.json]))
    const items = rows.map(
      r =>
        `${json.get(r.id)?.slice(0, -1) ?? '{'},"series_title":` +
        `${JSON.stringify(r.series_id === null ? null : (title.get(r.series_id) ?? null))},"spaces":` +
        `${JSON.stringify(spaces.get(r.id) ?? [])}}`
    )
    return { status: 200, json: `{"items":[${items.join(',')}],"next_cursor":null}` }
  },

  async 'space-analytics' (q, p, c) {
    const id = Number(p.get('id'))
    const space = await q<{ id: number; creator_id: string }>(
      `${SPACE_SELECT} where spaces.id = $1 and ${SPACE_VISIBLE}`,
      [id, c.tenant, c.user, c.org]
    )
    if (space[0] === undefined) return notFound
    if (space[0].creator_id !== c.user) {
      const m = await q(
        'select id, role, permissions from space_managers where tenant_id = $1 and space_id = $2 and user_id = $3 ' +
        "and status = 'active'",
        [c.tenant, id, c.user]
      )
      if (m.length === 0) return { status: 403 }
    }
    const [att] = await q<{ ok: boolean }>("select to_regclass('attendees') is not null as ok")
    const counts =
      att?.ok === true
        ? `select a.event_id,
          count(*) filter (where a.status in ('confirmed', 'tentative', 'checked_in') or a.is_checked_in)::int as rsvps,
           count(*) filter (where a.is_checked_in or a.status = 'checked_in')::int as attended,
           count(*) filter (where a.status = 'no_show')::int as no_shows
         from attendees a where a.tenant_id = $1 and a.event_id in (select event_id from linked) group by a.event_id`
        : 'select null::bigint as event_id, 0 as rsvps, 0 as attended, 0 as no_shows where false'
    const events = await q(
      `with linked as (
        select e.id as event_id, e.title, e.status, e.start_dt, e.end_dt from event_spaces es
        join events e on e.tenant_id = es.tenant_id and e.id = es.event_id
        where es.tenant_id = $1 and es.space_id = $2 and not e.is_deleted and e.published_id is null
          and e.status <> 'draft'
      ), counts as (${counts})
      select l.event_id, l.title, l.status, l.start_dt as start_at, l.end_dt as end_at,
        coalesce(l.start_dt > now(), false) as upcoming,
             coalesce(c.rsvps, 0)::int as rsvps, coalesce(c.attended, 0)::int as attended,
             coalesce(c.no_shows, 0)::int as no_shows
      from linked l left join counts c on c.event_id = l.event_id order by l.start_dt desc nulls last, l.event_id desc`,
      [c.tenant, id]
    )
    const growth = await q(
      `with weeks as (
        select (date_trunc('week',
          now() at time zone 'UTC') - make_interval(weeks => g)) at time zone 'UTC' as week_start
        from generate_series($3::int, 0, -1) g)
      select w.week_start as date, (select count(*)::int from space_members m where m.tenant_id = $1 and m.space_id = $2
          and m.created_at < w.week_start + interval '7 days'
            and (m.removed_at is null or m.removed_at >= w.week_start + interval '7 days')) as members
      from weeks w order by w.week_start`,
      [c.tenant, id, 11]
    )
    const [members] = await q<{ n: number }>(
      'select count(*) as n from space_members where tenant_id = $1 and space_id = $2 and is_active = $3',
      [c.tenant, id, true]
    )
    return {
      status: 200,
      body: {
        events_performance: events.slice(0, 50),
        member_growth: growth,
        summary: { active_members: Number(members?.n ?? 0), events: events.length }
      }
    }
  },

  async 'public-space' (q, p) {
    const [entry] = await q<{ tenant_id: string; space_id: number }>(
      'select tenant_id, space_id from public_spaces where handle = $1',
      [p.get('handle')]
    )
    if (entry === undefined) return notFound
    const t = entry.tenant_id
    const id = entry.space_id
    const shown = 'spaces.id, spaces.title, spaces.description, spaces.timezone, spaces.visibility, spaces.published_at'
    const [space] = await q<{ creator_id: string }>(
      `select ${shown}, spaces.creator_id, spaces.org_id from spaces where ${PUBLIC_SPACES} and spaces.id = $2`,
      [t, id]
    )
    if (space === undefined) return notFound
    const parent = await q(
      `select spaces.id from spaces inner join space_parents as p on p.tenant_id = spaces.tenant_id
        and p.parent_id = spaces.id
      where ${PUBLIC_SPACES} and p.space_id = $2 order by spaces.id limit 1`,
      [t, id]
    )
    const childBase = 'from spaces inner join space_parents as p on p.tenant_id = spaces.tenant_id ' +
      `and p.space_id = spaces.id where ${PUBLIC_SPACES} and p.parent_id = $2`
    const children = await q(`select ${shown} ${childBase} order by spaces.position, spaces.id limit 50`, [t, id])
    const [childCount] = await q<{ total: number }>(`select count(*) as total ${childBase}`, [t, id])
    const mgrBase = `from space_managers as m left join users as u on u.tenant_id = m.tenant_id and u.id = m.user_id
      where m.tenant_id = $1 and m.space_id = $2 and m.status = 'active' and (u.state is null or u.state <> 'removed')`
    const managers = await q(`select ${PROFILE} ${mgrBase} order by m.created_at, m.id limit 12`, [t, id])
    const [mgrCount] = await q<{ total: number }>(`select count(*) as total ${mgrBase}`, [t, id])
    const memBase = `from space_members as sm left join users as u on u.tenant_id = sm.tenant_id and u.id = sm.user_id
      where sm.tenant_id = $1 and sm.space_id = $2 and sm.is_active = true
        and (u.state is null or u.state <> 'removed')`
    const members = await q(`select ${PROFILE} ${memBase} order by sm.created_at, sm.user_id limit 24`, [t, id])
    const [memCount] = await q<{ total: number }>(`select count(*) as total ${memBase}`, [t, id])
    const evBase = `from event_spaces as es inner join events as e on e.tenant_id = es.tenant_id and e.id = es.event_id
      where es.tenant_id = $1 and es.space_id = $2 and e.status = 'published' and e.visibility = 40
        and e.is_deleted = false and e.published_id is null`
    const events = await q(
      `select e.id, e.title, e.timezone, e.address, e.description, e.start_dt, e.end_dt ${evBase}
      and coalesce(e.end_dt, e.start_dt, 'infinity'::timestamptz) >= now()
        order by e.start_dt asc nulls last, e.id limit 10`,
      [t, id]
    )
    const [evCount] = await q<{ total: number }>(`select count(*) as total ${evBase}`, [t, id])
    const [owner] = await q(
      `select ${PROFILE} from users as u where u.tenant_id = $1 and u.id = $2 and u.state <> 'removed'`,
      [t, space.creator_id]
    )
    const page = {
      space: {
        ...Object.fromEntries(Object.entries(space).filter(([k]) => k !== 'creator_id' && k !== 'org_id')),
        parent_id: parent[0]?.id
      },
      subspaces: children,
      managers,
      members,
      stats: {
        events_count: evCount?.total,
        managers_count: mgrCount?.total,
        members_count: memCount?.total,
        subspaces_count: childCount?.total
      },
      upcoming_events: events,
      owner
    }
    const etag = `W/"${crypto.createHash('sha256').update(JSON.stringify(page)).digest('base64url').slice(0, 27)}"`
    return { status: 200, body: page, headers: { etag } }
  },

  async 'create-contact' (q, _p, c, body) {
    const b = body as Record<string, string>
    await q('begin')
    try {
      const [row] = await q<{ id: string; email: string; revision: number }>(
        'insert into contacts (first_name, last_name, email, company, tenant_id, owner_id, org_id) ' +
        `values ($1, $2, $3, $4, $5, $6, $7) returning ${CONTACT_COLUMNS}`,
        [b.first_name, b.last_name, b.email, b.company, c.tenant, c.user, c.org]
      )
      await q(
        'insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth) ' +
        'values ($1, $2, $3, $4, $5, $6, $7)',
        [
          c.tenant,
          'contact.created',
          'contact',
          row?.id,
          c.user,
          JSON.stringify({ contact_id: row?.id, email: row?.email, source: 'api' }),
          0
        ]
      )
      await q('commit')
      return {
        status: 201,
        body: row,
        headers: { etag: `"${String(row?.revision)}"`, location: `/api/v1/contacts/${String(row?.id)}` }
      }
    } catch (err) {
      await q('rollback')
      throw err
    }
  },

  async 'patch-event' (q, p, c, body) {
    const id = Number(p.get('id'))
    const ifMatch = p.get('if_match')
    await q('begin')
    try {
      const [row] = await q<Record<string, unknown>>(
        `select * from events where events.tenant_id = $1 and events.id = $4 and ${EVENT_AUDIENCE} for update`,
        [c.tenant, c.user, c.org, id]
      )
      if (row === undefined) { await q('rollback'); return notFound }
      let target = row
      if (row.published_id === null && row.status === 'published') {
        const [clone] = await q<Record<string, unknown>>(
          'select * from events where tenant_id = $1 and published_id = $2 for update',
          [c.tenant, id]
        )
        target = clone ?? row
      }
      if (ifMatch !== null && ifMatch !== `"${String(target.revision)}"`) {
        await q('rollback')
        return { status: 412 }
      }
      const b = body as { title: string }
      const [updated] = await q<Record<string, unknown>>(
        `update events set title = $1, revision = revision + 1, updated_at = now()
        where tenant_id = $2 and id = $3 returning *`,
        [b.title, c.tenant, target.id]
      )
      if (updated === undefined) throw new Error('update lost its row')
      const payload = { fields: ['title'], draft: updated.published_id !== null }
      await q(
        'insert into event_activity (tenant_id, event_id, org_id, actor_id, kind, payload) ' +
        'values ($1, $2, $3, $4, $5, $6) returning id, event_id, org_id, actor_id, kind, payload, at',
        [c.tenant, id, updated.org_id, c.user, 'edited', JSON.stringify(payload)]
      )
      await q(
        'insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth) ' +
        'values ($1, $2, $3, $4, $5, $6, $7)',
        [
          c.tenant,
          'event.updated',
          'event',
          String(id),
          c.user,
          JSON.stringify({
            event_id: id,
            template: updated.template,
            title: updated.title,
            status: updated.status,
            ...payload
          }),
          0
        ]
      )
      const [event] = await withSpaces(q, c.tenant, [updated])
      await q('commit')
      return { status: 200, body: event, headers: { etag: `"${String(updated.revision)}"` } }
    } catch (err) {
      await q('rollback')
      throw err
    }
  },

  async 'idp-webhook' (q, _p, _c, body) {
    const e = body as {
      resourceOwner: string
      aggregateID: string
      instanceID: string
      sequence: number
      event_type: string
      event_payload: Record<string, string>
    }
    const t = e.resourceOwner
    await q('begin')
    try {
      await q('select pg_advisory_xact_lock(hashtext($1), hashtext($2))', [`users:${t}`, e.aggregateID])
      const seen = await q(
        'select outcome from idp_deliveries where tenant_id = $1 and instance_id = $2 and aggregate_id = $3 ' +
        'and sequence = $4',
        [t, e.instanceID, e.aggregateID, e.sequence]
      )
      if (seen.length > 0) { await q('commit'); return { status: 200, body: { status: 'duplicate' } } }
      await q('select pg_advisory_xact_lock(hashtext($1), hashtext($2))', [`users:${t}`, e.aggregateID])
      await q('select * from users where tenant_id = $1 and id = $2', [t, e.aggregateID])
      // the update takes its time from the inserted row (`excluded`): Citus refuses now() in DO UPDATE SET on a
      // distributed table
      await q(
        `insert into users (display_name, state, idp_sequence, tenant_id, id, removed_at, updated_at)
          values ($1, 'active', $2, $3, $4, null, now())
        on conflict (tenant_id, id) do update set display_name = $5, state = 'active', idp_sequence = $6,
          removed_at = null, updated_at = excluded.updated_at returning *`,
        [e.event_payload.displayName, e.sequence, t, e.aggregateID, e.event_payload.displayName, e.sequence]
      )
      await q(
        'insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth) ' +
        'values ($1, $2, $3, $4, $5, $6, $7)',
        [
          t,
          'user.updated',
          'user',
          e.aggregateID,
          null,
          JSON.stringify({ user_id: e.aggregateID, state: 'active', fields: ['display_name'] }),
          0
        ]
      )
      await q(
        'insert into idp_deliveries (tenant_id, instance_id, aggregate_id, sequence, event_type, outcome) ' +
        'values ($1, $2, $3, $4, $5, $6) on conflict do nothing returning sequence',
        [t, e.instanceID, e.aggregateID, e.sequence, e.event_type, 'applied']
      )
      await q('commit')
      return { status: 200, body: { status: 'applied' } }
    } catch (err) {
      await q('rollback')
      throw err
    }
  },

  async 'get-series' (q, p, c) {
    const id = Number(p.get('id'))
    const limit = Number(p.get('limit') ?? 200)
    const [row] = await q<{ series_id: number | null }>(
      'select * from events where events.id = $4 and events.tenant_id = $1 and events.is_deleted = false ' +
      `and ${EVENT_AUDIENCE}`,
      [c.tenant, c.user, c.org, id]
    )
    if (row?.series_id == null) return notFound
    const [series] = await q('select * from event_series where tenant_id = $1 and id = $2 and is_deleted = $3', [
      c.tenant,
      row.series_id,
      false
    ])
    const managers = await q(
      'select * from event_managers where tenant_id = $1 and series_id = $2 order by created_at desc, id desc limit 1',
      [c.tenant, row.series_id]
    )
    const where = `${EVENT_VISIBLE.replace('events.published_id is null and ', '')} and events.series_id = $4`
    const items = await q<Record<string, unknown>>(
      `select events.* from events where ${where} order by events.start_dt, events.series_index, events.id ` +
      'limit $5 offset $6',
      [c.tenant, c.user, c.org, row.series_id, limit, 0]
    )
    const [count] = await q<{ total: number }>(`select count(*) as total from events where ${where}`, [
      c.tenant,
      c.user,
      c.org,
      row.series_id
    ])
    const occurrences = await withSpaces(q, c.tenant, items)
    const attendees = await q<{ status: string; contact_id: string }>(
      `select a.status, a.contact_id from attendees as a where a.tenant_id = $1 and
      ((a.series_id = $2 and a.event_id is null)
        or a.event_id in (select events.id from events where events.tenant_id = $1 and events.series_id = $2
        and events.is_deleted = false and events.published_id is null))`,
      [c.tenant, row.series_id]
    )
    const counts: Record<string, number> = {}
    for (const a of attendees) counts[a.status] = (counts[a.status] ?? 0) + 1
    return {
      status: 200,
      body: {
        series: { ...series, manager: managers[0] },
        occurrences,
        attendee_counts: counts,
        total_attendees: new Set(attendees.map(a => a.contact_id)).size,
        total: count?.total
      }
    }
  },

  async 'create-series' (q, _p, c, body) {
    const b = body as {
      title: string
      start_dt: string
      end_dt: string
      timezone: string
      series: { end_count: number }
    }
    const start = new Date(b.start_dt)
    const length = new Date(b.end_dt).getTime() - start.getTime()
    await q('begin')
    try {
      const [series] = await q<{ id: number }>(
        `insert into event_series (tenant_id, org_id, creator_id, title, start_dt, end_dt, timezone, freq, interval,
          repeat_days,
        ends_on, end_count, duration) values ($1, $2, $3, $4, $5, $6, $7, 'weekly', 1, $8, 'after_n', $9, $10)
          returning *`,
        [
          c.tenant,
          c.org,
          c.user,
          b.title,
          start,
          new Date(b.end_dt),
          b.timezone,
          [start.getUTCDay() === 0 ? 7 : start.getUTCDay()],
          b.series.end_count,
          '02:00:00'
        ]
      )
      const ids: number[] = []
      for (let from = 0; from < b.series.end_count; from += 100) {
        const n = Math.min(100, b.series.end_count - from)
        const values: unknown[] = []
        const rows: string[] = []
        for (let k = from; k < from + n; k++) {
          const st = new Date(start.getTime() + k * 7 * 86_400_000)
          const i = values.length
          values.push(c.tenant, c.org, c.user, b.title, st, new Date(st.getTime() + length), b.timezone, series?.id, k)
          rows.push(`(${Array.from({ length: 9 }, (_, j) => `$${i + j + 1}`).join(', ')})`)
        }
        const inserted = await q<{ id: number }>(
          `insert into events (tenant_id, org_id, creator_id, title, start_dt, end_dt, timezone, series_id,
            series_index)
          values ${rows.join(', ')} returning *`,
          values
        )
        ids.push(...inserted.map(r => r.id))
      }
      await q(
        'insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth) ' +
        'values ($1, $2, $3, $4, $5, $6, $7)',
        [
          c.tenant,
          'series.created',
          'series',
          String(series?.id),
          c.user,
          JSON.stringify({ series_id: series?.id, occurrences: ids.length }),
          0
        ]
      )
      await q('commit')
      return { status: 201, body: { series, occurrences: ids.length } }
    } catch (err) {
      await q('rollback')
      throw err
    }
  },

  async 'bulk-attendees' (q, p, c, body) {
    const id = Number(p.get('id'))
    const b = body as { contact_ids: string[] }
    await q('begin')
    try {
      const [event] = await q<{ org_id: string | null }>(
        'select * from events where tenant_id = $1 and id = $2 for update',
        [c.tenant, id]
      )
      if (event === undefined) { await q('rollback'); return notFound }
      const found = await q<{ id: string }>('select id from contacts where tenant_id = $1 and id = any($2::uuid[])', [
        c.tenant,
        b.contact_ids
      ])
      const added = await q<{ contact_id: string }>(
        `insert into attendees (tenant_id, event_id, contact_id, org_id, status)
        select $1, $2, x, $3, 'invited' from unnest($4::uuid[]) x
        on conflict (tenant_id, event_id, contact_id) do nothing returning contact_id`,
        [c.tenant, id, event.org_id, found.map(f => f.id)]
      )
      await q(
        'insert into outbox (tenant_id, topic, aggregate_type, aggregate_id, actor_id, payload, depth) ' +
        'values ($1, $2, $3, $4, $5, $6, $7)',
        [
          c.tenant,
          'attendees.added',
          'event',
          String(id),
          c.user,
          JSON.stringify({ event_id: id, contact_ids: added.map(a => a.contact_id) }),
          0
        ]
      )
      await q('commit')
      return { status: 204 }
    } catch (err) {
      await q('rollback')
      throw err
    }
  },

  async 'unauthorized' () {
    return {
      status: 401,
      body: { status: 401, title: 'Unauthorized', detail: 'invalid or expired token' },
      headers: { 'www-authenticate': 'Bearer' }
    }
  }
}
