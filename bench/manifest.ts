/**
 * What the scenarios address, sampled from the seeded database once before the servers start:
 * ids of events and contacts each tenant's members can see, events whose creators patch them,
 * search terms, the showcase space. Saved next to the data as JSON.
 */
import { BIG_TENANT, SHOWCASE_HANDLE, TENANTS, tenantId } from './seed.ts'
import type { SqlRunner } from './sql-runner.ts'

export interface Manifest {
  /** per tenant: event ids a member of the organization may read */
  events: Record<string, number[]>
  /** per tenant: contact ids of the organization */
  contacts: Record<string, string[]>
  /** published events with their creator and revision, for PATCH (each held by one connection at a time) */
  patchable: Array<{ tenant: string, id: number, creator: string, revision: number }>
  /** last names present in the largest tenant */
  searchTerms: string[]
  /** E.164 numbers (`phone_primary_e164`) of contacts of the largest tenant, for the phone searches */
  phones: string[]
  showcase: { id: number, tenant: string, handle: string, creator: string }
  /** one occurrence of each seeded series (GET …/series) */
  seriesEvents: number[]
  /** contact ids of the largest tenant for bulk attendee adds */
  bulkContacts: string[]
  /** month of the largest tenant's calendar, YYYY-MM-01 */
  month: { start: string, end: string }
  /** start_dt_after values for the list scenario */
  listAfter: string[]
}

export async function buildManifest (db: SqlRunner): Promise<Manifest> {
  const events: Record<string, number[]> = {}
  const contacts: Record<string, string[]> = {}
  const ev = await db.query<{ tenant_id: string, ids: number[] }>(`
    select tenant_id, (array_agg(id order by md5(id::text)))[1:300] as ids
    from events where status = 'published' and visibility in (30, 40) and tenant_id like 'bench-t%'
    group by tenant_id`)
  for (const r of ev) events[r.tenant_id] = r.ids.map(Number)
  for (let n = 0; n < TENANTS; n++) {
    const t = tenantId(n)
    const rows = await db.query<{ id: string }>(
      "select id from contacts where tenant_id = $1 and org_id = 'org-main' order by md5(id::text) limit 300",
      [t]
    )
    contacts[t] = rows.map(r => r.id)
  }
  const patchable = await db.query<{ tenant: string, id: number, creator: string, revision: number }>(`
    select tenant_id as tenant, id, creator_id as creator, revision from events
    where status = 'published' and tenant_id like 'bench-t%'
    order by md5(id::text) limit 2000`)
  const terms = await db.query<{ last_name: string }>(
    `
    select last_name from contacts where tenant_id = $1 group by last_name order by md5(last_name) limit 400`,
    [BIG_TENANT]
  )
  const phones = await db.query<{ phone: string }>(
    `select phone_primary_e164 as phone from contacts where tenant_id = $1 and phone_primary_e164 is not null
    order by md5(id::text) limit 400`,
    [BIG_TENANT]
  )
  const show = await db.query<{ id: number, tenant_id: string, creator_id: string }>(
    'select id, tenant_id, creator_id from spaces where public_handle = $1', [SHOWCASE_HANDLE])
  const s = show[0]
  if (s === undefined) throw new Error('the showcase space is missing: seed first')
  const hasSeries =
    (await db.query<{ ok: boolean }>("select to_regclass('event_series') is not null as ok"))[0]?.ok === true
  const seriesEvents = hasSeries
    ? (
        await db.query<{ id: number }>(
          'select min(id) as id from events where tenant_id = $1 and series_id is not null group by series_id',
          [BIG_TENANT]
        )
      ).map(r => Number(r.id))
    : []
  const bulkContacts = (
    await db.query<{ id: string }>('select id from contacts where tenant_id = $1 order by md5(id::text) limit 3000', [
      BIG_TENANT
    ])
  ).map(r => r.id)
  const now = new Date()
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1))
  const monthEnd = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 0))
  const listAfter: string[] = []
  for (let i = 0; i < 24; i++) listAfter.push(new Date(Date.UTC(now.getUTCFullYear() - 5, i * 3, 1)).toISOString())
  return {
    events,
    contacts,
    patchable: patchable.map(p => ({ ...p, id: Number(p.id), revision: Number(p.revision) })),
    searchTerms: terms.map(t => t.last_name.toLowerCase()),
    phones: phones.map(p => p.phone),
    seriesEvents,
    bulkContacts,
    showcase: { id: Number(s.id), tenant: s.tenant_id, handle: SHOWCASE_HANDLE, creator: s.creator_id },
    month: { start: month.toISOString().slice(0, 10), end: monthEnd.toISOString().slice(0, 10) },
    listAfter
  }
}
