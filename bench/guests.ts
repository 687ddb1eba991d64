/**
 * Public registration under a burst (docs/guests.md, "Public registration"): 200 guests register at once for an event
 * of 100 seats with a waitlist and double opt-in, then all confirm at once from their mailed links; beside it, the
 * organiser's path to the same outcome, 200 `POST /api/v1/events/{id}/attendees` (status confirmed) at once on a
 * second event of 100 seats with a waitlist.
 *
 * Everything goes through the API of the service run.ts started, as u0001 of the largest tenant (a member of ORG):
 * three events made and published (visibility 40), their registration set with `PATCH /api/v1/events/{id}/registration`
 * (capacity 100, waitlist on; public registration on for the guests' events, double opt-in as by default), 200 contacts
 * made for the organiser's event. A warm-up event takes 5 registrations, their confirmations and 5 organiser adds
 * first (the routes' schemas are compiled at their first request), then:
 *
 * 1. **register**: 200 `POST /api/v1/public/events/{id}/registrations` at once (Promise.all of fetch, addresses
 *    `guest-<i>@bench.test`), each timed from its send to its last byte. Checked: every answer 202 (no 5xx), and 200
 *    attendees `awaiting_confirmation`.
 * 2. The 200 confirmation tokens, from `notification_outbox` (`payload.link.query.token` of the `guest.optin` rows of
 *    the event, queued in each registration's transaction), with the attendee each is for (`payload.attendee_id`):
 *    exactly one per address. PostgreSQL and Citus: SQL on the bench database. PGlite: the service's database is
 *    embedded in its process (DATA_DIR/pgdata, one PGlite per directory), so the bench copies that directory while
 *    the service is idle (every registration answered, so committed; WORKERS=false, so no background writes), opens
 *    the copy with its own PGlite (recovering it as after a crash: every committed transaction is in it) and reads
 *    the rows there. The copy is removed at once. The service is neither stopped nor touched.
 * 3. **confirm**: the 200 `POST /api/v1/public/registrations/confirm` at once, in a shuffled order, each timed.
 *    Checked: every answer 200 (no 5xx); the event's figures (`GET …/registration`) 100 confirmed and 100 waitlisted;
 *    the stored waitlist (`GET …/attendees?status=waitlisted`) at positions 1..100 without a gap; each answer's status
 *    and `waitlist_position` those stored for its attendee; and, by the time each answer was complete, the first 100
 *    answers the confirmed ones and the next 100 the waitlisted in position order. Confirmations of one event are
 *    serialized by the event's row lock, and each answer leaves right after its commit, so the order of the answers
 *    is the order of the commits: an answer complete earlier must hold a lower position.
 * 4. **organiser add**: 200 `POST /api/v1/events/{id}/attendees` with `{contact_id, status: 'confirmed'}` at once,
 *    each timed; the same checks (answers 201 carrying the stored status and position).
 *
 * Reported, for each of the three: requests/s over the burst (from the first send to the last answer), latency p50,
 * p95 and max, the service's RSS. A failed check fails the part (the bench stops with the failures listed, after
 * logging the figures).
 *
 * The service runs with GUEST_LIMIT_PER_ADDRESS and GUEST_LIMIT_PER_EVENT high (run.ts, startOurs): every request
 * comes from 127.0.0.1.
 *
 * Opt-in: only with `--only guest-registration`. PGlite, PostgreSQL and Citus. Its events, attendees and contacts are
 * past the seed's watermarks (removed before the next run on PostgreSQL, run.ts removeRunWrites; PGlite starts from a
 * fresh copy of the seed); on PostgreSQL its notification rows are deleted at its end.
 *
 *   npm run bench -- --db pglite --only guest-registration
 */
import fs from 'node:fs'
import path from 'node:path'
import { measuredRun, type ExportEnv, type ExportRun } from './export.ts'
import type { Caller } from './scenarios.ts'
import { BIG_TENANT, userId } from './seed.ts'
import { pgliteRunner, pgRunner, type SqlRunner } from './sql-runner.ts'

export interface GuestEnv extends ExportEnv {
  /** the service's DATA_DIR: its embedded PGlite is DATA_DIR/pgdata */
  dataDir: string
}

