/**
 * All SQL of contacts. Every function takes the request's transaction first and names the tenant.
 *
 * Who sees a contact (docs/contacts.md): its owner always; an organization contact also every
 * caller of that organization, and tenant admins. A personal contact (org_id null) is its owner's
 * alone.
 */
import { sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from 'kysely'
import { keptSum, type Counting } from '../../platform/db/kept-counts.ts'
import { planForValues, type Tx } from '../../platform/db/tenant.ts'
import { countOf, fromCursor, totalIn, totalQuery } from '../../platform/db/list-page.ts'
import { together } from '../../platform/db/together.ts'
import { afterKey, keyExpression, listScope, pageOf, pageWindow, type KeyColumn } from '../../platform/http/cursor.ts'
import type { Database } from '../../platform/db/database.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { ContactRow, ContactValues } from './contacts.table.ts'
import { CONTACT_SORT_FIELDS } from './contacts.schemas.ts'
import { E164_COLUMNS, PHONE_FIELDS, REV_COLUMNS, type PhoneSearch } from './contacts.phones.ts'
import { bumpRevision } from '../../platform/db/revision.ts'
import { likePattern } from '../../platform/db/like.ts'
import { rowChunks } from '../../platform/db/chunks.ts'
import { readChanges } from '../../platform/sync/sync.repository.ts'
import type { ChangesWindow } from '../../platform/sync/sync.ts'

export type { ContactValues }

type Eb = ExpressionBuilder<Database, 'contacts'>

/** The contacts a caller may read. */
export function visibleTo (eb: Eb, auth: AuthContext): Expression<SqlBool> {
  const shared = auth.permissions.has('tenant:admin')
    ? eb('org_id', 'is not', null)
    : auth.orgId !== null ? eb('org_id', '=', auth.orgId) : eb.val(false)
  return eb.and([eb('tenant_id', '=', auth.tenantId), eb.or([eb('owner_id', '=', auth.userId), shared])])
}

/**
 * `visibleTo` over a contact's owner and organization as a row holds them (a contact gone, as its last logged change
 * kept them): the same rule, for what no longer is a row of `contacts`.
 */
export const visibleAsRow = (row: { owner_id: string | null, org_id: string | null }, auth: AuthContext): boolean =>
  row.owner_id === auth.userId ||
  (row.org_id !== null && (auth.permissions.has('tenant:admin') || row.org_id === auth.orgId))

/** Whether a visible contact may be changed by the caller: its owner, or an admin. */
export const canManage = (row: Pick<ContactRow, 'owner_id'>, auth: AuthContext): boolean =>
  row.owner_id === auth.userId || auth.permissions.has('tenant:admin')

const COLUMNS = [
  'id', 'org_id', 'owner_id', 'created_at', 'updated_at', 'is_favorite', 'first_name', 'middle_name', 'last_name',
  'nickname', 'email', 'phone_primary', 'phone_secondary', 'phone_work', 'company', 'job_title', 'address_line1',
  'address_line2', 'city', 'state_province', 'postal_code', 'country', 'website', 'avatar_url', 'notes',
  'linked_user_id', 'tags', 'revision', 'phone_primary_e164', 'phone_secondary_e164', 'phone_work_e164',
  'invalid_phones'
] as const

export async function findVisible (trx: Tx, auth: AuthContext, id: string) {
  return await trx.selectFrom('contacts').select(COLUMNS)
    .where('id', '=', id).where(eb => visibleTo(eb, auth))
    .executeTakeFirst()
}

export async function lockVisible (trx: Tx, auth: AuthContext, id: string) {
  return await trx.selectFrom('contacts').select(COLUMNS)
    .where('tenant_id', '=', auth.tenantId).where('id', '=', id).where(eb => visibleTo(eb, auth))
    .forUpdate()
    .executeTakeFirst()
}

export async function insertContact (trx: Tx, auth: AuthContext, values: ContactValues) {
  return await trx.insertInto('contacts')
    .values({ ...values, tenant_id: auth.tenantId, owner_id: auth.userId, org_id: auth.orgId })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow()
}

export async function updateContact (trx: Tx, tenantId: string, id: string, values: ContactValues) {
  return await trx.updateTable('contacts')
    .set({ ...values, ...bumpRevision() })
    .where('tenant_id', '=', tenantId).where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirstOrThrow()
}

/** A contact as the repository returns it (COLUMNS). */
export type ContactRowOut = Pick<ContactRow, typeof COLUMNS[number]>

/**
 * Creates contacts of the caller (as `insertContact`, a field absent from an item taking the column's default);
 * returns the rows created. Multi-row `INSERT … VALUES`, one row per contact in the order given, one statement per
 * chunk of rows that fits PostgreSQL's 65 535 bind parameters (one for any upsert batch). VALUES rather than
 * INSERT…SELECT from `unnest` of arrays: the service runs on Citus (platform/db/chunks.ts).
 */
export async function insertContacts (
  trx: Tx,
  auth: AuthContext,
  list: readonly ContactValues[]
): Promise<ContactRowOut[]> {
  const rows = list.map(values => ({ ...values, tenant_id: auth.tenantId, owner_id: auth.userId, org_id: auth.orgId }))
  // the columns of the statement: every key of any row (a row without one has DEFAULT there, no parameter)
  const columns = new Set(rows.flatMap(r => Object.keys(r))).size
  const created: ContactRowOut[] = []
  for (const chunk of rowChunks(rows, columns)) {
    created.push(...await trx.insertInto('contacts').values(chunk).returning(COLUMNS).execute())
  }
  return created
}

/** The column type of each writable field: the parameters of a VALUES list carry none (`updateContacts`). */
const FIELD_TYPES: Record<keyof ContactValues, 'text' | 'text[]' | 'boolean'> = {
  is_favorite: 'boolean',
  first_name: 'text',
  middle_name: 'text',
  last_name: 'text',
  nickname: 'text',
  email: 'text',
  phone_primary: 'text',
  phone_secondary: 'text',
  phone_work: 'text',
  company: 'text',
  job_title: 'text',
  address_line1: 'text',
  address_line2: 'text',
  city: 'text',
  state_province: 'text',
  postal_code: 'text',
  country: 'text',
  website: 'text',
  avatar_url: 'text',
  notes: 'text',
  linked_user_id: 'text',
  tags: 'text[]',
  phone_primary_e164: 'text',
  phone_secondary_e164: 'text',
  phone_work_e164: 'text',
  invalid_phones: 'text[]',
  locale: 'text'
}
const FIELDS = Object.keys(FIELD_TYPES) as Array<keyof ContactValues>

/**
 * Writes to each contact (by id, of the tenant) the fields present in its values, as `updateContact` does one by
 * one: fields present replace, absent ones stay, the revision and `updated_at` move on (`bumpRevision`); returns the
 * rows written. One `UPDATE contacts c SET … FROM (VALUES …) v WHERE c.id = v.id` per chunk of rows that fits
 * PostgreSQL's 65 535 bind parameters (one for any upsert batch), whatever mix of fields the rows carry: a field
 * present in every row of the chunk is set from `v`; one present in some only is set under a bit of the row's
 * `present` mask (`case when (v.present & bit) <> 0 then v.field else c.field end`: an absent field is written back
 * unchanged). The kept counts (row_counts) follow from the statement-level update trigger, as for any update.
 */
export async function updateContacts (
  trx: Tx,
  tenantId: string,
  rows: ReadonlyArray<{ id: string, values: ContactValues }>
): Promise<ContactRowOut[]> {
  const has = (r: { values: ContactValues }, f: keyof ContactValues) => Object.hasOwn(r.values, f)
  const anyFields = FIELDS.filter(f => rows.some(r => has(r, f)))
  const updated: ContactRowOut[] = []
  // per row: its id, its mask and a value per field (the tenant and the array of ids: one parameter each)
  for (const chunk of rowChunks(rows, anyFields.length + 3)) {
    const fields = anyFields.filter(f => chunk.some(r => has(r, f)))
    const always = new Set(fields.filter(f => chunk.every(r => has(r, f))))
    const sometimes = fields.filter(f => !always.has(f))
    const bit = (f: keyof ContactValues) => 2 ** sometimes.indexOf(f)
    const tuples = chunk.map(r => {
      const present = sometimes.reduce((mask, f) => has(r, f) ? mask + bit(f) : mask, 0)
      const cells = fields.map(f => sql`${r.values[f] ?? null}::${sql.raw(FIELD_TYPES[f])}`)
      return sql`(${sql.join([sql`${r.id}::uuid`, sql`${present}::int`, ...cells])})`
    })
    const sets = [
      ...fields.map(f => always.has(f)
        ? sql`${sql.id(f)} = v.${sql.id(f)}`
        : sql`${sql.id(f)} = case when (v.present & ${sql.lit(bit(f))}) <> 0 then v.${sql.id(f)}
          else c.${sql.id(f)} end`),
      ...Object.entries(bumpRevision()).map(([column, value]) => sql`${sql.id(column)} = ${value}`)
    ]
    const { rows: written } = await sql<ContactRowOut>`update contacts as c set ${sql.join(sets)}
      from (values ${sql.join(tuples)}) as v (id, present${sql.join(fields.map(f => sql`, ${sql.id(f)}`), sql``)})
      where c.tenant_id = ${tenantId} and c.id = any(${chunk.map(r => r.id)}::uuid[]) and c.id = v.id
      returning ${sql.join(COLUMNS.map(col => sql`c.${sql.id(col)}`))}`.execute(trx)
    updated.push(...written)
  }
  return updated
}

export async function deleteContact (trx: Tx, tenantId: string, id: string): Promise<void> {
  await trx.deleteFrom('contacts').where('tenant_id', '=', tenantId).where('id', '=', id).execute()
}

/** Text fields sort case-insensitively, as people expect of names. */
const TEXT_SORT = new Set(['first_name', 'last_name', 'email', 'company'])

/**
 * What a search matches: the term anywhere in the text of names, e-mail and company (`%`, `_` and `\` literal; the
 * trigram index), or, for a term that looks like a phone number (`phone`, contacts.phones.ts), the reversed digits of
 * one of the three numbers (the `contacts_phone_*` indexes): those of a number (equal to its E.164 form's, or, for a
 * number kept as typed, starting with its national number's) or of a suffix (starting with it). One `or`, which
 * PostgreSQL answers with a bitmap OR of the four indexes (the `e164 is null` of a number typed is checked on the rows
 * the index found).
 */
function searchMatch (eb: Eb, term: string, phone: PhoneSearch | undefined): Expression<SqlBool> {
  const text = eb('search_text', 'like', likePattern(term))
  if (phone === undefined) return text
  return eb.or([text, ...PHONE_FIELDS.map(field => {
    const rev = REV_COLUMNS[field]
    if ('suffix' in phone) return eb(rev, 'like', `${phone.suffix}%`)
    if (phone.national === undefined) return eb(rev, '=', phone.number)
    return eb.and([
      eb(rev, 'like', `${phone.national}%`),
      eb.or([eb(rev, '=', phone.number), eb(E164_COLUMNS[field], 'is', null)])
    ])
  })])
}

export interface ListOptions {
  page: number
  size: number
  cursor?: string | undefined
  search?: string | undefined
  /** the phone match of `search`, when it looks like a phone number */
  phone?: PhoneSearch | undefined
  sortBy: typeof CONTACT_SORT_FIELDS[number]
  sortDir: 'asc' | 'desc'
  favorite?: boolean | undefined
  /** how the total is counted: from row_counts (migration 0020) when this database keeps them */
  counting: Counting
}

/** The trigger that keeps the contacts' counts in row_counts (absent on Citus) */
export const CONTACT_COUNTS_TRIGGER = 'contacts_counts_insert'

/**
 * The total of the contacts the caller sees (visibleTo), from the kept counts: the contacts of the
 * caller's organization (any organization's, for tenant admins) and the caller's own outside it. One statement.
 */
function keptVisibleTotal (trx: Tx, auth: AuthContext, favorite: boolean | undefined) {
  const fav = favorite === undefined ? sql<boolean>`true` : sql<boolean>`k3 = ${String(favorite)}`
  const kept = (where: RawBuilder<boolean>) => keptSum(auth.tenantId, 'contacts', sql<boolean>`${where} and ${fav}`)
  const own = (outside: RawBuilder<boolean>) => kept(sql<boolean>`k2 = ${auth.userId} and ${outside}`)
  const parts = auth.permissions.has('tenant:admin')
    ? [kept(sql<boolean>`k1 <> ''`), own(sql<boolean>`k1 = ''`)]
    : auth.orgId === null
      ? [own(sql<boolean>`true`)]
      : [kept(sql<boolean>`k1 = ${auth.orgId}`), own(sql<boolean>`k1 <> ${auth.orgId}`)]
  return totalQuery(trx, parts)
}

/** The contacts of the list: those the caller sees, of the search and the favorite filter. */
function listBase (
  trx: Tx,
  auth: AuthContext,
  o: { search?: string | undefined, phone?: PhoneSearch | undefined, favorite?: boolean | undefined }
) {
  return trx.selectFrom('contacts')
    .where(eb => visibleTo(eb, auth))
    .$if(o.search !== undefined && o.search !== '', qb => qb.where(eb => searchMatch(eb, o.search ?? '', o.phone)))
    .$if(o.favorite !== undefined, qb => qb.where('is_favorite', '=', o.favorite ?? false))
}

/** What a page of changes of the contacts list reads (`listChanges`). */
export interface ChangesOptions extends ChangesWindow {
  search?: string | undefined
  phone?: PhoneSearch | undefined
  favorite?: boolean | undefined
}

/**
 * A page of the changes of the contacts list since a sync point (docs/integrations.md, "Incremental sync"): the
 * contacts changed above the position `since` that the caller could see at one of those changes (its owner and
 * organization then, as visibleTo reads them now), each once at its latest change, in the order of that change
 * (its position); those in the list now (listBase) as rows, the others as tombstones. Their total, and the last.
 */
export async function listChanges (trx: Tx, auth: AuthContext, o: ChangesOptions) {
  if (o.search !== undefined && o.search !== '') await planForValues(trx)
  const shared = auth.permissions.has('tenant:admin')
    ? sql`org_id is not null`
    : auth.orgId !== null ? sql`org_id = ${auth.orgId}` : sql`false`
  return await readChanges(trx, {
    tenantId: auth.tenantId,
    kind: 'contact',
    since: o.since,
    after: o.after,
    upto: o.upto,
    size: o.size,
    where: sql<SqlBool>`(owner_id = ${auth.userId} or ${shared})`,
    id: key => key,
    rows: async ids => await listBase(trx, auth, o).select(COLUMNS).where('id', 'in', ids).execute()
  })
}

/** A page of the contacts the caller sees, its total, and the cursor of the next page (docs/pagination.md). */
export async function listVisible (trx: Tx, auth: AuthContext, o: ListOptions) {
  if (o.search !== undefined && o.search !== '') await planForValues(trx)
  const text = TEXT_SORT.has(o.sortBy)
  const keys: KeyColumn[] = [
    { ref: o.sortBy, dir: o.sortDir, type: text ? 'text' : 'time', nullable: text, lower: text },
    { ref: 'id', dir: o.sortDir, type: 'uuid' }
  ]
  const window = pageWindow(
    o,
    // the phone match only when there is one: the cursors of other lists keep their scope
    listScope('contacts', {
      sortBy: o.sortBy,
      sortDir: o.sortDir,
      search: o.search,
      favorite: o.favorite,
      ...(o.phone !== undefined ? { phone: o.phone } : {})
    }),
    keys
  )
  const base = listBase(trx, auth, o)
  type Page = typeof base
  // after the cursor in the keys' order; `nulls last` only for the names, so the newest-first order is the indexes'
  const ordered = (qb: Page): Page => fromCursor(qb, keys, window)
  // A member's contacts by creation time: their own and their organization's, each read from its index
  // (contacts_owner, contacts_org) in the list's order up to the page's end, the page from their union.
  // As one `or`, PostgreSQL sorted every contact of the organization for each page.
  const branches =
    o.sortBy === 'created_at' && (o.search ?? '') === '' && !auth.permissions.has('tenant:admin') && auth.orgId !== null
  const picked = (qb: Page): Page => {
    if (!branches) return qb
    const reach = window.offset + window.limit
    const branch = (where: (eb: Eb) => Expression<SqlBool>) =>
      trx.selectFrom(ordered(base.where(where)).select('id').limit(reach).as('b')).select('b.id')
    return qb.where(
      'id',
      'in',
      branch(eb => eb('owner_id', '=', auth.userId)).union(branch(eb => eb('org_id', '=', auth.orgId ?? '')))
    )
  }
  const [rows, counted] = await together(trx, [
    ordered(picked(base))
      .select(COLUMNS)
      // the sort value as PostgreSQL compares it, for the cursor (not part of the body)
      .select(sql<unknown>`${keyExpression(keys[0] as KeyColumn)}`.as('sort_key'))
      .limit(window.limit).offset(window.offset),
    // a text filter counts its matches; otherwise the kept counts answer
    o.counting === 'kept' && (o.search === undefined || o.search === '')
      ? keptVisibleTotal(trx, auth, o.favorite)
      : countOf(base)
  ])
  const page = pageOf(rows, window, r => [r.sort_key, r.id])
  return { ...page, items: page.items.map(({ sort_key: _key, ...contact }) => contact), total: totalIn(counted) }
}

/**
 * Best matches first: trigram similarity to the whole term, then name. One pass over the matches
 * ranks them and counts them (`count(*) over ()` on narrow rows); the page's full rows are then
 * read by key. Two statements (page, count) read every match twice.
 */
const SEARCH_KEYS: KeyColumn[] = [
  { ref: 'm.rank', dir: 'desc', type: 'number' },
  { ref: 'm.last_name', dir: 'asc', type: 'text', nullable: true },
  { ref: 'm.first_name', dir: 'asc', type: 'text', nullable: true },
  { ref: 'm.id', dir: 'asc', type: 'uuid' }
]

export async function searchVisible (
  trx: Tx,
  auth: AuthContext,
  query: string,
  limit: number,
  cursor?: string,
  phone?: PhoneSearch
) {
  await planForValues(trx)
  const scope = listScope('contact-search', { query, ...(phone !== undefined ? { phone } : {}) })
  const window = pageWindow({ size: limit, cursor }, scope, SEARCH_KEYS)
  const matches = trx.selectFrom('contacts')
    .select(['id', 'last_name', 'first_name'])
    .select(sql<number>`similarity(search_text, ${query.toLowerCase()})`.as('rank'))
    .select(sql<string>`count(*) over ()`.as('total'))
    .where(eb => visibleTo(eb, auth))
    .where(eb => searchMatch(eb, query, phone))
  // every match is ranked and counted (the total), then the page is taken (after the cursor's match when there is one)
  const ranked = trx.selectFrom(matches.as('m')).selectAll('m')
    .$if(window.after !== undefined, qb => qb.where(eb => afterKey(eb, SEARCH_KEYS, window.after ?? [])))
    .orderBy('m.rank', 'desc').orderBy('m.last_name').orderBy('m.first_name').orderBy('m.id').limit(window.limit)
  const rows = await trx.selectFrom(ranked.as('m'))
    .innerJoin('contacts as c', join => join.on('c.tenant_id', '=', auth.tenantId).onRef('c.id', '=', 'm.id'))
    .select(COLUMNS.map(col => `c.${col}` as const))
    .select(['m.total', 'm.rank'])
    .orderBy('m.rank', 'desc').orderBy('m.last_name').orderBy('m.first_name').orderBy('m.id')
    .execute()
  const page = pageOf(rows, window, r => [r.rank, r.last_name, r.first_name, r.id])
  return {
    items: page.items.map(({ total: _total, rank: _rank, ...contact }) => contact),
    // past the last match the page is empty: the total of an empty page is counted again
    total: rows[0] !== undefined ? Number(rows[0].total) : await countMatches(trx, auth, query, phone),
    next_cursor: page.next_cursor
  }
}

async function countMatches (trx: Tx, auth: AuthContext, query: string, phone?: PhoneSearch): Promise<number> {
  const row = await trx.selectFrom('contacts').select(eb => eb.fn.countAll<number>().as('n'))
    .where(eb => visibleTo(eb, auth)).where(eb => searchMatch(eb, query, phone)).executeTakeFirstOrThrow()
  return Number(row.n)
}

/**
 * Other contacts the caller sees with the e-mail key (trimmed and lower-cased; e-mails are stored trimmed, so
 * `lower(email)` and the index contacts_email answer it) or a number with the same digits (reversed, as the generated
 * columns hold them: equality on the `contacts_phone_*` indexes), oldest first: the possible duplicates of a contact
 * just created.
 */
export async function findPossibleDuplicates (
  trx: Tx,
  auth: AuthContext,
  of: { id: string, emailKey: string | null, phoneKeys: string[] },
  limit: number
): Promise<string[]> {
  if (of.emailKey === null && of.phoneKeys.length === 0) return []
  const rows = await trx.selectFrom('contacts').select('id')
    .where(eb => visibleTo(eb, auth))
    .where('id', '<>', of.id)
    .where(eb => eb.or([
      ...(of.emailKey !== null ? [eb(sql<string>`lower(email)`, '=', of.emailKey)] : []),
      ...(of.phoneKeys.length > 0 ? PHONE_FIELDS.map(field => eb(REV_COLUMNS[field], 'in', of.phoneKeys)) : [])
    ]))
    .orderBy('created_at').orderBy('id')
    .limit(limit)
    .execute()
  return rows.map(r => r.id)
}

/** Contacts in the caller's upsert scope (their organization's, or their personal ones) by e-mail. */
export async function lockByEmails (trx: Tx, auth: AuthContext, emails: string[]) {
  return await trx.selectFrom('contacts').select(COLUMNS)
    .where('tenant_id', '=', auth.tenantId)
    .where(eb => auth.orgId !== null
      ? eb('org_id', '=', auth.orgId)
      : eb.and([eb('org_id', 'is', null), eb('owner_id', '=', auth.userId)]))
    .where(sql<string>`lower(email)`, 'in', emails)
    .orderBy('created_at').orderBy('id')
    .forUpdate()
    .execute()
}

/** Serializes upserts of one scope, so two batches never both create the same e-mail. */
export async function lockUpsertScope (trx: Tx, auth: AuthContext): Promise<void> {
  const scope = `contacts-upsert|${auth.tenantId}|${auth.orgId ?? `user:${auth.userId}`}`
  await sql`select pg_advisory_xact_lock(hashtextextended(${scope}, 0))`.execute(trx)
}

/** Tenants with contacts whose numbers were never read (migration 0028), after `after`, in order (worker login). */
export async function tenantsWithUnreadPhones (trx: Tx, after: string, limit: number): Promise<string[]> {
  const { rows } = await sql<{ tenant_id: string }>`select distinct tenant_id from contacts
    where invalid_phones is null and tenant_id > ${after} order by tenant_id limit ${limit}`.execute(trx)
  return rows.map(r => r.tenant_id)
}

/** Up to `limit` contacts of the tenant whose numbers were never read, locked (others' locks skipped). */
export async function lockUnreadPhones (trx: Tx, tenantId: string, limit: number) {
  return await trx.selectFrom('contacts')
    .select(['id', ...PHONE_FIELDS, ...PHONE_FIELDS.map(f => E164_COLUMNS[f]), 'invalid_phones'])
    .where('tenant_id', '=', tenantId).where('invalid_phones', 'is', null)
    .limit(limit).forUpdate().skipLocked()
    .execute()
}

/**
 * The contact of a public registration with this e-mail key among those the event's creator sees as a member (their
 * own, and their organization's): the oldest, locked (contacts.guests.ts).
 */
export async function findRegistrationMatch (
  trx: Tx,
  tenantId: string,
  creatorId: string,
  orgId: string | null,
  key: string
) {
  return await trx.selectFrom('contacts').select(['id'])
    .where('tenant_id', '=', tenantId)
    .where(sql<string>`lower(email)`, '=', key)
    .where(eb => eb.or([eb('owner_id', '=', creatorId), ...(orgId !== null ? [eb('org_id', '=', orgId)] : [])]))
    .orderBy('created_at').orderBy('id')
    .limit(1)
    .forUpdate()
    .executeTakeFirst()
}

/** A contact made by a public registration: the event creator's, in the event's organization, no phone to read. */
export async function insertRegistrationContact (
  trx: Tx,
  v: {
    tenantId: string,
    creatorId: string,
    orgId: string | null,
    firstName: string,
    lastName: string | null,
    email: string,
    locale: string
  }
) {
  return await trx.insertInto('contacts').values({
    tenant_id: v.tenantId,
    owner_id: v.creatorId,
    org_id: v.orgId,
    first_name: v.firstName,
    last_name: v.lastName,
    email: v.email.trim(),
    locale: v.locale,
    invalid_phones: []
  }).returning(['id', 'email']).executeTakeFirstOrThrow()
}
