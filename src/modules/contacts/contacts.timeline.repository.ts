/**
 * The SQL of `GET /api/v1/contacts/{id}/timeline` (docs/contacts.md, "Timeline"): what happened to one contact, newest
 * first, from three tables in one keyset-paged stream: its attendance at events (attendees), the event manager roles
 * of its linked user (event_managers, `user_id` = the contact's `linked_user_id`), and the automation runs whose
 * trigger named it (automation_executions, `payload.contact_id`, indexed by migration 0030).
 *
 * Only events the caller sees (`eventVisibleTo`), and a series only when they see one of its occurrences (the rule of
 * `GET /events/{id}/series`); an attendance only where the caller may read the attendees (`attendees:read`, as the
 * event's attendee list asks: seeing an event does not show who attends it); a run only of a rule the caller may
 * read (an EVENT rule's event visible to them) and, when its trigger names an event, of an event they see.
 *
 * One statement. The contact's rows of each table are read first by index (`att`, `mgr`, `run`), then the events and
 * series they name, by key, with the caller's visibility (`ev`, `sr`): the visibility's subqueries run once for the
 * statement, and only the events the contact's rows name are read. Joined to the tenant's events instead, PostgreSQL
 * hashed every event the caller sees (100 000 in the largest benchmark tenant, 40 – 70 ms a branch); looked up row by
 * row in lateral subqueries, it ran the visibility's subqueries again for each row (seconds). The union is as long as
 * the contact's history; it is sorted and cut after the page.
 */
