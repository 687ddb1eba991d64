/**
 * What the integrations of docs/integrations.md cost a client that polls them: calendar feeds and incremental sync.
 * Two opt-in scenarios, each a series of single requests from one client (no load), every figure the median of
 * BENCH_INTEGRATION_RUNS runs (default 9; feeds BENCH_FEED_RUNS, default 5) after one warm-up request, whose time is
 * reported as "first".
 *
 * - `calendar-feed`: a public space of the largest tenant holding BENCH_FEED_EVENTS public events (default 5 000, the
 *   feed's cap FEED_MAX_EVENTS), all in the feed's window, seeded with SQL in the bench's style (generate_series; four
 *   time zones, some with a place and coordinates, every 50th cancelled; created by u0001). Measured: the space feed
 *   without a token (`GET /api/v1/spaces/{id}/calendar.ics`, what a public subscription polls), the same feed with a
 *   space token of u0001, and the personal feed (`GET /api/v1/me/calendar.ics?token=…`) of u0001 (the creator of the
 *   seeded events: a full feed) and of u0002 (the data set as seeded: a weekly series and a few events). Feed tokens
 *   are made through the API (`POST /api/v1/feed-tokens`). For each: the time to the last byte of the 200, its bytes
 *   and VEVENT count, and beside it the same request with `If-None-Match` of its ETag (the 304 a subscribed calendar
 *   app gets most of the time). Beside the public feed, GET /health is probed while BENCH_FEED_BESIDE (default 2)
 *   fetches of it run at once: the feed is rendered on the event loop, and every other request waits. The space, its
 *   events and links, and the feed tokens are deleted at the end (and at the start, left by a run that died).
 * - `sync`: the contacts list and the events list of the largest tenant, read by u0001 (a member of ORG) with
 *   `size=100`: (a) a plain first page, the baseline; (b) the first page with `sync=true`; then the whole list with
 *   `sync=true` page by page to its `sync_token` (a client's first sync; timed once); (c) the first page of the delta
 *   after BENCH_SYNC_CHANGES updates (default 1 000) of rows in the list, written with SQL after the token (ten
 *   statements: the triggers log them as the API's writes would be), and the whole delta to its next token; (d) the
 *   delta with that token, nothing changed since: empty (a token is the tenant's position in its log, given at
 *   commit in commit order, so nothing comes twice; a delta that is not empty is reported as WRONG). The updated
 *   rows get their columns back at the end, and the rows the scenario's writes added to the log of changes are
 *   deleted.
 *
 * Opt-in: only with `--only calendar-feed` or `--only sync`. The calendar feeds on PostgreSQL, sync on PostgreSQL
 * and Citus: the bench seeds beside the service (an embedded PGlite belongs to the service process).
 *
 *   npm run bench -- --db pg --only calendar-feed,sync
 */
import { FEED_MAX_EVENTS } from '../src/modules/feeds/feeds.repository.ts'
import { measuredRun, type ExportEnv, type ExportRun, type ExportScenario } from './export.ts'
import type { Caller } from './scenarios.ts'
import { BIG_TENANT, ORG, userId } from './seed.ts'
import { pgRunner, type SqlRunner } from './sql-runner.ts'

const RUNS = Math.max(1, Number(process.env.BENCH_INTEGRATION_RUNS ?? 9))
/** a 5 000-event feed takes seconds: fewer runs */
const FEED_RUNS = Math.max(1, Number(process.env.BENCH_FEED_RUNS ?? 5))
const FEED_EVENTS = Number(process.env.BENCH_FEED_EVENTS ?? 5000)
const CHANGES = Number(process.env.BENCH_SYNC_CHANGES ?? 1000)
const PAGE = 100
/** the creator of the feed's events, and the reader of the synced lists */
const OWNER: Caller = { tenant: BIG_TENANT, user: userId(1) }
/** a personal feed as the seed made it: the creator of a weekly series of 200 occurrences and a few events */
const TYPICAL: Caller = { tenant: BIG_TENANT, user: userId(2) }
const FEED_HANDLE = 'bench-feed'
const FEED_TITLE = 'Feed bench'
/** fetches of the public feed at once while GET /health is probed */
const BESIDE_FEEDS = Number(process.env.BENCH_FEED_BESIDE ?? 2)

