/**
 * The references: for each list-shaped scenario, the fastest SQL written by hand for the same answer
 * as the service's (same rows in the same order, same totals), with no constraint from the service's
 * code: one statement a request, the body rendered by PostgreSQL, every part walking an index in the
 * answer's order and stopping at the page's end. `GET /r/<scenario>` on the baseline server, with the
 * caller in the query string as for the baseline. Plans: docs/performance.md, "Independent references".
 */
import crypto from 'node:crypto'
import {
  CONTACT_COLUMNS, EVENT_JSON_COLUMNS, keysetParams, listWindowParams, notFound, PROFILE, PUBLIC_SPACES, SPACE_SELECT,
  SPACE_VISIBLE, type BaselineAnswer, type Handler, type Query
} from './baseline-handlers.ts'

/**
 * Runs one statement that answers `{ json }`, and sends it as the body: prepared once per connection (no
 * planning per request), unless its plan depends on the values (`forValues`: a text pattern's selectivity).
 */
async function one (q: Query, text: string, params: unknown[], forValues = false): Promise<BaselineAnswer> {
  const name = forValues ? undefined : `r_${crypto.createHash('sha1').update(text).digest('hex').slice(0, 16)}`
  const [row] = await q<{ json: string | null }>(text, params, name)
  return row?.json == null ? notFound : { status: 200, json: row.json }
}

const eventJson = (alias: string) =>
  `(select to_json(r)::text from (select ${EVENT_JSON_COLUMNS.replaceAll('events.', `${alias}.`)}) r)`

/** The event's spaces and series title, as the service's Event carries them */
const eventExtras = (
  alias: string
) => `(select coalesce(json_agg(json_build_object('id', s.id, 'title', s.title) order by s.id), '[]'::json)
    from event_spaces es join spaces s on s.tenant_id = es.tenant_id and s.id = es.space_id
    where es.tenant_id = $1 and es.event_id = ${alias}.id and not s.is_deleted) as spaces,
  (select sr.title from event_series sr where sr.tenant_id = $1 and sr.id = ${alias}.series_id) as series_title`