export interface GuestScenario {
  name: string
  title: string
  run: (env: GuestEnv) => Promise<ExportRun[]>
}

const GUESTS = 200
const CAPACITY = 100
const WARMUP = 5
const CALLER: Caller = { tenant: BIG_TENANT, user: userId(1) }
const DAY_MS = 86_400_000

type Json = Record<string, any>

/** One request's answer: status (0: no answer), body, time from send to last byte, and when it was complete. */
interface Answer { status: number, body: Json, ms: number, done: number, error?: string }

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0

async function send (env: GuestEnv, method: string, p: string, body?: unknown, auth = true): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (auth) headers.authorization = `Bearer ${env.token(CALLER)}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const t0 = performance.now()
  try {
    const res = await fetch(`${env.url}${p}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    const text = await res.text()
    const done = performance.now()
    let parsed: Json = {}
    try { parsed = text === '' ? {} : JSON.parse(text) as Json } catch { parsed = { text } }
    return { status: res.status, body: parsed, ms: done - t0, done }
  } catch (err) {
    const done = performance.now()
    return { status: 0, body: {}, ms: done - t0, done, error: (err as Error).message }
  }
}

/** A request of the set-up: its answer's body, or the bench stops naming what was answered. */
async function expect (env: GuestEnv, method: string, p: string, status: number, body?: unknown): Promise<Json> {
  const a = await send(env, method, p, body)
  if (a.status !== status) {
    throw new Error(`guest-registration: ${method} ${p} answered ${a.status}, expected ${status}: ` +
      `${a.error ?? JSON.stringify(a.body).slice(0, 500)}`)
  }
  return a.body
}

/** A published event of u0001 a week ahead, visibility 40, 100 seats, waitlist on; public registration if asked. */
async function makeEvent (env: GuestEnv, title: string, publicRegistration: boolean): Promise<number> {
  const start = Date.now() + 7 * DAY_MS
  const event = await expect(env, 'POST', '/api/v1/events', 201, {
    title,
    start_dt: new Date(start).toISOString(),
    end_dt: new Date(start + 2 * 3_600_000).toISOString(),
    timezone: 'Europe/Berlin',
    visibility: 40
  })
  const id = Number(event.id)
  await expect(env, 'POST', `/api/v1/events/${id}/publish`, 204)
  const reg = await expect(env, 'PATCH', `/api/v1/events/${id}/registration`, 200, {
    capacity: CAPACITY, waitlist_enabled: true, ...(publicRegistration ? { public_registration: true } : {})
  })
  if (publicRegistration && (reg.guests?.public_registration !== true || reg.guests?.double_opt_in !== true)) {
    throw new Error(`guest-registration: event ${id}: registration settings ${JSON.stringify(reg.guests)}`)
  }
  return id
}

/** Runs the tasks `width` at a time (the set-up's contacts), in order. */
async function inBatches<T> (tasks: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const out: T[] = []
  for (let i = 0; i < tasks.length; i += width) out.push(...await Promise.all(tasks.slice(i, i + width).map(t => t())))
  return out
}

/** Every attendee of the event in a status, through the API (pages of 100). */
async function attendeesIn (env: GuestEnv, eventId: number, status: string): Promise<Json[]> {
  const items: Json[] = []
  for (let page = 1; ; page++) {
    const body = await expect(env, 'GET', `/api/v1/events/${eventId}/attendees?status=${status}&size=100&page=${page}`,
      200)
    const got = (body.items ?? []) as Json[]
    items.push(...got)
    if (got.length < 100 || items.length >= Number(body.total)) return items
  }
}

interface TokenRow { event_id: number, attendee_id: number, recipient: string, token: string | null }

const TOKEN_SQL = `select (payload->>'event_id')::bigint as event_id, (payload->>'attendee_id')::bigint as attendee_id,
         recipient, payload->'link'->'query'->>'token' as token
  from notification_outbox
  where tenant_id = $1 and payload->>'kind' = 'guest.optin' and payload->>'event_id' = any($2::text[])
  order by id`

/**
 * The confirmation mails queued for the events: on PostgreSQL by SQL; on PGlite from a copy of the service's data
 * directory taken now (the service must be idle: see the header).
 */