interface Answer { status: number, bytes: number, text: string, etag: string | null, ttfb: number, ms: number }

/** One GET read to its last byte: the time to the headers (ttfb) and to the last byte (ms). */
async function get (url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const t0 = performance.now()
  const res = await fetch(url, { headers })
  const ttfb = performance.now() - t0
  const body = Buffer.from(await res.arrayBuffer())
  return {
    status: res.status,
    bytes: body.length,
    text: body.toString('utf8'),
    etag: res.headers.get('etag'),
    ttfb,
    ms: performance.now() - t0
  }
}

function expectStatus (a: Answer, status: number, what: string): void {
  if (a.status !== status) throw new Error(`${what}: answered ${a.status}, expected ${status}: ${a.text.slice(0, 300)}`)
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] ?? 0 : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}
const ms1 = (ms: number): string => `${ms.toFixed(1)} ms`
const kib = (bytes: number): string => bytes >= 2 ** 20
  ? `${(bytes / 2 ** 20).toFixed(2)} MiB`
  : `${(bytes / 1024).toFixed(1)} KiB`
const thousands = (n: number): string => n.toLocaleString('en')

/** "median 12.3 ms (min 11.0, max 14.2; first 30.1)" of a warm-up and the measured runs. */
function timingText (first: Answer, runs: Answer[]): string {
  const ms = runs.map(r => r.ms)
  return `median ${ms1(median(ms))} (min ${Math.min(...ms).toFixed(1)}, max ${Math.max(...ms).toFixed(1)}; ` +
    `first ${first.ms.toFixed(1)}) over ${runs.length} runs`
}

/** A warm-up request and `n` measured ones, each checked by `check`. */
async function series (run: () => Promise<Answer>, check: (a: Answer) => void, n = RUNS) {
  const first = await run()
  check(first)
  const runs: Answer[] = []
  for (let i = 0; i < n; i++) {
    const a = await run()
    check(a)
    runs.push(a)
  }
  return { first, runs }
}

/** The figures of a measured series as a run of the report: `ms` the median, rows and bytes of the first answer. */
function reportRun (run: ExportRun, label: string, ms: number, rows: number, bytes: number): ExportRun {
  return { ...run, label, ms, rows, bytes, rowsPerSecond: rows / (Math.max(ms, 1e-6) / 1000) }
}

/* ---------------------------------------------------------------- calendar feeds */

/**
 * Deletes what an earlier run of calendar-feed left: the bench's public space (cascading to its links and feed
 * tokens), its events, and the personal feed tokens of the bench's readers.
 */
async function removeFeedSpace (db: SqlRunner): Promise<void> {
  await db.query(
    `delete from events where tenant_id = $1 and id in (
       select es.event_id from event_spaces es join spaces s on s.tenant_id = es.tenant_id and s.id = es.space_id
       where s.tenant_id = $1 and s.public_handle = $2)`,
    [BIG_TENANT, FEED_HANDLE]
  )
  await db.query('delete from public_spaces where handle = $1', [FEED_HANDLE])
  await db.query('delete from spaces where tenant_id = $1 and public_handle = $2', [BIG_TENANT, FEED_HANDLE])
  await db.query(
    "delete from feed_tokens where tenant_id = $1 and user_id = any($2::text[]) and scope = 'personal'",
    [BIG_TENANT, [OWNER.user, TYPICAL.user]]
  )
}

