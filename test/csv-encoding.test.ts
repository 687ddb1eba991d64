/**
 * The encoding of every CSV export as its readers take it (docs/exports.md, "Encoding and byte-order mark"): a UTF-8
 * byte-order mark first by default (Excel on Windows reads UTF-8 only after one), none with `?bom=false`; csv-parse
 * drops the mark with `bom: true` (and keeps it in the first header without), Python's csv module reads it with
 * `utf-8-sig`; a non-ASCII name (Zoë) comes through every one of them.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { parse } from 'csv-parse/sync'
import type { LightMyRequestResponse } from 'fastify'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { expectStatus } from './helpers/requests.ts'
import {
  createContact, createEvent, insertAttendee, publishEvent
} from '../src/modules/attendees/attendees.fixtures.ts'
import { createSpace } from '../src/modules/spaces/spaces.fixtures.ts'

const BOM = [0xef, 0xbb, 0xbf]

/** The rows of a CSV file as Python's csv module reads them, opened with `encoding` (dicts by header). */
function pythonRows (bytes: Buffer, encoding: string): Array<Record<string, string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'csv-'))
  const file = path.join(dir, 'export.csv')
  try {
    fs.writeFileSync(file, bytes)
    const script = 'import csv, json, sys\n' +
      'with open(sys.argv[1], newline="", encoding=sys.argv[2]) as f:\n' +
      '    print(json.dumps(list(csv.DictReader(f))))\n'
    const run = spawnSync('python3', ['-c', script, file, encoding], { encoding: 'utf8' })
    assert.equal(run.status, 0, run.stderr)
    return JSON.parse(run.stdout) as Array<Record<string, string>>
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const csvParse = (bytes: Buffer, bom: boolean) =>
  parse(bytes, { columns: true, bom }) as Array<Record<string, string>>

/** A CSV answer: 200, `text/csv; charset=utf-8`, a byte-order mark first when `bom`, else the header's bytes. */
function csvAnswer (res: LightMyRequestResponse, bom: boolean, header: string): Buffer {
  assert.equal(res.statusCode, 200, res.body.slice(0, 300))
  assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
  const bytes = res.rawPayload
  const head = Buffer.from(header, 'utf8')
  if (bom) {
    assert.deepEqual([...bytes.subarray(0, 3)], BOM)
    assert.ok(bytes.subarray(3, 3 + head.length).equals(head), bytes.subarray(0, 40).toString())
  } else {
    assert.ok(bytes.subarray(0, head.length).equals(head), bytes.subarray(0, 40).toString())
  }
  return bytes
}

const get = async (t: TestApp, token: string, url: string) => await t.as(token, { method: 'GET', url })

for (const kind of databases()) {
  void describe(`${kind}: CSV encoding`, () => {
    const t = useTestApp(kind)

    void it('an attendee named Zoë survives Excel\'s byte-order mark, csv-parse and Python; bom=false for machines',
      async () => {
        const tenant = newTenant(t)
        const alice = await tenant.user('alice')
        const event = await createEvent(t, alice, { title: 'Café', start_dt: '2031-05-02T10:00:00Z' })
        const zoe = await createContact(t, alice, { first_name: 'Zoë', last_name: 'Çelik-Øster 日本' })
        await insertAttendee(t, tenant.id, { event_id: event.id as number, contact_id: zoe, status: 'confirmed' })
        const url = `/api/v1/events/${event.id as number}/attendees/export`

        for (const query of ['', '?bom=true', '?bom=1']) {
          const bytes = csvAnswer(await get(t, alice, `${url}${query}`), true, 'event_id,')
          // csv-parse keeps the mark in the first header unless told `bom: true`
          assert.deepEqual(Object.keys(csvParse(bytes, false)[0] ?? {})[0], '\ufeffevent_id')
          const rows = csvParse(bytes, true)
          assert.deepEqual(rows.map(r => [r.event_id, r.first_name, r.last_name]),
            [[String(event.id), 'Zoë', 'Çelik-Øster 日本']])
          const py = pythonRows(bytes, 'utf-8-sig')
          assert.deepEqual(py.map(r => [r.event_id, r.first_name, r.last_name]),
            [[String(event.id), 'Zoë', 'Çelik-Øster 日本']])
        }

        const plain = csvAnswer(await get(t, alice, `${url}?bom=false`), false, 'event_id,series_id,')
        assert.ok(csvAnswer(await get(t, alice, `${url}?bom=0`), false, 'event_id,').equals(plain))
        assert.deepEqual(csvParse(plain, false).map(r => r.first_name), ['Zoë'])
        // utf-8-sig reads a text without the mark as well; plain utf-8 too
        assert.deepEqual(pythonRows(plain, 'utf-8-sig').map(r => r.first_name), ['Zoë'])
        assert.deepEqual(pythonRows(plain, 'utf-8').map(r => r.event_id), [String(event.id)])

        const bad = await get(t, alice, `${url}?bom=maybe`)
        assert.equal(bad.statusCode, 400, bad.body)
        assert.ok(bad.json().errors.some((e: { location: string }) => e.location === 'query.bom'), bad.body)
      })

    void it('every CSV export takes bom: the series attendees, the space analytics, the audit log', async () => {
      const tenant = newTenant(t)
      const root = await tenant.user('root', ['admin'])
      const anchor = await createEvent(t, root, { title: 'Zoë\'s walk', start_dt: '2031-03-02T10:00:00Z' })
      await expectStatus(t, root, 'POST', `/api/v1/events/${anchor.id as number}/series`, 201,
        { freq: 'daily', ends_on: 'after_n', end_count: 2 })
      const space = await createSpace(t, root, { title: 'Garden' })
      const evening = await createEvent(t, root, { title: 'Zoë\'s evening', start_dt: '2031-03-05T18:00:00Z' })
      await publishEvent(t, root, evening.id as number)
      await expectStatus(t, root, 'POST', `/api/v1/spaces/${space.id as number}/events`, 201, { event_id: evening.id })
      const exports = [
        { url: `/api/v1/events/${anchor.id as number}/series/attendees/export`, header: 'occurrence_event_id,' },
        { url: `/api/v1/spaces/${space.id as number}/analytics/export`, header: 'event_id,title,' },
        { url: '/api/v1/audit-log/export?format=csv', header: 'seq,at,' }
      ]
      for (const { url, header } of exports) {
        const join = url.includes('?') ? '&' : '?'
        const marked = csvAnswer(await get(t, root, url), true, header)
        const plain = csvAnswer(await get(t, root, `${url}${join}bom=false`), false, header)
        assert.ok(marked.subarray(3).equals(plain), url)
        assert.deepEqual(csvParse(marked, true), csvParse(plain, false), url)
        assert.equal((await get(t, root, `${url}${join}bom=yes`)).statusCode, 400, url)
      }
      const analytics = csvParse(csvAnswer(await get(t, root, exports[1]?.url ?? ''), true, 'event_id,'), true)
      assert.deepEqual(analytics.map(r => r.title), ['Zoë\'s evening'])
    })
  })
}
