/**
 * Dates of the years 0001 – 0099 (and BC, and infinity) read back exactly on both databases:
 * PGlite's own timestamptz parser handed PostgreSQL's text (`0042-05-01 10:00:00+00`) to
 * `new Date()`, which reads a two-digit-like year as 19xx/20xx, so a read-then-write saved
 * another date. Both drivers now parse with the same functions (src/platform/db/database.ts).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { databases, newTenant, useTestApp } from '../../test/helpers/build-app.ts'

const TIMESTAMPTZ = 1184
const TIMESTAMP = 1114
const DATE = 1082

for (const kind of databases()) {
  void describe(`${kind}: timestamps of every year`, () => {
    const t = useTestApp(kind)

    void it('parses timestamptz, timestamp and date (and their arrays) as the pg driver does', async () => {
      const texts = [
        '0042-05-01 10:00:00+00',
        '0001-01-01 00:00:00+00',
        '0099-12-31 23:59:59.5+00',
        '0100-03-01 00:00:00+00',
        '1969-07-20 20:17:40+00',
        '2026-05-01 10:00:00.123456+00',
        '0044-03-15 12:00:00+00 BC',
        'infinity',
        '-infinity'
      ]
      const rows = await sql<{ tz: unknown; ts: unknown; d: unknown; tzs: unknown[] }>`
        select x::timestamptz as tz, (x::timestamptz at time zone 'UTC') as ts,
          (x::timestamptz at time zone 'UTC')::date as d,
               array[x::timestamptz, '0042-05-01 10:00:00+00'::timestamptz] as tzs
        from unnest(${texts}::text[]) with ordinality as u(x, n) order by n`.execute(t.ctx.db)
      const tzText = await sql<{ tz: string; ts: string; d: string }>`
        select x::timestamptz::text as tz, (x::timestamptz at time zone 'UTC')::text as ts,
          (x::timestamptz at time zone 'UTC')::date::text as d
        from unnest(${texts}::text[]) with ordinality as u(x, n) order by n`.execute(t.ctx.db)
      const parse = (oid: number, v: string): unknown => pg.types.getTypeParser(oid, 'text')(v)
      const same = (a: unknown, b: unknown): boolean =>
        a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b
      for (const [i, row] of rows.rows.entries()) {
        const text = tzText.rows[i]
        assert.ok(text !== undefined)
        assert.ok(same(row.tz, parse(TIMESTAMPTZ, text.tz)), `timestamptz ${text.tz}: got ${String(row.tz)}`)
        assert.ok(same(row.ts, parse(TIMESTAMP, text.ts)), `timestamp ${text.ts}: got ${String(row.ts)}`)
        assert.ok(same(row.d, parse(DATE, text.d)), `date ${text.d}: got ${String(row.d)}`)
        assert.ok(same(row.tzs[1], new Date('0042-05-01T10:00:00Z')), `timestamptz[]: got ${String(row.tzs[1])}`)
      }
      const first = rows.rows[0]?.tz
      assert.ok(first instanceof Date)
      assert.equal(first.toISOString(), '0042-05-01T10:00:00.000Z')
    })

    void it('round-trips 0042-05-01T10:00:00Z through the API, also across a read-then-write', async () => {
      const alice = await newTenant(t).user('alice', ['member'])
      const created = await t.as(alice, {
        method: 'POST',
        url: '/api/v1/events',
        payload: { title: 'Ides', start_dt: '0042-05-01T10:00:00Z', end_dt: '0042-05-01T12:30:00Z', timezone: 'UTC' }
      })
      assert.equal(created.statusCode, 201, created.body)
      const e = created.json<{ id: number, start_dt: string, end_dt: string }>()
      assert.equal(e.start_dt, '0042-05-01T10:00:00.000Z')
      assert.equal(e.end_dt, '0042-05-01T12:30:00.000Z')
      const got = await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}` })
      assert.equal(got.statusCode, 200)
      assert.equal(got.json<{ start_dt: string }>().start_dt, '0042-05-01T10:00:00.000Z')
      // a change of another field: the service reads the row and writes it back
      const patched = await t.as(alice, {
        method: 'PATCH',
        url: `/api/v1/events/${e.id}`,
        payload: { title: 'Ides of May' }
      })
      assert.equal(patched.statusCode, 200, patched.body)
      const after = (await t.as(alice, { method: 'GET', url: `/api/v1/events/${e.id}` })).json<{
        title: string
        start_dt: string
        end_dt: string
      }>()
      assert.equal(after.title, 'Ides of May')
      assert.equal(after.start_dt, '0042-05-01T10:00:00.000Z')
      assert.equal(after.end_dt, '0042-05-01T12:30:00.000Z')
      const stored = await sql<{
        s: string
      }>`select to_char(start_dt at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as s from events
        where id = ${e.id}`.execute(
        t.ctx.db
      )
      assert.equal(stored.rows[0]?.s, '0042-05-01 10:00:00')
    })
  })
}
