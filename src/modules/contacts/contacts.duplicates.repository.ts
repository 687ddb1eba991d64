/**
 * The SQL of `GET /api/v1/contacts/duplicates` (docs/contacts.md, "Duplicates"): groups of contacts the caller sees
 * that share a key, the e-mail, an E.164 number or the name with the company (the stored keys and indexes of
 * migrations/0030_contact_duplicates.sql).
 *
 * A page walks the key indexes from the cursor, merged into one stream in key order, and groups it as it goes: the
 * first groups are found in the first index entries, and the next page starts at the cursor's key, not at the
 * tenant's first. Keys held by one contact only are walked too, and nothing tells them from the others without reading
 * them: so the walk stops after SCAN_BUDGET index entries, a page may end before it holds `limit` groups, and
 * `next_cursor` then names where the walk stopped. A caller who sees at most FEW_CONTACTS contacts reads the keys of
 * those alone. Every request reads at most SCAN_BUDGET key entries, the whole group at the walk's edge, and its
 * groups' first contacts.
 */
import { expressionBuilder, sql, type RawBuilder } from 'kysely'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { planList, type Tx } from '../../platform/db/tenant.ts'
import { encodeCursor, listScope, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import { visibleTo, type ContactRowOut } from './contacts.repository.ts'
import { DUPLICATE_REASONS, GROUP_CONTACTS_MAX, type DuplicateReason } from './contacts.duplicates.schemas.ts'

/**
 * Key entries one page reads at most, of contacts the caller sees or not: 15 – 30 ms on PostgreSQL (docs/contacts.md,
 * "Duplicates"). A page of 20 groups of 50 contacts reads 1 000; e-mails that are all different, 20 000 a page.
 */
export const SCAN_BUDGET = 20_000

/** A reason's position among equal keys: the cursor's second column. */
const RANK: Record<DuplicateReason, number> = { email: 1, phone: 2, name_company: 3 }

/**
 * The indexed key columns of a reason, each with what makes an entry count once per contact: a number a contact
 * holds in two of its fields counts in the first of them (the columns it is compared with are in the entry).
 */
const KEY_COLUMNS: Record<DuplicateReason, ReadonlyArray<{ column: string, once: RawBuilder<unknown> }>> = {
  email: [{ column: 'email_key', once: sql`true` }],
  phone: [
    { column: 'phone_primary_e164', once: sql`true` },
    { column: 'phone_secondary_e164', once: sql`phone_secondary_e164 is distinct from phone_primary_e164` },
    {
      column: 'phone_work_e164',
      once: sql`phone_work_e164 is distinct from phone_primary_e164
        and phone_work_e164 is distinct from phone_secondary_e164`
    }
  ],
  name_company: [{ column: 'name_company_key', once: sql`true` }]
}

/** The order of groups: by key, then reason (a key of two reasons is two groups). */
const KEYS: KeyColumn[] = [{ ref: 'key', dir: 'asc', type: 'text' }, { ref: 'reason', dir: 'asc', type: 'int' }]

/** The contacts the caller sees, as a condition of a statement over `contacts` (the list's own rule). */
const visible = (auth: AuthContext) => visibleTo(expressionBuilder<Database, 'contacts'>(), auth)

/** Where a walk starts: after a group (its key and reason rank). */
interface Position { key: string, rank: number }

interface WalkedKey {
  key: string
  /** contacts the caller sees holding the key for each reason (email, phone, name_company), among those walked */
  n1: number
  n2: number
  n3: number
  /** the position in the walk of the key's last entry */
  last: number
}

/**
 * Callers who see at most this many contacts have their keys read from their own contacts (through the owner and
 * organization indexes) and sorted, at most five keys a contact; the others walk the key indexes. Reading and
 * sorting 4 000 contacts' keys took 19 ms where the walk took 2 ms (the bench at scale 0.01, docs/performance.md):
 * the walk wins unless the caller sees few of the tenant's contacts.
 */
export const FEW_CONTACTS = 1_000

/**
 * Whether the caller sees at most `few` contacts: their own and their organization's (any organization's for an
 * admin), as `visibleTo` has them, each counted up to `few` + 1 in its index (contacts_owner, contacts_org). A
 * contact of both is counted twice, which only makes the answer "many" a little early; the pages are the same either
 * way, only their cost differs. As one `or`, PostgreSQL read the heap (a bitmap, or the table until enough rows).
 */
async function seesFew (trx: Tx, auth: AuthContext, few: number): Promise<boolean> {
  const upTo = sql.lit(few + 1)
  const shared = auth.permissions.has('tenant:admin')
    ? sql`org_id is not null`
    : auth.orgId !== null ? sql`org_id = ${auth.orgId}` : undefined
  const { rows } = await sql<{ n: number }>`select
    (select count(*) from (select from contacts where tenant_id = ${auth.tenantId} and owner_id = ${auth.userId}
      limit ${upTo}) as own)
    + ${shared === undefined
      ? sql`0`
      : sql`(select count(*) from (select from contacts where tenant_id = ${auth.tenantId} and ${shared}
      limit ${upTo}) as shared)`} as n`.execute(trx)
  return Number(rows[0]?.n ?? 0) <= few
}

/** The bounds of a page's work: SCAN_BUDGET and FEW_CONTACTS (tests lower them). */
export interface DuplicateBounds { budget: number, few: number }

/**
 * The key entries after `after` in key order, each with whether the caller sees its contact (`seen`). A caller who
 * sees many contacts walks the key indexes of the tenant (each column's index read in key order, a sorted subquery
 * per column: the merge of their streams keeps the order, where a plain union was sorted whole); the entries of
 * contacts they cannot see count in the walk's budget, so a page reads SCAN_BUDGET entries at most, whatever share of
 * the tenant the caller sees. A caller who sees few reads the keys of those contacts alone, sorted.
 */
function entries (
  auth: AuthContext,
  reasons: readonly DuplicateReason[],
  after: Position | undefined,
  few: boolean
): RawBuilder<unknown> {
  if (few) {
    const keys = reasons.flatMap(reason => KEY_COLUMNS[reason].map(({ column, once }) =>
      sql`(case when ${once} then ${sql.ref(column)} end, ${sql.lit(RANK[reason])})`))
    const from = after === undefined ? sql`` : sql`and (k.key, k.reason) > (${after.key}::text, ${after.rank}::int)`
    return sql`select k.key, k.reason, true as seen from contacts
      cross join lateral (values ${sql.join(keys)}) as k (key, reason)
      where ${visible(auth)} and k.key is not null ${from}`
  }
  return sql.join(reasons.flatMap(reason => KEY_COLUMNS[reason].map(({ column, once }) => {
    const key = sql.ref(column)
    const rank = RANK[reason]
    // after (key, rank): a greater key, or the same key of a later reason
    const from = after === undefined
      ? sql``
      : rank > after.rank ? sql`and ${key} >= ${after.key}` : sql`and ${key} > ${after.key}`
    return sql`(select ${key} as key, ${sql.lit(rank)} as reason, ${visible(auth)} as seen from contacts
      where tenant_id = ${auth.tenantId} and ${key} is not null and ${once} ${from} order by ${key})`
  })), sql` union all `)
}

/**
 * The keys of a walk of at most `budget` entries after `after` that `limit` groups need: each key that two contacts
 * or more the caller sees hold for one reason, and the walk's last key when the walk took the whole budget (its count
 * may be short). Grouped as the walk streams: the page's groups found, the walk stops.
 */
async function walk (
  trx: Tx,
  auth: AuthContext,
  reasons: readonly DuplicateReason[],
  after: Position | undefined,
  limit: number,
  { budget, few }: DuplicateBounds
): Promise<WalkedKey[]> {
  const { rows } = await sql<WalkedKey>`
    select key, n1, n2, n3, last from (
      select key, count(*) filter (where seen and reason = 1) as n1, count(*) filter (where seen and reason = 2) as n2,
             count(*) filter (where seen and reason = 3) as n3, max(at) as last
      from (
        select key, reason, seen, row_number() over (order by key) as at
        from (${entries(auth, reasons, after, await seesFew(trx, auth, few))}) as entries
        order by key limit ${sql.lit(budget)}
      ) as walked
      group by key
    ) as keys
    where n1 >= 2 or n2 >= 2 or n3 >= 2 or last = ${sql.lit(budget)}
    order by key limit ${limit}`.execute(trx)
  return rows.map(r => ({ key: r.key, n1: Number(r.n1), n2: Number(r.n2), n3: Number(r.n3), last: Number(r.last) }))
}

/** The contacts the caller sees that hold `key` for `reason`, each once, as a union of one select per key column. */
function holders (
  auth: AuthContext,
  reason: DuplicateReason,
  key: RawBuilder<string>,
  columns: (c: RawBuilder<unknown>) => RawBuilder<unknown>,
  tail: RawBuilder<unknown> = sql``
): RawBuilder<unknown> {
  return sql.join(KEY_COLUMNS[reason].map(({ column, once }) =>
    sql`(select ${columns(sql`id`)} from contacts
      where ${sql.ref(column)} = ${key} and ${visible(auth)} and ${once} ${tail})`), sql` union all `)
}

/** How many contacts the caller sees hold the key for the reason: the whole group, read from its index entries. */
async function countGroup (trx: Tx, auth: AuthContext, reason: DuplicateReason, key: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*) as n from (${holders(auth, reason, sql`${key}`, id => id)}) as held`.execute(trx)
  return Number(rows[0]?.n ?? 0)
}

/** A group of a page: its reason, its stored key, and how many contacts the caller sees hold it. */
export interface Group { reason: DuplicateReason, key: string, count: number }

/**
 * The first GROUP_CONTACTS_MAX contacts of each group (oldest first), each group's read from its key's index in that
 * order. Every column of the contact: the answer's schema (Contact) keeps what it declares, so a contact of a group is
 * shown as `GET /api/v1/contacts/{id}` shows it.
 */
async function firstContacts (trx: Tx, auth: AuthContext, groups: readonly Group[]): Promise<ContactRowOut[][]> {
  if (groups.length === 0) return []
  const values = groups.map((g, i) => sql`(${i}::int, ${g.key}::text, ${RANK[g.reason]}::int)`)
  const branches = DUPLICATE_REASONS.map(reason => sql`(select id, created_at from (${holders(
    auth,
    reason,
    sql<string>`g.key`,
    id => sql`${id}, created_at`,
    sql`and g.reason = ${sql.lit(RANK[reason])} order by created_at, id limit ${sql.lit(GROUP_CONTACTS_MAX)}`
  )}) as held)`)
  const { rows } = await sql<ContactRowOut & { ord: number }>`
    select g.ord, c.* from (values ${sql.join(values)}) as g (ord, key, reason)
    cross join lateral (
      select id, created_at from (${sql.join(branches, sql` union all `)}) as held
      order by created_at, id limit ${sql.lit(GROUP_CONTACTS_MAX)}
    ) as first
    join contacts c on c.tenant_id = ${auth.tenantId} and c.id = first.id
    order by g.ord, first.created_at, first.id`.execute(trx)
  const out: ContactRowOut[][] = groups.map(() => [])
  for (const { ord, ...contact } of rows) out[ord]?.push(contact)
  return out
}

export interface DuplicatesOptions {
  reason?: DuplicateReason | undefined
  limit: number
  cursor?: string | undefined
}

/**
 * A page of duplicate groups (docs/contacts.md, "Duplicates"): up to `limit` groups after the cursor, by key then
 * reason, each with its count and first contacts; `next_cursor` after the last group shown, or where the walk stopped
 * when it read SCAN_BUDGET entries first (the page may then hold fewer groups, or none), null after the last group.
 */
export async function listDuplicates (
  trx: Tx,
  auth: AuthContext,
  o: DuplicatesOptions,
  bounds: DuplicateBounds = { budget: SCAN_BUDGET, few: FEW_CONTACTS }
) {
  const window = pageWindow({ size: o.limit, cursor: o.cursor },
    listScope('contact-duplicates', { reason: o.reason }), KEYS)
  const reasons = o.reason !== undefined ? [o.reason] : DUPLICATE_REASONS
  const after = window.after === undefined
    ? undefined
    : { key: String(window.after[0]), rank: Number(window.after[1]) }
  // planned for the caller's owner and organization: how many contacts they hold decides how the count and the read
  // of a caller who sees few go (the owner and organization indexes); no parallel workers for these short reads
  await planList(trx, true)
  const keys = await walk(trx, auth, reasons, after, o.limit + 1, bounds)

  const position = (g: Group): Position => ({ key: g.key, rank: RANK[g.reason] })
  const groupsOf = (k: WalkedKey): Group[] => DUPLICATE_REASONS
    .map((reason, i) => ({ reason, key: k.key, count: [k.n1, k.n2, k.n3][i] ?? 0 }))
    .filter(g => g.count >= 2)

  // The walk's last key when it read the whole budget (there may be more), else undefined: it reached the end. The
  // keys come in the database's order (its collation), the edge last; a key's groups in the order of their reasons.
  const edge = keys.find(k => k.last === bounds.budget)
  const groups = keys.filter(k => k !== edge).flatMap(groupsOf)
  let resume: Position | undefined
  if (edge !== undefined) {
    // the budget may have cut the edge's key: its groups are counted whole (those after the cursor: the walk may have
    // started inside this key), and the next page starts after all of them
    const counted = await Promise.all(reasons.map(async reason =>
      ({ reason, key: edge.key, count: await countGroup(trx, auth, reason, edge.key) })))
    groups.push(...counted.filter(g =>
      g.count >= 2 && (after === undefined || g.key !== after.key || RANK[g.reason] > after.rank)))
    resume = { key: edge.key, rank: Math.max(...reasons.map(r => RANK[r])) }
  }
  const items = groups.slice(0, o.limit)
  const last = items[items.length - 1]
  const next = groups.length > o.limit && last !== undefined ? position(last) : resume
  const contacts = await firstContacts(trx, auth, items)
  return {
    items: items.map((g, i) => ({ ...g, contacts: contacts[i] ?? [] })),
    next_cursor: next === undefined ? null : encodeCursor([next.key, next.rank], window.page + 1, window.scope)
  }
}