async function confirmationMails (env: GuestEnv, eventIds: number[]): Promise<TokenRow[]> {
  const params = [BIG_TENANT, eventIds.map(String)]
  if (env.kind !== 'pglite' && env.databaseUrl !== undefined) {
    const db = pgRunner(env.databaseUrl, 1)
    try {
      return await db.query<TokenRow>(TOKEN_SQL, params)
    } finally {
      await db.close()
    }
  }
  const source = path.join(env.dataDir, 'pgdata')
  const copy = `${env.dataDir}-guest-snapshot`
  const t0 = performance.now()
  fs.rmSync(copy, { recursive: true, force: true })
  fs.cpSync(source, path.join(copy, 'pgdata'), { recursive: true })
  // the copy's own lock file, if any, names the service's process: not this one's
  fs.rmSync(path.join(copy, 'pgdata', 'postmaster.pid'), { force: true })
  let db: SqlRunner | undefined
  try {
    db = await pgliteRunner(path.join(copy, 'pgdata'))
    const rows = await db.query<TokenRow>(TOKEN_SQL, params)
    env.log(`${env.kind}: guest-registration: ${rows.length} confirmation mails read from a copy of the service's ` +
      `PGlite (${((performance.now() - t0) / 1000).toFixed(1)} s to copy, open and read)`)
    return rows
  } finally {
    await db?.close()
    fs.rmSync(copy, { recursive: true, force: true })
  }
}

/** 200 requests at once (Promise.all), measured as one run of the report. */
async function burst (env: GuestEnv, label: string, requests: Array<() => Promise<Answer>>) {
  const { run, result } = await measuredRun(env.pid, label, async () => await Promise.all(requests.map(r => r())),
    answers => ({ rows: answers.length, bytes: 0 }))
  return { run, answers: result }
}

function latencyText (answers: Answer[]): string {
  const ms = answers.map(a => a.ms).sort((a, b) => a - b)
  return `latency p50 ${percentile(ms, 0.5).toFixed(1)} ms, p95 ${percentile(ms, 0.95).toFixed(1)} ms, ` +
    `max ${(ms.at(-1) ?? 0).toFixed(1)} ms`
}

/** The answers' statuses as `{"202": 200}`, and a problem when any is not `expected` (5xx counted apart). */
function statusCheck (what: string, answers: Answer[], expected: number, problems: string[]): string {
  const counts: Record<string, number> = {}
  for (const a of answers) counts[String(a.status)] = (counts[String(a.status)] ?? 0) + 1
  const server = answers.filter(a => a.status >= 500 || a.status === 0).length
  if (server > 0) problems.push(`${what}: ${server} answers 5xx or none`)
  const other = answers.filter(a => a.status !== expected)
  if (other.length > 0) {
    const sample = other.slice(0, 3).map(a => a.error ?? JSON.stringify(a.body).slice(0, 200))
    problems.push(`${what}: statuses ${JSON.stringify(counts)} (expected ${expected}); e.g. ${sample.join(' | ')}`)
  }
  return JSON.stringify(counts)
}

/**
 * The outcome of a burst of confirmations of one event, against what it stored: 100 confirmed, 100 waitlisted at
 * 1..100, each answer's status and position the stored ones of its attendee, and the answers in the order of the
 * places (seats first, then the waitlist by position) by the time each was complete. A line for the label.
 */