import { sql, type RawBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { EVENT_MANAGER_ROLE_NAMES, eventVisibilityFilter, grantedPermissions, isTenantAdmin } from '../events/index.ts'
import type { TimelineKind } from './contacts.timeline.schemas.ts'

/** Newest first; among items of one instant by kind, then row id (text: the ids of three tables in one order). */
const KEYS: KeyColumn[] = [
  { ref: 'at', dir: 'desc', type: 'time' },
  { ref: 'kind', dir: 'desc', type: 'text' },
  { ref: 'id', dir: 'desc', type: 'text' }
]

interface TimelineRow {
  id: string
  kind: TimelineKind
  at: Date
  status: string
  event_id: number | null
  event_title: string | null
  event_start: Date | null
  series_id: number | null
  series_title: string | null
  role: string | null
  rule_id: string | null
  rule_name: string | null
  trigger_type: string | null
  /** automation: the run's trigger payload, for the outbound rule (never shown) */
  trigger: Record<string, unknown> | null
}

/** The columns every branch selects, in this order; a branch names those it has and leaves the others null. */
const COLUMNS = [
  ['id', 'text'], ['kind', 'text'], ['at', 'timestamptz'], ['status', 'text'], ['event_id', 'bigint'],
  ['event_title', 'text'], ['event_start', 'timestamptz'], ['series_id', 'bigint'], ['series_title', 'text'],
  ['role', 'text'], ['rule_id', 'uuid'], ['rule_name', 'text'], ['trigger_type', 'text'], ['trigger', 'jsonb']
] as const
type Column = typeof COLUMNS[number][0]

function select (values: Partial<Record<Column, RawBuilder<unknown>>>): RawBuilder<unknown> {
  return sql.join(COLUMNS.map(([name, type]) => {
    const value = values[name]
    return value !== undefined ? sql`${value} as ${sql.id(name)}` : sql`null::${sql.raw(type)} as ${sql.id(name)}`
  }))
}

/** An event id in a JSON value (a number or digits), else null: a payload is what its trigger wrote. */
const eventIdIn = (value: RawBuilder<unknown>) =>
  sql`case when ${value} ~ '^[0-9]{1,15}$' then (${value})::bigint end`

/**
 * When an attendance happened: a check-in at its time, a no-show at the event's end (it was noticed then), any other
 * status at the answer (`responded_at`), or the invitation when there was none.
 */
const attendanceAt = (eventEnd: RawBuilder<unknown>) => sql`case att.status
  when 'checked_in' then coalesce(att.checked_in_at, att.updated_at)
  when 'no_show' then coalesce(${eventEnd}, att.updated_at)
  else coalesce(att.responded_at, att.invited_at) end`

const eventColumns = { event_id: sql`ev.id`, event_title: sql`ev.title`, event_start: sql`ev.start_dt` }
const seriesColumns = { series_id: sql`sr.id`, series_title: sql`sr.title` }
const managerColumns = {
  id: sql`mgr.id::text`,
  kind: sql`'manager'`,
  at: sql`coalesce(mgr.accepted_at, mgr.created_at)`,
  status: sql`mgr.status`,
  role: sql`mgr.role`
}

/**
 * The statement's rows of the contact, and the events and series they name as the caller sees them:
 *   att: its attendee rows; mgr: the manager rows of its linked user, granted or revoked (a pending invitation is no
 *   role yet); run: the runs whose trigger named it, but skipped ones (their condition was false: nothing was done),
 *   of rules the caller may read; ev: the events those rows name (and the events of EVENT rules) that the caller sees;
 *   sr: the series they name of which the caller sees an occurrence.
 * A kind left out of the page (the `kind` filter, no linked user, no `automation:read`) reads nothing.
 */
/** The manager roles whose bundle holds `attendees:read`, and every role that is a bundle (grantedPermissions). */
const READING_ROLES = EVENT_MANAGER_ROLE_NAMES.filter(r => grantedPermissions({
  role: r, permissions: []
}).has('attendees:read'))

/**
 * Whether the caller may read the attendees of an event or series (the event permission `attendees:read`, as
 * `GET /events/{id}/attendees` asks it: hasEventPermission): a tenant admin, its creator, or an active manager whose
 * role bundle, or own list when the role is no bundle, holds it. `grant` ties a manager row `em` to the row.
 */
function attendeesReadable (auth: AuthContext, creator: RawBuilder<unknown>, grant: RawBuilder<unknown>) {
  if (isTenantAdmin(auth)) return sql`true`
  return sql`(${creator} = ${auth.userId} or exists (select from event_managers em
    where em.tenant_id = ${auth.tenantId} and em.user_id = ${auth.userId} and em.status = 'active' and ${grant}
      and (em.role = any(${READING_ROLES}::text[])
        or ((em.role is null or not em.role = any(${EVENT_MANAGER_ROLE_NAMES}::text[]))
          and 'attendees:read' = any(em.permissions)))))`
}

function rowsOf (
  auth: AuthContext,
  contactId: string,
  linkedUserId: string | null,
  wanted: (kind: TimelineKind) => boolean
): RawBuilder<unknown> {
  const t = auth.tenantId
  const on = (yes: boolean) => yes ? sql`true` : sql`false`
  const named = sql`select event_id from att union all select event_id from mgr union all select event_id from run
    union all select rule_event from run`
  const namedSeries = sql`select series_id from att where event_id is null
    union all select series_id from mgr where event_id is null`
  return sql`att as materialized (
      select id, event_id, series_id, status, checked_in_at, updated_at, responded_at, invited_at from attendees
      where tenant_id = ${t} and contact_id = ${contactId} and ${on(wanted('attendance'))}),
    mgr as materialized (
      select id, event_id, series_id, status, role, accepted_at, created_at from event_managers
      where tenant_id = ${t} and user_id = ${linkedUserId ?? ''} and status <> 'pending'
        and ${on(wanted('manager') && linkedUserId !== null)}),
    run as materialized (
      select x.id, x.status, x.created_at, x.trigger_type, x.trigger_payload, r.id as rule_id, r.name as rule_name,
        ${eventIdIn(sql`x.trigger_payload ->> 'event_id'`)} as event_id,
        x.trigger_payload ->> 'event_id' is not null as names_event,
        case when r.scope = 'EVENT' and r.scope_id is not null then ${eventIdIn(sql`r.scope_id`)} end as rule_event,
        r.scope = 'EVENT' and r.scope_id is not null as event_rule
      from automation_executions x join automation_rules r on r.tenant_id = x.tenant_id and r.id = x.rule_id
      where x.tenant_id = ${t} and x.trigger_payload ->> 'contact_id' = ${contactId} and x.status <> 'skipped'
        and ${on(wanted('automation') && auth.permissions.has('automation:read'))}),
    ev as materialized (
      select events.id, events.title, events.start_dt, events.end_dt,
        ${attendeesReadable(auth, sql`events.creator_id`, sql`(em.event_id = events.id
          or em.series_id = events.series_id)`)}
          as attendees_readable
      from events
      where events.tenant_id = ${t} and events.id = any(array(${named})) and ${eventVisibilityFilter(auth)}),
    sr as materialized (
      select s.id, s.title,
        ${attendeesReadable(auth, sql`s.creator_id`, sql`em.series_id = s.id`)} as attendees_readable
      from event_series s
      where s.tenant_id = ${t} and not s.is_deleted and s.id = any(array(${namedSeries}))
        and s.id = any(array(select events.series_id from events
          where events.tenant_id = ${t} and events.series_id = any(array(${namedSeries}))
            and ${eventVisibilityFilter(auth)})))`
}

/** The items of the contact, one select per kind of row, each naming the columns it has (`select`). */
const ITEMS = sql.join([
  sql`select ${select({
    id: sql`att.id::text`,
    kind: sql`'attendance'`,
    at: attendanceAt(sql`coalesce(ev.end_dt, ev.start_dt)`),
    status: sql`att.status`,
    ...eventColumns
  })} from att join ev on ev.id = att.event_id where ev.attendees_readable`,
  // a row of every occurrence of a series (written by series splits)
  sql`select ${select({
    id: sql`att.id::text`,
    kind: sql`'attendance'`,
    at: attendanceAt(sql`null`),
    status: sql`att.status`,
    ...seriesColumns
  })} from att join sr on sr.id = att.series_id where att.event_id is null and sr.attendees_readable`,
  sql`select ${select({ ...managerColumns, ...eventColumns })} from mgr join ev on ev.id = mgr.event_id`,
  sql`select ${select({ ...managerColumns, ...seriesColumns })}
    from mgr join sr on sr.id = mgr.series_id where mgr.event_id is null`,
  sql`select ${select({
    id: sql`run.id::text`,
    kind: sql`'automation'`,
    at: sql`run.created_at`,
    status: sql`run.status`,
    ...eventColumns,
    rule_id: sql`run.rule_id`,
    rule_name: sql`run.rule_name`,
    trigger_type: sql`run.trigger_type`,
    trigger: sql`run.trigger_payload`
  })} from run left join ev on ev.id = run.event_id
    where (not run.names_event or ev.id is not null)
      and (not run.event_rule or run.rule_event in (select id from ev))`
], sql` union all `)

export interface TimelineOptions {
  kind?: TimelineKind | undefined
  limit: number
  cursor?: string | undefined
}

/**
 * A page of a contact's timeline (the contact visible to the caller: the route checks it first) and the cursor of the
 * next page. `linkedUserId` is the contact's `linked_user_id`: without one there are no manager roles.
 */
export async function listTimeline (
  trx: Tx,
  auth: AuthContext,
  contact: { id: string, linkedUserId: string | null },
  o: TimelineOptions
) {
  const window = pageWindow(
    { size: o.limit, cursor: o.cursor },
    listScope('contact-timeline', { contact: contact.id, kind: o.kind }),
    KEYS
  )
  const wanted = (kind: TimelineKind) => o.kind === undefined || o.kind === kind
  const [at, kind, id] = window.after ?? []
  const after = window.after === undefined
    ? sql`true`
    : sql`(at, kind, id) < (${at}::timestamptz, ${kind}::text, ${id}::text)`
  const { rows } = await sql<TimelineRow>`with ${rowsOf(auth, contact.id, contact.linkedUserId, wanted)}
    select * from (${ITEMS}) as items
    where ${after} order by at desc, kind desc, id desc limit ${window.limit}`.execute(trx)
  const page = pageOf(rows, window, r => [r.at, r.kind, r.id])
  // an automation run comes with the trigger it ran on, for the outbound rule (contacts.timeline.routes.ts)
  return { items: page.items.map(r => ({ item: toItem(r), trigger: r.trigger })), next_cursor: page.next_cursor }
}

/** A row as the answer shows it: only the fields its kind has. */
function toItem (r: TimelineRow) {
  return {
    at: r.at,
    kind: r.kind,
    id: r.id,
    status: r.status,
    ...(r.event_id !== null ? { event: { id: r.event_id, title: r.event_title ?? '', start_dt: r.event_start } } : {}),
    ...(r.series_id !== null ? { series: { id: r.series_id, title: r.series_title ?? '' } } : {}),
    ...(r.kind === 'manager' ? { role: r.role } : {}),
    ...(r.rule_id !== null
      ? { rule: { id: r.rule_id, name: r.rule_name ?? '' }, trigger_type: r.trigger_type ?? '' }
      : {})
  }
}