/** A published public space of the largest tenant with FEED_EVENTS public events in the feed's window. */
async function seedFeedSpace (db: SqlRunner, log: (line: string) => void): Promise<number> {
  const t0 = performance.now()
  const [space] = await db.query<{ id: number }>(
    `insert into spaces (tenant_id, org_id, creator_id, title, description, visibility, status, published_at,
                         public_handle)
     values ($1, $2, $3, $4, 'A public space with many events, for the calendar-feed bench', 40, 'published',
             now() - interval '30 days', $5)
     returning id`,
    [BIG_TENANT, ORG, OWNER.user, FEED_TITLE, FEED_HANDLE]
  )
  if (space === undefined) throw new Error('calendar-feed: the space was not created')
  await db.query('insert into public_spaces (handle, space_id, tenant_id) values ($1, $2, $3)',
    [FEED_HANDLE, space.id, BIG_TENANT])
  // from 60 days ago to 720 days ahead: every event in the window (90 days back, 730 ahead)
  await db.query(
    `with made as (
       insert into events (tenant_id, org_id, creator_id, title, description, address, latitude, longitude, start_dt,
                           end_dt, timezone, keywords, visibility, status, published_at, version, revision,
                           cancelled_at, created_at, updated_at)
       select $1, $2, $3, $4 || ' ' || g,
              'Session ' || g
                || ' of the programme; bring a laptop, questions, and a friend.\nDoors open 15 min before.',
              case when g % 2 = 0
                then 'Street ' || (g % 500) || ', ' || (array['Zurich','Berlin','Lyon','Porto'])[1 + g % 4] end,
              case when g % 3 = 0 then 47.37 + (g % 100) / 1000.0 end,
              case when g % 3 = 0 then 8.54 + (g % 100) / 1000.0 end,
              st, st + (1 + g % 3) * interval '1 hour',
              (array['Europe/Zurich','America/New_York','Asia/Tokyo','UTC'])[1 + g % 4], array['kw' || (g % 50)],
              40, 'published', now() - interval '30 days', 1, 1 + g % 3,
              case when g % 50 = 0 then now() - interval '1 day' end,
              now() - interval '40 days', now() - interval '2 days' + g * interval '1 second'
       from generate_series(1, $5::int) g
       cross join lateral (select now() - interval '60 days' + (g::double precision / $5) * interval '780 days' as st) s
       returning id)
     insert into event_spaces (tenant_id, event_id, space_id, org_id)
     select $1, id, $6, $2 from made`,
    [BIG_TENANT, ORG, OWNER.user, FEED_TITLE, FEED_EVENTS, space.id]
  )
  await db.query('analyze events')
  await db.query('analyze event_spaces')
  log(`calendar-feed: public space ${space.id} with ${thousands(FEED_EVENTS)} public events seeded in ` +
    `${((performance.now() - t0) / 1000).toFixed(1)} s`)
  return Number(space.id)
}