async function placementCheck (
  env: GuestEnv,
  what: string,
  eventId: number,
  answers: Array<{ attendeeId: number, answer: Answer }>,
  problems: string[]
): Promise<string> {
  const reg = await expect(env, 'GET', `/api/v1/events/${eventId}/registration`, 200)
  const confirmed = await attendeesIn(env, eventId, 'confirmed')
  const waitlisted = await attendeesIn(env, eventId, 'waitlisted')
  const expectedWaiting = GUESTS - CAPACITY
  if (reg.confirmed_count !== CAPACITY || reg.waitlist_count !== expectedWaiting) {
    problems.push(`${what}: the event's figures say ${String(reg.confirmed_count)} confirmed, ` +
      `${String(reg.waitlist_count)} waitlisted (expected ${CAPACITY} and ${expectedWaiting})`)
  }
  if (confirmed.length !== CAPACITY || waitlisted.length !== expectedWaiting) {
    problems.push(`${what}: the attendee lists hold ${confirmed.length} confirmed, ${waitlisted.length} waitlisted`)
  }
  const positions = waitlisted.map(a => Number(a.waitlist_position)).sort((a, b) => a - b)
  const gapless = positions.length === expectedWaiting && positions.every((p, i) => p === i + 1)
  if (!gapless) {
    problems.push(`${what}: waitlist positions ${positions.slice(0, 10).join(',')}… (${positions.length}), ` +
      `expected 1..${expectedWaiting}`)
  }
  const stored = new Map<number, Json>([...confirmed, ...waitlisted].map(a => [Number(a.id), a]))
  let mismatched = 0
  for (const { attendeeId, answer } of answers) {
    const row = stored.get(attendeeId)
    if (row === undefined || row.status !== answer.body.status ||
      (row.waitlist_position ?? null) !== (answer.body.waitlist_position ?? null)) mismatched++
  }
  if (mismatched > 0) {
    problems.push(`${what}: ${mismatched} answers differ from the stored status or waitlist position of their ` +
      'attendee')
  }
  // by completion: seats first, then the waitlist 1, 2, 3…; an answer out of that order counts as a break
  const rank = (a: Answer) => a.body.status === 'confirmed' ? 0 : Number(a.body.waitlist_position ?? 1e9)
  const byDone = answers.map(x => x.answer).sort((a, b) => a.done - b.done)
  let breaks = 0
  for (let i = 1; i < byDone.length; i++) {
    const previous = byDone[i - 1]
    const current = byDone[i]
    if (previous !== undefined && current !== undefined && rank(current) < rank(previous)) breaks++
  }
  if (breaks > 0) {
    problems.push(`${what}: ${breaks} answers complete before an answer of a lower place (order of the answers ` +
      'is not the order of the places)')
  }
  return `${confirmed.length} confirmed, ${waitlisted.length} waitlisted` +
    `${gapless ? ` at 1..${expectedWaiting}` : ' (positions WRONG)'}, ` +
    `${mismatched === 0 ? 'each answer the stored place' : `${mismatched} answers differ from the stored place`}, ` +
    `${breaks === 0 ? 'in the order answered' : `${breaks} breaks of the order answered`}`
}

/** Fisher-Yates, in place. */
function shuffle<T> (xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const a = xs[i]
    const b = xs[j]
    if (a !== undefined && b !== undefined) { xs[i] = b; xs[j] = a }
  }
  return xs
}

