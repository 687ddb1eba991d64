/**
 * The SQL of the hot and complex requests, checked in as readable files (test/sql/*.md), so that a change to the
 * statements the service sends shows in review as a diff of SQL, not only as a changed figure of the bench.
 *
 * Each snapshot is every statement one request sends, in order, as the database receives it (BEGIN, the tenant
 * scope and COMMIT included), formatted by sql-formatter, one fenced `sql` block a statement under a heading that
 * numbers it: Markdown, so that review shows the request, the count and each statement highlighted. The files are
 * expected output, written by this test and never by hand. Values travel as parameters and are not part of the
 * text; ids of this run that a statement names as literals are replaced by placeholders. On PostgreSQL the texts
 * must be the same as on PGlite (one file for both); on Citus, a file of its own under test/sql/citus where the
 * cluster's statements differ (snapshotFile).
 *
 * After an intended change: `UPDATE_SQL_SNAPSHOTS=1 npm test -- test/sql-snapshots.test.ts`, then read the diff.
 */
import { before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { format } from 'sql-formatter'
import { databases, newTenant, useTestApp, type TestApp } from './helpers/build-app.ts'
import { watchStatements } from './helpers/statements.ts'

const DIR = path.join(import.meta.dirname, 'sql')
const UPDATE = process.env.UPDATE_SQL_SNAPSHOTS === '1'

interface Capture { texts: string[], restore (): void }

/** Records the text of every statement this process sends to the test database. */
function capture (t: TestApp): Capture {
  const texts: string[] = []
  const watch = watchStatements(t, text => { texts.push(text) })
  return { texts, restore: () => { watch.restore() } }
}

/** The snapshot text of one request: a header, then each statement formatted and numbered. */
function render (title: string, texts: string[], literals: Map<string, string>): string {
  const statements = texts.map((text, i) => {
    let s = text
    for (const [value, name] of literals) s = s.split(value).join(name)
    let formatted: string
    try {
      formatted = format(s, { language: 'postgresql', tabWidth: 2, keywordCase: 'lower', linesBetweenQueries: 1 })
    } catch {
      formatted = s.trim() // a statement sql-formatter cannot parse stays as sent
    }
    return `## ${i + 1}\n\n\`\`\`sql\n${formatted.trim()};\n\`\`\`\n`
  })
  const count = `${texts.length} statements, in the order the database receives them.`
  return `# ${title}\n\n${count} Written by test/sql-snapshots.test.ts.\n\n${statements.join('\n')}`
}

/**
 * The snapshot file of a request on a kind of database: one file for PGlite and PostgreSQL; on Citus, where some
 * statements must differ (no triggers keep the list's totals there: docs/scale-out.md), `sql/citus/<name>.md` when
 * the cluster's text differs, else the shared file.
 */
function snapshotFile (kind: string, name: string): string {
  const own = path.join(DIR, 'citus', `${name}.md`)
  return kind === 'citus' && fs.existsSync(own) ? own : path.join(DIR, `${name}.md`)
}

function check (kind: string, name: string, text: string): void {
  if (UPDATE) {
    const shared = path.join(DIR, `${name}.md`)
    const own = path.join(DIR, 'citus', `${name}.md`)
    if (kind !== 'citus') {
      fs.mkdirSync(DIR, { recursive: true })
      fs.writeFileSync(shared, text)
    } else if (fs.existsSync(shared) && fs.readFileSync(shared, 'utf8') === text) {
      fs.rmSync(own, { force: true })
    } else {
      fs.mkdirSync(path.dirname(own), { recursive: true })
      fs.writeFileSync(own, text)
    }
    return
  }
  const file = snapshotFile(kind, name)
  assert.ok(fs.existsSync(file), `${file} is missing: run with UPDATE_SQL_SNAPSHOTS=1 to write it`)
  assert.equal(text, fs.readFileSync(file, 'utf8'), `the SQL of ${name} changed: UPDATE_SQL_SNAPSHOTS=1 rewrites it`)
}

for (const kind of databases()) {
  // PGlite writes the shared files (it always runs), Citus its own where they differ; PostgreSQL is compared
  if (UPDATE && kind === 'pg') continue
  describe(`${kind}: SQL snapshots of the hot and complex requests`, () => {
    // the user gate's answers kept an hour: its lookup never falls inside a recorded request, however slow the run
    const t = useTestApp(kind, { env: { USER_GATE_CACHE_MS: '3600000' } })
    const literals = new Map<string, string>()
    let admin: string
    let member: string
    let anchorId = 0

    before(async () => {
      const tenant = newTenant(t)
      literals.set(tenant.id, '<tenant>')
      admin = await tenant.user('alice', ['admin'], { orgId: 'org-1' })
      member = await tenant.user('bob', ['member'], { orgId: 'org-1' })
      const post = async (token: string, url: string, payload: Record<string, unknown>) => {
        const res = await t.as(token, { method: 'POST', url, payload })
        assert.ok(res.statusCode < 300, `${url}: ${res.statusCode} ${res.body}`)
        return res.body === '' ? undefined : res.json()
      }
      for (let i = 0; i < 6; i++) {
        const e = await post(admin, '/api/v1/events', {
          title: `Launch ${i}`,
          start_dt: `2031-03-0${i + 1}T09:00:00Z`,
          end_dt: `2031-03-0${i + 1}T10:00:00Z`,
          timezone: 'Europe/Berlin',
          visibility: i % 2 === 0 ? 40 : 30
        })
        await post(admin, `/api/v1/events/${e.id as number}/publish`, {})
      }
      await post(admin, '/api/v1/contacts', { first_name: 'Ann', last_name: 'Lee', email: 'ann@example.test' })
      await post(member, '/api/v1/contacts', { first_name: 'Annika', last_name: 'Berg' })
      const made = await post(admin, '/api/v1/events/with-series', {
        title: 'Weekly',
        start_dt: '2031-03-03T09:00:00Z',
        end_dt: '2031-03-03T10:00:00Z',
        timezone: 'Europe/Berlin',
        series: { freq: 'weekly', repeat_days: [1, 3], ends_on: 'after_n', end_count: 8 }
      })
      anchorId = made.event.id as number
    })

    /** Sends one request with the statements recorded, and checks (or writes) its snapshot. */
    async function snapshot (name: string, title: string, token: string, request: {
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
      url: string
      payload?: Record<string, unknown>
    }): Promise<void> {
      const recorder = capture(t)
      let res
      try {
        res = await t.as(token, request)
      } finally {
        recorder.restore()
      }
      assert.ok(res.statusCode < 300, `${request.url}: ${res.statusCode} ${res.body}`)
      check(kind, name, render(title, recorder.texts, literals))
    }

    /** The snapshot of a GET. */
    async function read (name: string, title: string, token: string, url: string): Promise<void> {
      await snapshot(name, title, token, { method: 'GET', url })
    }

    it('the calendar of a member', async () => {
      const url = '/api/v1/events/calendar?start_date=2031-03-01&end_date=2031-03-31'
      await read('events-calendar', 'GET /api/v1/events/calendar as a member of an organization', member, url)
    })

    it('the events list of a member, first page and by cursor', async () => {
      await read('events-list-member', 'GET /api/v1/events as a member of an organization', member,
        '/api/v1/events?size=2')
      const first = (await t.as(member, { method: 'GET', url: '/api/v1/events?size=2' })).json()
      assert.ok(typeof first.next_cursor === 'string')
      const cursor = encodeURIComponent(first.next_cursor as string)
      await read('events-list-member-cursor', 'GET /api/v1/events?cursor=… as a member', member,
        `/api/v1/events?size=2&cursor=${cursor}`)
    })

    it('the events list of a member by start since a date, by cursor (the bench\'s deep pages)', async () => {
      const url =
        '/api/v1/events?status=published&start_dt_after=2031-03-01T00:00:00Z&sort_by=start_dt&sort_dir=asc&size=2'
      const first = (await t.as(member, { method: 'GET', url })).json()
      assert.ok(typeof first.next_cursor === 'string')
      await read('events-list-member-start-cursor', 'GET /api/v1/events?start_dt_after=…&sort_by=start_dt&cursor=… ' +
        'as a member',
      member, `${url}&cursor=${encodeURIComponent(first.next_cursor as string)}`)
    })

    it('the events list of a member, searched and by start', async () => {
      await read('events-list-member-search', 'GET /api/v1/events?search=…&start_dt_after=… as a member of an ' +
        'organization',
      member, '/api/v1/events?search=launch&start_dt_after=2031-03-02T00:00:00Z&size=5')
    })

    it('the events list of an administrator', async () => {
      await read('events-list-admin', 'GET /api/v1/events as a tenant administrator', admin, '/api/v1/events?size=5')
    })

    it('contact search and the searched contacts list', async () => {
      await read('contacts-search', 'GET /api/v1/contacts/search?q=… as a member', member,
        '/api/v1/contacts/search?query=ann')
      await read('contacts-list-search', 'GET /api/v1/contacts?search=… as a member', member,
        '/api/v1/contacts?search=ann&size=10')
    })

    it('series writes: create, change the rule, edit this and the following, delete the rest', async () => {
      await snapshot('series-create', 'POST /api/v1/events/with-series (weekly, 4 occurrences)', admin, {
        method: 'POST',
        url: '/api/v1/events/with-series',
        payload: {
          title: 'Standup',
          start_dt: '2031-04-07T09:00:00Z',
          end_dt: '2031-04-07T09:15:00Z',
          timezone: 'Europe/Berlin',
          series: { freq: 'weekly', repeat_days: [1], ends_on: 'after_n', end_count: 4 }
        }
      })
      await snapshot('series-change-rule', 'PATCH /api/v1/events/{id}/series (new days)', admin, {
        method: 'PATCH',
        url: `/api/v1/events/${anchorId}/series`,
        payload: { repeat_days: [2, 4] }
      })
      const occurrences = (await t.as(admin, {
        method: 'GET', url: `/api/v1/events/${anchorId}/series/occurrences?limit=10`
      })).json().items as Array<{ id: number }>
      const third = occurrences[2]?.id ?? 0
      await snapshot('series-edit-future', 'PATCH /api/v1/events/{id}?scope=future (an occurrence and the following)',
        admin, { method: 'PATCH', url: `/api/v1/events/${third}?scope=future`, payload: { title: 'Weekly (moved)' } })
      await snapshot('series-delete-future', 'DELETE /api/v1/events/{id}/series?scope=future', admin, {
        method: 'DELETE',
        url: `/api/v1/events/${third}/series?scope=future`
      })
    })
  })
}