/** A feed token made through the API; its id and token. */
async function feedToken (env: ExportEnv, caller: Caller, body: Record<string, unknown>) {
  const res = await fetch(`${env.url}/api/v1/feed-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.token(caller)}`, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  const json = await res.json() as { id?: number, token?: string }
  if (res.status !== 201 || json.id === undefined || json.token === undefined) {
    throw new Error(`calendar-feed: POST /api/v1/feed-tokens answered ${res.status}: ${JSON.stringify(json)}`)
  }
  return { id: json.id, token: json.token }
}

/** VEVENTs of an iCalendar text. */
const vevents = (text: string): number => text.split('\r\nBEGIN:VEVENT\r\n').length - 1

/**
 * One feed: a warm-up and RUNS fetches of the 200, then RUNS with `If-None-Match` of its ETag (304 expected); the
 * median time to the last byte of each, the size and VEVENTs of the feed, the service's RSS over both.
 */
async function measureFeed (env: ExportEnv, label: string, path: string, expectEvents?: number): Promise<ExportRun> {
  const url = `${env.url}${path}`
  const { run, result } = await measuredRun(env.pid, label, async () => {
    const full = await series(async () => await get(url), a => { expectStatus(a, 200, label) }, FEED_RUNS)
    const etag = full.first.etag
    if (etag === null) throw new Error(`${label}: no ETag`)
    const cached = await series(async () => await get(url, { 'if-none-match': etag }), a => {
      expectStatus(a, 304, `${label} with If-None-Match`)
    }, FEED_RUNS)
    return { full, cached, etag }
  }, r => ({ rows: vevents(r.full.first.text), bytes: r.full.first.bytes }))
  const { full, cached, etag } = result
  const events = vevents(full.first.text)
  if (expectEvents !== undefined && events !== expectEvents) {
    throw new Error(`${label}: ${events} VEVENTs, expected ${expectEvents}`)
  }
  const stable = full.runs.every(r => r.etag === etag) ? 'the same ETag every time' : 'the ETag CHANGED between fetches'
  const ms = median(full.runs.map(r => r.ms))
  const text = `${label}: ${thousands(events)} VEVENTs, ${kib(full.first.bytes)}; ` +
    `200 ${timingText(full.first, full.runs)}` +
    ` (headers after ${ms1(median(full.runs.map(r => r.ttfb)))}); If-None-Match: 304 ` +
    `${timingText(cached.first, cached.runs)}; ${stable}`
  env.log(`${env.kind}: calendar-feed: ${text}`)
  return reportRun(run, text, ms, events, full.first.bytes)
}

/** Latencies of GET /health sent one after another (20 ms apart) until `until` settles: what other requests wait. */
async function probeWhile<T> (env: ExportEnv, until: Promise<T>): Promise<{ result: T, latencies: number[] }> {
  const latencies: number[] = []
  const state = { done: false }
  const probing = (async () => {
    while (!state.done) {
      const t0 = performance.now()
      await (await fetch(`${env.url}/health`)).arrayBuffer()
      latencies.push(performance.now() - t0)
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  })()
  try {
    return { result: await until, latencies }
  } finally {
    state.done = true
    await probing
  }
}

const latencyText = (xs: number[]): string =>
  `${xs.length} probes, median ${ms1(median(xs))}, max ${ms1(Math.max(...xs))}`

/**
 * What a feed's rendering costs the service's other requests: GET /health probed alone for 2 s, then while
 * BESIDE_FEEDS fetches of the feed run at once (the rendering runs on the event loop).
 */
async function besideFeed (env: ExportEnv, label: string, path: string): Promise<ExportRun> {
  const alone = await probeWhile(env, new Promise(resolve => setTimeout(resolve, 2000)))
  const { run, result } = await measuredRun(env.pid, label, async () => await probeWhile(env, Promise.all(
    Array.from({ length: BESIDE_FEEDS }, async () => await get(`${env.url}${path}`)))), r => ({
    rows: r.result.reduce((n, a) => n + vevents(a.text), 0),
    bytes: r.result.reduce((n, a) => n + a.bytes, 0)
  }))
  for (const a of result.result) expectStatus(a, 200, label)
  const text = `${label}: ${BESIDE_FEEDS} fetches at once, all answered in ${ms1(run.ms)} ` +
    `(each ${result.result.map(a => a.ms.toFixed(0)).join(', ')} ms); GET /health alone: ` +
    `${latencyText(alone.latencies)}; beside the feeds: ${latencyText(result.latencies)}`
  env.log(`${env.kind}: calendar-feed: ${text}`)
  return { ...run, label: text }
}

/* ---------------------------------------------------------------- incremental sync */

interface ListBody {
  items: Array<{ id: string | number }>
  deleted?: Array<{ id: string | number }>
  total: number
  next_cursor: string | null
  sync_token?: string
}

const parseList = (a: Answer, what: string): ListBody => {
  expectStatus(a, 200, what)
  return JSON.parse(a.text) as ListBody
}

/** A page of a list, measured RUNS times after a warm-up: one run of the report. */
async function measurePage (
  env: ExportEnv,
  list: string,
  label: string,
  path: string,
  expect?: (b: ListBody) => string | undefined
): Promise<ExportRun> {
  const headers = { authorization: `Bearer ${env.token(OWNER)}` }
  const { run, result } = await measuredRun(env.pid, label, async () =>
    await series(async () => await get(`${env.url}${path}`, headers), a => {
      const wrong = expect?.(parseList(a, label))
      if (wrong !== undefined) throw new Error(`sync: ${list}: ${label}: ${wrong}`)
    }), r => ({ rows: parseList(r.first, label).items.length, bytes: r.first.bytes }))
  const body = parseList(result.first, label)
  const deleted = body.deleted?.length ?? 0
  const text = `${list}: ${label}: ${timingText(result.first, result.runs)}; ${body.items.length} items` +
    `${body.deleted !== undefined ? `, ${deleted} deleted` : ''}, total ${thousands(Number(body.total))}, ` +
    `${kib(result.first.bytes)}${body.sync_token !== undefined ? ', sync_token' : ''}` +
    `${body.next_cursor !== null ? ', next_cursor' : ''}`
  env.log(`${env.kind}: sync: ${text}`)
  return reportRun(run, text, median(result.runs.map(r => r.ms)), body.items.length + deleted, result.first.bytes)
}

/** A read of a list from its first page to its last by next_cursor: the token of its last page, and the run. */
async function walk (env: ExportEnv, list: string, label: string, path: string) {
  const headers = { authorization: `Bearer ${env.token(OWNER)}` }
  let pages = 0
  let rows = 0
  let deleted = 0
  let bytes = 0
  const times: number[] = []
  let token: string | undefined
  const { run } = await measuredRun(env.pid, label, async () => {
    let cursor: string | null = null
    do {
      const a = await get(`${env.url}${path}${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers)
      const body = parseList(a, `${label}, page ${pages + 1}`)
      pages++
      rows += body.items.length
      deleted += body.deleted?.length ?? 0
      bytes += a.bytes
      times.push(a.ms)
      cursor = body.next_cursor
      token = body.sync_token
    } while (cursor !== null)
  }, () => ({ rows: 0, bytes: 0 }))
  if (token === undefined) throw new Error(`sync: ${list}: ${label}: the last page carries no sync_token`)
  const text = `${list}: ${label}: ${thousands(pages)} pages, ${thousands(rows)} items` +
    `${deleted > 0 ? ` and ${thousands(deleted)} deleted` : ''}, ${kib(bytes)} in ${(run.ms / 1000).toFixed(2)} s ` +
    `(a page: median ${ms1(median(times))}, max ${Math.max(...times).toFixed(1)})`
  env.log(`${env.kind}: sync: ${text}`)
  return { token, run: reportRun(run, text, run.ms, rows + deleted, bytes), rows, deleted }
}

/** Rows of a list changed with SQL (as the API's writes would be logged) and how to give them their columns back. */
interface Changed { ids: string[], restore: () => Promise<void> }

/**
 * CHANGES rows of `table` in the largest tenant, picked by `where` (rows of ORG every member lists), changed in ten
 * statements: `column` gets " (changed)" appended, revision and updated_at move on as an API write's would.
 */
async function changeRows (
  db: SqlRunner,
  table: 'contacts' | 'events',
  column: 'job_title' | 'description',
  where: string,
  order: string
): Promise<Changed> {
  const idType = table === 'contacts' ? 'uuid' : 'bigint'
  const rows = await db.query<{ id: string, value: string | null, revision: number, updated_at: string }>(
    `select id::text, ${column} as value, revision, updated_at::text from ${table}
     where tenant_id = $1 and org_id = $2 and ${where} order by ${order} limit $3`,
    [BIG_TENANT, ORG, CHANGES]
  )
  const ids = rows.map(r => r.id)
  const step = Math.ceil(CHANGES / 10)
  for (let i = 0; i < ids.length; i += step) {
    await db.query(
      `update ${table} set ${column} = coalesce(${column}, '') || ' (changed)', revision = revision + 1,
              updated_at = now()
       where tenant_id = $1 and id = any($2::${idType}[])`,
      [BIG_TENANT, ids.slice(i, i + step)]
    )
  }
  return {
    ids,
    restore: async () => {
      await db.query(
        `update ${table} t set ${column} = o.value, revision = o.revision, updated_at = o.updated_at
         from unnest($2::${idType}[], $3::text[], $4::int[], $5::timestamptz[]) as o(id, value, revision, updated_at)
         where t.tenant_id = $1 and t.id = o.id`,
        [BIG_TENANT, ids, rows.map(r => r.value), rows.map(r => r.revision), rows.map(r => r.updated_at)]
      )
    }
  }
}

/** CHANGES contacts of ORG in the largest tenant: their job title. */
const changeContacts = async (db: SqlRunner) => await changeRows(db, 'contacts', 'job_title', 'true', 'id')

/** CHANGES published organization or public events of ORG in the largest tenant (in every member's list). */
const changeEvents = async (db: SqlRunner) => await changeRows(db, 'events', 'description',
  "published_id is null and not is_deleted and status = 'published' and visibility in (30, 40)", 'id desc')

/** The last seq of the log of changes: the rows a scenario's writes add are those past it. */
async function changesMark (db: SqlRunner): Promise<string> {
  const [row] = await db.query<{ seq: string }>('select coalesce(max(seq), 0)::text as seq from changes ' +
    'where tenant_id = $1',
  [BIG_TENANT])
  return row?.seq ?? '0'
}

async function forgetChanges (db: SqlRunner, mark: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'with gone as (delete from changes where tenant_id = $1 and seq > $2::bigint returning 1) ' +
    'select count(*)::int as n from gone',
    [BIG_TENANT, mark]
  )
  return row?.n ?? 0
}

/** (a) to (d) on one list. */
async function syncList (
  env: ExportEnv,
  db: SqlRunner,
  list: 'contacts' | 'events',
  change: (db: SqlRunner) => Promise<Changed>
): Promise<ExportRun[]> {
  const base = `/api/v1/${list}?size=${PAGE}`
  const runs: ExportRun[] = []
  runs.push(await measurePage(env, list, `(a) plain first page (size=${PAGE})`, base,
    b => b.items.length === PAGE ? undefined : `${b.items.length} items`))
  runs.push(await measurePage(env, list, '(b) first page with sync=true', `${base}&sync=true`,
    b => b.next_cursor?.includes('~') === true ? undefined : 'no token carried in next_cursor'))
  const full = await walk(env, list, 'the whole list with sync=true, to its sync_token', `${base}&sync=true`)
  runs.push(full.run)

  const mark = await changesMark(db)
  const t0 = performance.now()
  const changed = await change(db)
  try {
    env.log(`${env.kind}: sync: ${list}: ${thousands(changed.ids.length)} rows updated with SQL (10 statements) in ` +
      `${ms1(performance.now() - t0)}`)
    const delta = `${base}&sync_token=${encodeURIComponent(full.token)}`
    runs.push(await measurePage(env, list, `(c) delta after ${thousands(changed.ids.length)} ` +
      'updates, first page', delta,
    b => b.items.length === Math.min(PAGE, changed.ids.length) && Number(b.total) >= changed.ids.length
      ? undefined
      : `${b.items.length} items of total ${b.total}, expected ${Math.min(PAGE, changed.ids.length)} of at least ` +
          `${changed.ids.length}`))
    const whole = await walk(env, list, '(c) the whole delta, to its next sync_token', delta)
    runs.push(whole.run)
    const missing = changed.ids.length - whole.rows
    if (missing > 0 || whole.deleted > 0) {
      env.log(`${env.kind}: sync: ${list}: WRONG: the delta held ${whole.rows} rows and ${whole.deleted} tombstones ` +
        `for ${changed.ids.length} updated rows`)
    }
    const empty = await measurePage(env, list, '(d) empty delta (no change since its token), first page',
      `${base}&sync_token=${encodeURIComponent(whole.token)}`)
    if (empty.rows !== 0) env.log(`${env.kind}: sync: ${list}: WRONG: (d) held ${empty.rows} rows after no change`)
    runs.push(empty)
  } finally {
    await changed.restore()
    const forgotten = await forgetChanges(db, mark)
    env.log(`${env.kind}: sync: ${list}: the updated rows restored; ${thousands(forgotten)} rows of the ` +
      'log of changes ' +
      'the scenario added deleted')
  }
  return runs
}

export const INTEGRATION_SCENARIOS: ExportScenario[] = [
  {
    name: 'calendar-feed',
    title: `Calendar feeds: a public space of ${thousands(FEED_EVENTS)} events and personal feeds, 200 and 304 ` +
      `(median of ${FEED_RUNS})`,
    async run (env) {
      if (env.kind !== 'pg' || env.databaseUrl === undefined) {
        env.log('calendar-feed: not measured: PostgreSQL only')
        return []
      }
      const db = pgRunner(env.databaseUrl, 1)
      try {
        const mark = await changesMark(db)
        await removeFeedSpace(db)
        const spaceId = await seedFeedSpace(db, env.log)
        const expected = Math.min(FEED_EVENTS, FEED_MAX_EVENTS)
        const runs: ExportRun[] = []
        try {
          runs.push(await measureFeed(env, `public space feed, no token (space ${spaceId})`,
            `/api/v1/spaces/${spaceId}/calendar.ics`, expected))
          runs.push(await besideFeed(env, 'public space feed beside other requests',
            `/api/v1/spaces/${spaceId}/calendar.ics`))
          const space = await feedToken(env, OWNER, { scope: 'space', space_id: spaceId })
          runs.push(await measureFeed(env, `space feed with a space token of ${OWNER.user}`,
            `/api/v1/spaces/${spaceId}/calendar.ics?token=${space.token}`, expected))
          const mine = await feedToken(env, OWNER, { scope: 'personal' })
          runs.push(await measureFeed(env, `personal feed of ${OWNER.user} (creator of the space's events)`,
            `/api/v1/me/calendar.ics?token=${mine.token}`))
          const typical = await feedToken(env, TYPICAL, { scope: 'personal' })
          runs.push(await measureFeed(env, `personal feed of ${TYPICAL.user} (as seeded)`,
            `/api/v1/me/calendar.ics?token=${typical.token}`))
        } finally {
          await removeFeedSpace(db)
          const forgotten = await forgetChanges(db, mark)
          env.log('calendar-feed: the space, its events and the feed tokens deleted ' +
            `(and ${thousands(forgotten)} rows ` +
            'of the log of changes)')
        }
        return runs
      } finally {
        await db.close()
      }
    }
  },
  {
    name: 'sync',
    title: 'Incremental sync of the contacts and events lists: plain page, sync=true, ' +
      `delta after ${thousands(CHANGES)} ` +
      `updates, empty delta (median of ${RUNS})`,
    async run (env) {
      if (env.kind === 'pglite' || env.databaseUrl === undefined) {
        env.log('sync: not measured: PostgreSQL and Citus only')
        return []
      }
      const db = pgRunner(env.databaseUrl, 1)
      try {
        return [
          ...await syncList(env, db, 'contacts', changeContacts),
          ...await syncList(env, db, 'events', changeEvents)
        ]
      } finally {
        await db.close()
      }
    }
  }
]