export const GUEST_SCENARIOS: GuestScenario[] = [
  {
    name: 'guest-registration',
    title: `Public registration: ${GUESTS} guests at once for ${CAPACITY} seats (double opt-in, waitlist on), then ` +
      `their confirmations; beside it ${GUESTS} organiser adds at once`,
    async run (env) {
      const problems: string[] = []
      const stamp = Date.now().toString(36)
      const warm = await makeEvent(env, `Guest bench warm-up ${stamp}`, true)
      const guests = await makeEvent(env, `Guest bench registration ${stamp}`, true)
      const organiser = await makeEvent(env, `Guest bench organiser ${stamp}`, false)
      const contacts = await inBatches(Array.from({ length: GUESTS + WARMUP }, (_, i) => async () => {
        const c = await expect(env, 'POST', '/api/v1/contacts', 201, {
          first_name: 'Organised', last_name: `Guest ${i}`, email: `organised-${stamp}-${i}@bench.test`
        })
        return String(c.id)
      }), 10)
      const register = (eventId: number, i: number, prefix: string) => async () => await send(env, 'POST',
        `/api/v1/public/events/${eventId}/registrations`, { name: `Guest ${i}`, email: `${prefix}-${i}@bench.test` },
        false)
      const add = (eventId: number, contactId: string) => async () => await send(env, 'POST',
        `/api/v1/events/${eventId}/attendees`, { contact_id: contactId, status: 'confirmed' })
      const confirm = (token: string) => async () =>
        await send(env, 'POST', '/api/v1/public/registrations/confirm', { token }, false)

      // warm-up: each route once compiled and run
      for (let i = 0; i < WARMUP; i++) {
        statusCheck('warm-up registration', [await register(warm, i, 'warmup')()], 202, problems)
        statusCheck('warm-up organiser add', [await add(warm, contacts[GUESTS + i] ?? '')()], 201, problems)
      }

      // 1. register
      const reg = await burst(env, 'register', Array.from({ length: GUESTS }, (_, i) => register(guests, i, 'guest')))
      const regStatuses = statusCheck('register', reg.answers, 202, problems)
      const awaiting = await attendeesIn(env, guests, 'awaiting_confirmation')
      if (awaiting.length !== GUESTS) {
        problems.push(`register: ${awaiting.length} attendees awaiting_confirmation, expected ${GUESTS}`)
      }

      // 2. the tokens, from the mails queued (the service idle: every registration answered)
      const mails = await confirmationMails(env, [warm, guests])
      const ofGuests = mails.filter(m => Number(m.event_id) === guests)
      const addresses = new Set(ofGuests.map(m => m.recipient))
      const tokens = ofGuests.filter(m => typeof m.token === 'string' && m.token !== '')
      if (ofGuests.length !== GUESTS || addresses.size !== GUESTS || tokens.length !== GUESTS) {
        problems.push(`confirmation mails: ${ofGuests.length} rows, ${addresses.size} addresses, ${tokens.length} ` +
          `tokens (expected ${GUESTS} of each)`)
      }
      for (const m of mails.filter(x => Number(x.event_id) === warm)) {
        statusCheck('warm-up confirmation', [await confirm(m.token ?? '')()], 200, problems)
      }

      // 3. confirm, in a shuffled order
      const order = shuffle([...tokens])
      const conf = await burst(env, 'confirm', order.map(m => confirm(m.token ?? '')))
      const confStatuses = statusCheck('confirm', conf.answers, 200, problems)
      const confOutcome = await placementCheck(env, 'confirm', guests,
        order.map((m, i) => ({ attendeeId: Number(m.attendee_id), answer: conf.answers[i] as Answer })), problems)

      // 4. the organiser's path
      const org = await burst(env, 'organiser add', contacts.slice(0, GUESTS).map(c => add(organiser, c)))
      const orgStatuses = statusCheck('organiser add', org.answers, 201, problems)
      const orgOutcome = await placementCheck(env, 'organiser add', organiser,
        org.answers.map(a => ({ attendeeId: Number(a.body.id), answer: a })), problems)

      const runs: ExportRun[] = [
        {
          ...reg.run,
          label: `register (POST /api/v1/public/events/{id}/registrations, ${GUESTS} at once): answers ` +
            `${regStatuses}, ${awaiting.length} awaiting confirmation; ${latencyText(reg.answers)}`
        },
        {
          ...conf.run,
          label: `confirm (POST /api/v1/public/registrations/confirm, ${GUESTS} at once, shuffled): answers ` +
            `${confStatuses}; ${confOutcome}; ${latencyText(conf.answers)}`
        },
        {
          ...org.run,
          label: `organiser add (POST /api/v1/events/{id}/attendees, confirmed, ${GUESTS} at once): answers ` +
            `${orgStatuses}; ${orgOutcome}; ${latencyText(org.answers)}`
        }
      ]
      for (const r of runs) {
        env.log(`${env.kind}: guest-registration: ${r.label}: ${GUESTS} in ${r.ms.toFixed(0)} ms, ` +
          `${r.rowsPerSecond.toFixed(0)}/s`)
      }

      if (env.kind !== 'pglite' && env.databaseUrl !== undefined) {
        const db = pgRunner(env.databaseUrl, 1)
        try {
          await db.query(
            "delete from notification_outbox where tenant_id = $1 and payload->>'event_id' = any($2::text[])",
            [BIG_TENANT, [warm, guests, organiser].map(String)]
          )
        } finally {
          await db.close()
        }
      }
      if (problems.length > 0) throw new Error(`guest-registration: ${problems.join('; ')}`)
      return runs
    }
  }
]