export const REFERENCES: Record<string, Handler> = {
  // One statement: the member's spaces once; each visibility branch read from its index in the list's order up
  // to the page's end (members-only from the links, which carry their event's start); the page's rows by key,
  // rendered with their spaces; the total from the kept counts, the partial month, the links, and the caller's
  // own rows (created, managed) that no class holds
  async 'list-events' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    const page = Number(p.get('page') ?? 1)
    const after = new Date(p.get('after') ?? 0)
    const nextMonth = new Date(Date.UTC(after.getUTCFullYear(), after.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)
    const ks = p.get('ks')
    const keyset = (start: string, id: string) =>
      ks !== null ? ` and (${start}, ${id}) > ($12::timestamptz, $13::bigint)` : ''
    const listed =
      'e.tenant_id = $1 and not e.is_deleted and e.published_id is null and e.status = $4 and e.start_dt >= $5'
    const managed = (
      column: string
    ) => `array(select em.${column} from event_managers em where em.tenant_id = $1 and em.user_id = $2
      and em.status = 'active' and em.${column} is not null)`
    const order = 'order by e.start_dt, e.id'
    // the occurrences of managed series by key first: a list of ids the planner cannot mistake for a large share of the
    // tenant
    const ofSeries = 'e.id = any(array(select o.id from events o where o.tenant_id = $1 ' +
      `and o.series_id = any(${managed('series_id')})))`
    const branch = (where: string) =>
      `(select e.id, e.start_dt from events e where ${listed}${keyset('e.start_dt', 'e.id')} ` +
      `and ${where} ${order} limit $6)`
    const owned = (where: string) => `select e.id, e.visibility, e.org_id from events e where ${listed} and ${where}`
    const text = `with mine as materialized (
        select array(select sm.space_id from space_members sm where sm.tenant_id = $1 and sm.user_id = $2
          and sm.is_active) as spaces),
      linked as materialized (
        select es.event_id, min(es.event_start_dt) as start_dt from event_spaces es, mine where es.tenant_id = $1
          and es.space_id = any(mine.spaces)
          and es.event_listed and es.event_visibility = 20 and es.event_status = $4 and es.event_start_dt >= $5
            group by es.event_id),
      ids as (
        ${branch('e.visibility = 40')} union ${branch('e.visibility = 30 and e.org_id = $3')}
        union (select l.event_id, l.start_dt from linked l where true${keyset('l.start_dt', 'l.event_id')}
          order by l.start_dt, l.event_id limit $6)
        union ${branch('e.creator_id = $2')} union ${branch(`e.id = any(${managed('event_id')})`)}
          union ${branch(ofSeries)}),
      chosen as (select id, start_dt from ids order by start_dt, id limit $7 offset $8),
      page as (select e.*, ${eventExtras('e')} from chosen join events e on e.tenant_id = $1 and e.id = chosen.id),
      partial as (select count(*) filter (where e.visibility = 40) + count(*) filter (where e.visibility = 30
        and e.org_id = $3) as n
        from events e where ${listed} and e.visibility in (30, 40)
          and e.start_dt < ($9::date::timestamp at time zone 'UTC'))
      select json_build_object(
        'items', (select coalesce(json_agg(to_json(page) order by page.start_dt, page.id), '[]'::json)
          from (select * from page order by page.start_dt, page.id limit $11) page),
        'page', $10::int, 'size', $11::int,
        'total', (select coalesce(sum(k.n), 0) from event_list_counts k where k.tenant_id = $1 and k.status = $4
          and k.month >= $9::date
                    and (k.visibility = 40 or (k.visibility = 30 and k.org_id = $3)))
          + (select n from partial) + (select count(*) from linked)
          + (select count(*) from (${owned('e.creator_id = $2')} union ${owned(`e.id = any(${managed('event_id')})`)}
              union ${owned(ofSeries)}) o
            where not (o.visibility = 40 or (o.visibility = 30 and o.org_id = $3)
              or (o.visibility = 20 and o.id in (select event_id from linked))))
      )::text as json`
    const params = [...listWindowParams(c, after, page, size, ks), nextMonth, page, size, ...keysetParams(p)]
    return await one(q, text, params)
  },

  // The owner's contacts and the organization's, each from its index (newest first) up to the page's end;
  // the total from the kept counts (row_counts, migration 0020)
  async 'list-contacts' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    const page = Number(p.get('page') ?? 1)
    const cols = CONTACT_COLUMNS.split(', ').map(x => `k.${x}`).join(', ')
    return await one(
      q,
      `with ids as (
        (select id, created_at from contacts where tenant_id = $1 and owner_id = $2
          order by created_at desc, id desc limit $4)
        union (select id, created_at from contacts where tenant_id = $1 and org_id = $3
          order by created_at desc, id desc limit $4)),
      page as (select ids.id, ids.created_at from ids order by ids.created_at desc, ids.id desc limit $5 offset $6)
      select json_build_object(
        'items', (select coalesce(json_agg(to_json(r) order by page.created_at desc, page.id desc), '[]'::json)
          from page join contacts k on k.tenant_id = $1 and k.id = page.id cross join lateral (select ${cols}) r),
        'page', $7::int, 'size', $5::int,
        'total', (select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'contacts' and k1 = $3)
          + (select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'contacts' and k2 = $2
            and k1 <> $3))::text as json`,
      [c.tenant, c.user, c.org, page * size, size, (page - 1) * size, page]
    )
  },

  // Ranking every match is the answer (best first, exact total): one pass over narrow rows from the trigram
  // index, the page's full rows by key, the body from PostgreSQL
  async 'search-contacts' (q, p, c) {
    const term = p.get('query') ?? ''
    const limit = Number(p.get('limit') ?? 20)
    const like = `%${term.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`
    const cols = CONTACT_COLUMNS.split(', ').map(x => `k.${x}`).join(', ')
    return await one(
      q,
      `with m as (
        select id, last_name, first_name, similarity(search_text, $5) as rank, count(*) over () as total from contacts
        where tenant_id = $1 and (owner_id = $2 or org_id = $3) and search_text like $4
        order by rank desc, last_name, first_name, id limit $6)
      select json_build_object(
        'items',
          (select coalesce(json_agg(to_json(r) order by m.rank desc, m.last_name, m.first_name, m.id), '[]'::json)
          from m join contacts k on k.tenant_id = $1 and k.id = m.id cross join lateral (select ${cols}) r),
        'query', $7::text, 'total', coalesce((select max(total) from m), 0))::text as json`,
      [c.tenant, c.user, c.org, like, term.toLowerCase(), limit, term],
      true
    )
  },

  // The month's visible events from the start index (bounded below by the longest event), each rendered
  // with its spaces and series title, in one statement
  async 'calendar-month' (q, p, c) {
    const from = new Date(`${p.get('start') ?? ''}T00:00:00Z`)
    const to = new Date(new Date(`${p.get('end') ?? ''}T00:00:00Z`).getTime() + 86_400_000)
    return await one(
      q,
      `with mine as materialized (
        select array(select sm.space_id from space_members sm where sm.tenant_id = $1 and sm.user_id = $2
          and sm.is_active) as spaces),
      cal as (select e.* from events e, mine where e.tenant_id = $1 and not e.is_deleted and e.published_id is null
        and e.status in ('draft', 'published') and e.start_dt < $4
        and e.start_dt >= (select $5::timestamptz - coalesce(max(coalesce(l.end_dt, l.start_dt) - l.start_dt),
          interval '0') from events l
          where l.tenant_id = $1 and not l.is_deleted and l.published_id is null and l.start_dt is not null)
        and coalesce(e.end_dt, e.start_dt) >= $5
        and (e.creator_id = $2 or e.visibility = 40 or (e.visibility = 30 and e.org_id = $3)
          or (e.visibility = 20 and exists (select 1 from event_spaces es where es.tenant_id = $1 and es.event_id = e.id
            and es.space_id = any(mine.spaces)))
          or exists (select 1 from event_managers em where em.tenant_id = $1 and em.user_id = $2
            and em.status = 'active'
            and (em.event_id = e.id or em.series_id = e.series_id)))
        order by e.start_dt, e.id limit 5000)
      select json_build_object('items', coalesce(json_agg(
          (${eventJson('cal')}::jsonb || jsonb_build_object('series_title', x.series_title, 'spaces', x.spaces))
            order by cal.start_dt, cal.id), '[]'::json),
        'next_cursor', null)::text as json
      from cal cross join lateral (select ${eventExtras('cal')}) x`,
      [c.tenant, c.user, c.org, to, from]
    )
  },

  // The analytics of one space in one statement: the space (visible, managed by the caller), the linked events
  // with their attendee figures from one grouped pass, weekly member counts, active members
  async 'space-analytics' (q, p, c) {
    const id = Number(p.get('id'))
    return await one(
      q,
      `with space as (${SPACE_SELECT} where spaces.id = $1 and ${SPACE_VISIBLE}
        and (spaces.creator_id = $3 or exists (select 1 from space_managers m where m.tenant_id = $2 and m.space_id = $1
          and m.user_id = $3 and m.status = 'active'))),
      linked as (select e.id as event_id, e.title, e.status, e.start_dt, e.end_dt from event_spaces es
        join events e on e.tenant_id = es.tenant_id and e.id = es.event_id
        where es.tenant_id = $2 and es.space_id = $1 and not e.is_deleted and e.published_id is null
          and e.status <> 'draft'),
      counts as (select a.event_id,
        count(*) filter (where a.status in ('confirmed', 'tentative', 'checked_in') or a.is_checked_in)::int as rsvps,
          count(*) filter (where a.is_checked_in or a.status = 'checked_in')::int as attended,
          count(*) filter (where a.status = 'no_show')::int as no_shows
        from attendees a where a.tenant_id = $2 and a.event_id in (select event_id from linked) group by a.event_id),
      perf as (select l.event_id, l.title, l.status, l.start_dt as start_at, l.end_dt as end_at,
        coalesce(l.start_dt > now(), false) as upcoming,
          coalesce(k.rsvps, 0) as rsvps, coalesce(k.attended, 0) as attended, coalesce(k.no_shows, 0) as no_shows
        from linked l left join counts k on k.event_id = l.event_id),
      weeks as (select (date_trunc('week',
        now() at time zone 'UTC') - make_interval(weeks => g)) at time zone 'UTC' as week_start
          from generate_series(11, 0, -1) g)
      select json_build_object(
        'events_performance', (select coalesce(json_agg(to_json(x)), '[]'::json)
          from (select * from perf order by start_at desc nulls last, event_id desc limit 50) x),
        'member_growth',
          (select json_agg(json_build_object('date', w.week_start, 'members', (select count(*) from space_members m
            where m.tenant_id = $2 and m.space_id = $1 and m.created_at < w.week_start + interval '7 days'
              and (m.removed_at is null or m.removed_at >= w.week_start + interval '7 days'))) order by w.week_start)
                from weeks w),
        'summary', json_build_object('active_members',
          (select count(*) from space_members where tenant_id = $2 and space_id = $1 and is_active),
          'events', (select count(*) from perf)))::text as json
      from space`,
      [id, c.tenant, c.user, c.org]
    )
  },

  // Each source of the feed read from its index newest first up to the page's end, merged; the total as the stored
  // items' kept count (row_counts, migration 0021) and two counts
  async 'space-activity' (q, p, c) {
    const id = Number(p.get('id'))
    const size = Number(p.get('size') ?? 20)
    const visible = `e.tenant_id = $1 and not e.is_deleted and e.published_id is null
      and (e.creator_id = $2 or e.visibility = 40
      or (e.visibility = 30 and e.org_id = $3)
      or (e.visibility = 20 and exists (select 1 from event_spaces m where m.tenant_id = $1 and m.event_id = e.id
        and m.space_id = any((select spaces from mine)::bigint[])))
      or exists (select 1 from event_managers em where em.tenant_id = $1 and em.user_id = $2 and em.status = 'active'
        and (em.event_id = e.id or em.series_id = e.series_id)))`
    return await one(
      q,
      `with space as (select spaces.id from spaces where spaces.id = $4
        and ${SPACE_VISIBLE.replaceAll('$2', '$1').replaceAll('$3', '$2').replaceAll('$4', '$3')}),
      mine as materialized (select array(select sm.space_id from space_members sm where sm.tenant_id = $1
        and sm.user_id = $2 and sm.is_active) as spaces),
      added as (select es.created_at, 'event added to the space' as message, e.id::text as resource_id, e.title,
        'event' as type, 1 as src, es.id as seq
        from event_spaces es join events e on e.tenant_id = es.tenant_id and e.id = es.event_id where es.tenant_id = $1
          and es.space_id = $4 and ${visible}),
      published as (select ea.at as created_at, 'event published' as message, e.id::text as resource_id, e.title,
        'event' as type, 2 as src, ea.id as seq
        from event_spaces es join event_activity ea on ea.tenant_id = es.tenant_id and ea.event_id = es.event_id
          and ea.kind = 'published'
        join events e on e.tenant_id = es.tenant_id and e.id = es.event_id where es.tenant_id = $1 and es.space_id = $4
          and ${visible}),
      feed as ((select a.created_at, a.message, a.resource_id, a.title, a.type, 0 as src, a.id as seq
        from space_activity a
          where a.tenant_id = $1 and a.space_id = $4 order by a.created_at desc, a.id desc limit $5)
        union all (select * from added order by created_at desc, seq desc limit $5)
        union all (select * from published order by created_at desc, seq desc limit $5))
      select json_build_object(
        'items',
          (select coalesce(json_agg(json_build_object('created_at', f.created_at, 'message', f.message, 'resource_id',
            f.resource_id,
            'title', f.title, 'type', f.type) order by f.created_at desc, f.src desc, f.seq desc), '[]'::json)
          from (select * from feed order by created_at desc, src desc, seq desc limit $6) f),
        'page', 1,
        'total', (select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'space_activity'
          and k1 = ($4::bigint)::text)
          + (select count(*) from added) + (select count(*) from published)
      )::text as json from space`,
      [c.tenant, c.user, c.org, id, size + 1, size]
    )
  },

  // The rule, the newest executions from the (rule, created_at) index, and the kept count (row_counts, migration 0020)
  async 'rule-executions' (q, p, c) {
    const size = Number(p.get('size') ?? 20)
    // one row more than the page is read (for the next cursor), as the service reads it; the body has the page
    return await one(
      q,
      `select json_build_object(
        'items', (select coalesce(json_agg(to_json(x) order by x.created_at desc, x.id desc), '[]'::json) from (
          select * from (select * from automation_executions where tenant_id = $1 and rule_id = $2
            order by created_at desc, id desc limit $3) y
          order by created_at desc, id desc limit $4) x),
        'page', 1,
        'total', (select coalesce(sum(n), 0) from row_counts where tenant_id = $1 and list = 'executions'
          and k1 = $2::text))::text as json
      from automation_rules r where r.tenant_id = $1 and r.id = $2`,
      [c.tenant, p.get('id'), size + 1, size]
    )
  },

  // The whole public page in one statement, each part from its index
  async 'public-space' (q, p) {
    const shown = 'spaces.id, spaces.title, spaces.description, spaces.timezone, spaces.visibility, spaces.published_at'
    const childBase = 'from spaces join space_parents as p on p.tenant_id = spaces.tenant_id ' +
      `and p.space_id = spaces.id where ${PUBLIC_SPACES} and p.parent_id = $2`
    const people = (
      table: string,
      alias: string,
      where: string
    ) => `from ${table} ${alias} left join users u on u.tenant_id = ${alias}.tenant_id and u.id = ${alias}.user_id
      where ${alias}.tenant_id = $1 and ${alias}.space_id = $2 and ${where}
        and (u.state is null or u.state <> 'removed')`
    const evBase = `from event_spaces es join events e on e.tenant_id = es.tenant_id and e.id = es.event_id
      where es.tenant_id = $1 and es.space_id = $2 and e.status = 'published' and e.visibility = 40 and not e.is_deleted
        and e.published_id is null`
    const [entry] = await q<{ tenant_id: string; space_id: number }>(
      'select tenant_id, space_id from public_spaces where handle = $1',
      [p.get('handle')]
    )
    if (entry === undefined) return notFound
    return await one(
      q,
      `select json_build_object(
        'space',
          (select to_json(x)
            from (select ${shown}, (select spaces.id from spaces join space_parents p on p.tenant_id = spaces.tenant_id
              and p.parent_id = spaces.id
            where ${PUBLIC_SPACES} and p.space_id = $2 order by spaces.id limit 1) as parent_id) x),
        'subspaces', (select coalesce(json_agg(to_json(x)), '[]'::json)
          from (select ${shown} ${childBase} order by spaces.position, spaces.id limit 50) x),
        'managers',
          (select coalesce(json_agg(to_json(x)), '[]'::json)
            from (select ${PROFILE} ${people('space_managers', 'm', "m.status = 'active'")} order by m.created_at, m.id
              limit 12) x),
        'members',
          (select coalesce(json_agg(to_json(x)), '[]'::json)
            from (select ${PROFILE} ${people('space_members', 'sm', 'sm.is_active')} order by sm.created_at, sm.user_id
              limit 24) x),
        'stats', json_build_object('events_count', (select count(*) ${evBase}), 'managers_count',
          (select count(*) ${people('space_managers', 'm', "m.status = 'active'")}),
          'members_count', (select count(*) ${people('space_members', 'sm', 'sm.is_active')}), 'subspaces_count',
            (select count(*) ${childBase})),
        'upcoming_events', (select coalesce(json_agg(to_json(x)), '[]'::json)
          from (select e.id, e.title, e.timezone, e.address, e.description, e.start_dt, e.end_dt ${evBase}
          and coalesce(e.end_dt, e.start_dt, 'infinity'::timestamptz) >= now() order by e.start_dt asc nulls last, e.id
            limit 10) x),
        'owner', (select to_json(x) from (select ${PROFILE} from users u where u.tenant_id = $1
          and u.id = spaces.creator_id and u.state <> 'removed') x)
      )::text as json from spaces where ${PUBLIC_SPACES} and spaces.id = $2`,
      [entry.tenant_id, entry.space_id]
    )
  }
}
