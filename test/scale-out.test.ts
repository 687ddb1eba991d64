/**
 * Two API instances on a Citus cluster with Redis, an S3-compatible store and an SMTP server (runs when
 * TEST_CITUS_URL and TEST_REDIS_URL are set; `npm test` starts the cluster: test/helpers/citus-cluster.ts):
 *
 * 1. a distributed database of its own on the cluster (a copy of TEST_CITUS_TEMPLATE, migrated and
 *    distributed; dropped at the end), the S3 emulator (test/helpers/s3.ts) and an SMTP server
 *    (test/helpers/smtp.ts);
 * 2. two instances of the real server (`node --import tsx src/server.ts`) with DATABASE_URL on the
 *    coordinator (the superuser login: requests still run as collab_app through the tenant scope),
 *    WORKERS=true, one REDIS_URL, the S3_* and SMTP_* settings, a small rate-limit bucket;
 * 3. through the two alternately, each result read back (a later GET, the bucket, the SMTP server's mail):
 *    rate limits are shared (one bucket drained across both); an Idempotency-Key repeat sent to B replays
 *    A's answer (one row); automation executions requested through A each run once across both
 *    (attempts 1, one activity row each); an event manager invite created through A is mailed, seen and
 *    accepted through B by the invitee, and read back through A; a cover uploaded through A is served by B
 *    from the bucket (same bytes, same ETag); notifications queued through both are each mailed exactly
 *    once although both instances run the delivery loop; registrations confirmed at once through both fill the
 *    seats exactly and queue the rest in order; webhook deliveries of writes through both reach a receiver once
 *    each, verified with `standardwebhooks`, a failed one tried again; a sync token taken through A answers a
 *    delta through B with what changed since, and nothing more after;
 * 4. SIGTERM stops both, each exiting 0.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3'
import pg from 'pg'
import { loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import { multipartBody, PNG, sha256 } from '../src/modules/event-content/event-content.cover.fixtures.ts'
import { citusNodes } from './helpers/build-app.ts'
import { createDistributedDatabase, dropDistributedDatabase } from './helpers/citus-cluster.ts'
import { killAndReport, startServers, type ServerProcess } from './helpers/process.ts'
import { startS3Emulator, type S3Emulator } from './helpers/s3.ts'
import { startSmtpServer, type SmtpCatcher } from './helpers/smtp.ts'

const citus = citusNodes()
const redisUrl = process.env.TEST_REDIS_URL ?? ''
const missing = [citus === undefined ? 'TEST_CITUS_URL' : '', redisUrl === '' ? 'TEST_REDIS_URL' : ''].filter(Boolean)
const skip =
  missing.length > 0
    ? `needs TEST_CITUS_URL and TEST_REDIS_URL (unset: ${missing.join(', ')}; npm test sets TEST_CITUS_URL when the ` +
      'citus extension is installed)'
    : false
if (skip !== false) console.log(`scale-out test skipped: it ${skip}`)

const CAPACITY = 40
const APP_URL = 'https://app.example.org'
const FROM = 'Collab <notifications@example.org>'
/** the notification delivery loop's period (src/platform/notifications/delivery.ts) */
const DELIVERY_INTERVAL_MS = 5_000
const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

/**
 * Polls `probe` until it gives a value other than undefined; fails naming `what` (and the last state) after
 * `timeoutMs`.
 */
async function waitFor<T> (
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
  state: () => string = () => ''
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms${state() !== '' ? `\n${state()}` : ''}`)
    await sleep(250)
  }
}

type Json = Record<string, any>

void describe('citus + redis + s3 + smtp: two API instances on a Citus cluster', { skip }, () => {
  const suffix = crypto.randomBytes(4).toString('hex')
  const dbName = `collab_scale_${suffix}`
  let dbUrl = ''
  let superDb: pg.Client | undefined
  let s3: S3Emulator | undefined
  let smtp: SmtpCatcher | undefined
  let dataDir = ''
  const instances: ServerProcess[] = []
  /** the instances' last log lines, for a failure's message */
  const logs = (): string => instances.map(i => `--- ${i.name}:\n${i.output().slice(-4000)}`).join('\n')

  before(async () => {
    if (citus === undefined) return
    dbUrl = await createDistributedDatabase(citus.coordinatorUrl, citus.workerUrls, dbName, citus.template)
    superDb = new pg.Client({ connectionString: dbUrl })
    await superDb.connect()
    s3 = await startS3Emulator()
    smtp = await startSmtpServer()
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-scale-'))
  })

  after(async () => {
    killAndReport(instances, 8)
    await superDb?.end()
    if (citus !== undefined && dbUrl !== '') {
      await dropDistributedDatabase(citus.coordinatorUrl, citus.workerUrls, dbName)
    }
    await s3?.stop()
    await smtp?.close()
    if (dataDir !== '') fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const instance = (n: number): ServerProcess => instances[n % 2] ?? assert.fail('the instances started')
  const A = (): ServerProcess => instance(0)
  const B = (): ServerProcess => instance(1)
  const tokenFor = async (sub: string, tenant: string, roles = ['member']): Promise<string> =>
    await signDevToken(await loadOrCreateDevKeys(dataDir), {
      sub,
      tenant,
      roles,
      email: `${sub}-${suffix}@example.test`
    })
  const emailOf = (sub: string): string => `${sub}-${suffix}@example.test`
  const call = async (
    i: ServerProcess,
    method: string,
    url: string,
    token: string,
    body?: unknown,
    headers: Record<string, string> = {}
  ): Promise<Response> =>
    await fetch(`${i.url}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...headers,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {})
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
  /** the answer's JSON, after checking its status (the body and the instances' logs in the message) */
  const expectJson = async (res: Response, status: number, what: string): Promise<Json> => {
    const text = await res.text()
    assert.equal(res.status, status, `${what}: ${text.slice(0, 2000)}\n${res.status >= 500 ? logs() : ''}`)
    return text === '' ? {} : JSON.parse(text) as Json
  }
  const createEvent = async (i: ServerProcess, token: string, title: string): Promise<number> =>
    (
      await expectJson(
        await call(i, 'POST', '/api/v1/events', token, { title, visibility: 40 }),
        201,
        `create event through ${i.name}`
      )
    ).id as number

  void it('starts two instances on the coordinator: WORKERS=true, one Redis, the S3 store, ' +
    'the SMTP server', async () => {
    assert.ok(s3 !== undefined && smtp !== undefined && superDb !== undefined)
    // the database is really distributed: a tenant table is hash-distributed, and the workers hold its shards
    const layout = await superDb.query<{ method: string; workers: number }>(
      "select p.partmethod as method, (select count(distinct nodename || ':' || nodeport)::int " +
      'from pg_dist_shard_placement sp join pg_dist_shard s using (shardid) where s.logicalrelid = p.logicalrelid) ' +
      "as workers from pg_dist_partition p where p.logicalrelid = 'contacts'::regclass"
    )
    assert.deepEqual(layout.rows, [{ method: 'h', workers: citus?.workerUrls.length }])
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      BASE_URL: 'http://localhost:8080',
      APP_URL,
      DATA_DIR: dataDir, // dev mode: both trust the one key in this folder (OIDC in production)
      DATABASE_URL: dbUrl,
      // the template is migrated and distributed already; without one, the instances migrate it
      MIGRATE_AT_START: citus?.template === undefined ? 'true' : 'false',
      WORKERS: 'true',
      REDIS_URL: redisUrl,
      RATE_LIMIT_CAPACITY: String(CAPACITY),
      RATE_LIMIT_REFILL_PER_SEC: '1',
      RATE_LIMIT_ANON_CAPACITY: '10000',
      SMTP_URL: smtp.url,
      SMTP_FROM: FROM,
      // the webhook receiver of (8) listens on this machine
      AUTOMATION_WEBHOOK_ALLOW: '127.0.0.1',
      ...s3.env,
      LOG_LEVEL: 'info'
    }
    for (const name of [
      'DATABASE_APP_URL',
      'DATABASE_WORKER_URL',
      'OIDC_ISSUER',
      'OIDC_JWKS_URL',
      'METRICS_TOKEN',
      'S3_PUBLIC_URL',
      'S3_REGION',
      'S3_FORCE_PATH_STYLE',
      'TRUST_PROXY'
    ]) {
      delete env[name]
    }
    instances.push(...(await startServers(['A', 'B'], env)))
    for (const i of instances) {
      assert.equal((await fetch(`${i.url}/ready`)).status, 200, `${i.name} /ready\n${logs()}`)
      assert.equal((await fetch(`${i.url}/health`)).status, 200, `${i.name} /health`)
    }
  })

  void it('(1) shares one rate-limit bucket per caller: requests alternated between A and B ' +
    'drain it once', async () => {
    const token = await tokenFor('limited', `tenant-rl-${suffix}`)
    const started = Date.now()
    const answers: Array<{ instance: string; status: number }> = []
    for (let n = 0; n < CAPACITY + 20; n++) {
      const i = instance(n)
      const res = await call(i, 'GET', '/api/v1/contacts', token)
      const text = await res.text()
      assert.ok(res.status === 200 || res.status === 429, `${i.name}: ${res.status} ${text.slice(0, 1000)}`)
      if (res.status === 429) assert.ok(res.headers.get('retry-after') !== null, 'a 429 carries Retry-After')
      answers.push({ instance: i.name, status: res.status })
    }
    const seconds = (Date.now() - started) / 1000
    const ok = answers.filter(a => a.status === 200).length
    // one bucket: the capacity plus the refill (1/s) over the run; a bucket per instance would have passed all of them
    assert.ok(
      ok >= CAPACITY && ok <= CAPACITY + Math.ceil(seconds) + 1,
      `${ok} of ${answers.length} passed in ${seconds.toFixed(1)} s`
    )
    assert.equal(
      answers.slice(0, CAPACITY).filter(a => a.status !== 200).length,
      0,
      'the first CAPACITY requests passed'
    )
    for (const name of ['A', 'B']) {
      assert.ok(
        answers.some(a => a.instance === name && a.status === 429),
        `${name} answered 429`
      )
    }
    // read back: the bucket is still empty on both (one more request each is refused, whichever instance)
    const again = await Promise.all(
      [A(), B()].map(async i => {
        const r = await call(i, 'GET', '/api/v1/contacts', token)
        await r.arrayBuffer()
        return r.status
      })
    )
    assert.ok(again.includes(429), `after the run: ${again.join(', ')}`)
  })

  void it("(2) shares Idempotency-Key answers: a repeat sent to B replays A's answer, " +
    'and the contact exists once', async () => {
    const tenant = `tenant-idem-${suffix}`
    const token = await tokenFor('writer', tenant)
    const key = { 'idempotency-key': `key-${suffix}` }
    const body = { first_name: 'Ada', email: `ada-${suffix}@example.test` }
    const first = await call(A(), 'POST', '/api/v1/contacts', token, body, key)
    const firstBody = await expectJson(first, 201, 'the first POST, through A')
    const repeat = await call(B(), 'POST', '/api/v1/contacts', token, body, key)
    const repeatBody = await expectJson(repeat, 201, 'the repeat, through B')
    assert.equal(repeat.headers.get('idempotent-replayed'), 'true')
    assert.equal(first.headers.get('idempotent-replayed'), null)
    assert.deepEqual(repeatBody, firstBody)
    // read back through both: one contact
    for (const i of [A(), B()]) {
      const list = await expectJson(await call(i, 'GET', '/api/v1/contacts', token), 200, `list through ${i.name}`)
      assert.deepEqual([list.total, list.items.map((c: Json) => c.id)], [1, [firstBody.id]], `through ${i.name}`)
    }
    const rows = await superDb?.query('select id from contacts where tenant_id = $1', [tenant])
    assert.equal(rows?.rowCount, 1)
  })

  void it('(3) shares the job queue: executions requested through A run once each across both instances', async () => {
    const tenant = `tenant-jobs-${suffix}`
    const token = await tokenFor('planner', tenant)
    const eventId = await createEvent(A(), token, 'Scaled out')
    const rule = await expectJson(
      await call(A(), 'POST', '/api/v1/automation/rules', token, {
        name: 'log',
        scope: 'EVENT',
        scope_id: String(eventId),
        schedule: { event_type: 'schedule.cron', cron_expression: '0 0 1 1 *' },
        actions: [{ type: 'activity', message: `ran-${suffix}` }]
      }),
      201,
      'create the rule through A'
    )
    const ruleId = rule.id as string
    const RUNS = 4
    const queued: string[] = []
    for (let n = 0; n < RUNS; n++) {
      queued.push(
        (
          await expectJson(
            await call(A(), 'POST', `/api/v1/automation/rules/${ruleId}/execute`, token, {}),
            202,
            `execution ${n} through A`
          )
        ).id as string
      )
    }
    // both instances' workers poll one queue: wait (in the database, costing no rate-limit tokens) for every execution
    // to finish
    type Row = { id: string, status: string, attempts: number }
    let rows: Row[] = []
    await waitFor('every execution finished', 90_000, async () => {
      rows =
        (
          await superDb?.query<Row>(
            'select id, status, attempts from automation_executions where tenant_id = $1 and rule_id = $2 ' +
            'order by created_at',
            [tenant, ruleId]
          )
        )?.rows ?? []
      return rows.length === RUNS && rows.every(r => r.status !== 'queued' && r.status !== 'running') ? rows : undefined
    }, () => `${JSON.stringify(rows)}\n${logs()}`)
    assert.deepEqual(
      rows.map(r => [r.status, r.attempts]),
      Array.from({ length: RUNS }, () => ['succeeded', 1]),
      logs()
    )
    // read back through B: the executions, and one activity row per execution
    const history = await expectJson(
      await call(B(), 'GET', `/api/v1/automation/rules/${ruleId}/executions?size=50`, token),
      200,
      'executions through B'
    )
    assert.equal(history.total, RUNS)
    assert.deepEqual(
      history.items.map((e: Json) => [e.id, e.status, e.attempts]).sort(),
      queued.map(id => [id, 'succeeded', 1]).sort()
    )
    const activity = await call(B(), 'GET', `/api/v1/events/${eventId}/activity`, token)
    const text = await activity.text()
    assert.equal(activity.status, 200, text)
    assert.equal(text.split(`ran-${suffix}`).length - 1, RUNS, `one activity row per execution: ${text.slice(0, 2000)}`)
  })

  let inviteMailAddress = ''

  void it('(4) an event manager invite created through A is mailed, seen and accepted through B by the invitee, ' +
    'and read back through A', async () => {
    const tenant = `tenant-inv-${suffix}`
    const alice = await tokenFor('alice', tenant)
    const kim = await tokenFor('kim', tenant)
    inviteMailAddress = emailOf('kim')
    const pendingUrl = '/api/v1/events/managers/pending'
    const eventId = await createEvent(A(), alice, `Board ${suffix}`)
    const invite = await expectJson(
      await call(A(), 'POST', `/api/v1/events/${eventId}/managers/invite`, alice, {
        email: inviteMailAddress,
        role: 'event_manager:editor',
        message: 'Please help'
      }),
      201,
      'invite through A'
    )
    assert.deepEqual([invite.status, invite.invited_email, invite.user_id], ['pending', inviteMailAddress, null])
    assert.equal(typeof invite.invite_token, 'string')

    // the invitee sees it through B
    const pending = await expectJson(await call(B(), 'GET', pendingUrl, kim), 200, 'pending through B')
    assert.deepEqual(pending.items.map((p: Json) => [p.id, p.event_id, p.status]), [[invite.id, eventId, 'pending']])

    // the mail, sent by whichever instance's delivery loop claimed it, carries the token in its link
    const [mail] = await waitFor(
      'the invitation mail',
      30_000,
      () => {
        const m = smtp?.to(inviteMailAddress) ?? []
        return m.length > 0 ? m : undefined
      },
      logs
    )
    assert.ok(mail !== undefined)
    assert.equal(mail.from, 'notifications@example.org')
    assert.equal(mail.mail.subject, `Invitation to manage the event "Board ${suffix}"`)
    const link = /(https:\/\/app\.example\.org\/invites\/accept\?\S+)/.exec(mail.mail.text ?? '')?.[1]
    assert.ok(link !== undefined, mail.mail.text)
    const mailedToken = new URL(link).searchParams.get('token')
    assert.equal(mailedToken, invite.invite_token)

    // accepted through B with the mailed token
    const accept = async (i: ServerProcess): Promise<Response> =>
      await call(i, 'POST', '/api/v1/events/managers/accept', kim, { token: mailedToken })
    const accepted = await expectJson(await accept(B()), 200, 'accept through B')
    assert.deepEqual(
      [accepted.id, accepted.status, accepted.user_id, accepted.role],
      [invite.id, 'active', 'kim', 'event_manager:editor']
    )

    // read back through A: kim manages the event, nothing is pending for kim any more, and a second accept is refused
    const manager = await expectJson(
      await call(A(), 'GET', `/api/v1/events/${eventId}/managers/kim`, alice),
      200,
      'the manager through A'
    )
    assert.deepEqual(
      [manager.id, manager.status, manager.role, manager.invited_by],
      [invite.id, 'active', 'event_manager:editor', 'alice']
    )
    const managers = await expectJson(
      await call(A(), 'GET', `/api/v1/events/${eventId}/managers`, alice),
      200,
      'the managers through A'
    )
    assert.deepEqual(managers.items.map((m: Json) => [m.user_id, m.status]), [['kim', 'active']])
    assert.deepEqual((await expectJson(await call(A(), 'GET', pendingUrl, kim), 200, 'pending through A')).items, [])
    await expectJson(await accept(A()), 409, 'a second accept through A')
  })

  void it('(5) a cover uploaded through A is stored in the S3 bucket and served by B: ' +
    'same bytes, same ETag', async () => {
    assert.ok(s3 !== undefined)
    const tenant = `tenant-cover-${suffix}`
    const carol = await tokenFor('carol', tenant)
    const eventId = await createEvent(A(), carol, 'With a cover')
    const form = multipartBody([{ name: 'file', filename: 'cover.png', type: 'image/png', data: PNG }])
    const put = await fetch(`${A().url}/api/v1/events/${eventId}/cover`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${carol}`, ...form.headers },
      body: form.payload
    })
    const uploaded = await expectJson(put, 200, 'upload through A')
    const etag = put.headers.get('etag')
    assert.ok(etag !== null)
    const key = uploaded.cover_image_key as string
    const cover = uploaded.metadata.cover_image as Json
    assert.deepEqual(
      [cover.key, cover.content_type, cover.url],
      [key, 'image/png', `http://localhost:8080/api/v1/events/${eventId}/cover`]
    )

    // in the bucket (and not in either instance's local folder)
    const prefix = `covers/${crypto.createHash('sha256').update(tenant).digest('hex').slice(0, 16)}/${eventId}/`
    assert.deepEqual(await s3.keys(prefix), [key])
    const stored = await s3.object(key)
    assert.equal(stored.contentType, 'image/png')
    assert.equal(sha256(stored.data), cover.sha256)
    assert.equal(stored.data.length, cover.size)
    assert.equal(
      fs.existsSync(path.join(dataDir, 'objects'))
        ? fs.readdirSync(path.join(dataDir, 'objects'), { recursive: true }).length
        : 0,
      0,
      'nothing stored on local disk'
    )

    // served by B from the bucket: the stored bytes, whose MD5 is the bucket's ETag
    const img = await fetch(`${B().url}/api/v1/events/${eventId}/cover`, {
      headers: { authorization: `Bearer ${carol}` }
    })
    const served = Buffer.from(await img.arrayBuffer())
    assert.equal(img.status, 200, served.toString().slice(0, 1000))
    assert.equal(img.headers.get('content-type'), 'image/png')
    assert.equal(img.headers.get('x-content-type-options'), 'nosniff')
    assert.deepEqual(served, stored.data)
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: s3.env.S3_ACCESS_KEY_ID ?? '', secretAccessKey: s3.env.S3_SECRET_ACCESS_KEY ?? '' },
      maxAttempts: 1
    })
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))
      assert.equal(head.ETag, `"${crypto.createHash('md5').update(served).digest('hex')}"`)
    } finally {
      client.destroy()
    }
    // the event read back through B: the upload's ETag and cover record
    const event = await call(B(), 'GET', `/api/v1/events/${eventId}`, carol)
    const eventBody = await expectJson(event, 200, 'the event through B')
    assert.equal(event.headers.get('etag'), etag)
    assert.equal(eventBody.cover_image_key, key)
    assert.deepEqual(eventBody.metadata.cover_image, cover)
  })

  void it('(6) notifications queued through both instances are each mailed exactly once, ' +
    'although both run the delivery loop', async () => {
    assert.ok(smtp !== undefined)
    const tenant = `tenant-mail-${suffix}`
    const dora = await tokenFor('dora', tenant, ['admin'])
    const eventId = await createEvent(A(), dora, `Gala ${suffix}`)
    const N = 6
    const addresses = Array.from({ length: N }, (_, n) => emailOf(`guest${n}`))
    const invited = new Map<string, number>()
    for (const [n, email] of addresses.entries()) {
      const i = instance(n)
      const row = await expectJson(
        await call(i, 'POST', `/api/v1/events/${eventId}/managers/invite`, dora, {
          email,
          role: 'event_manager:checkin'
        }),
        201,
        `invite ${email} through ${i.name}`
      )
      invited.set(email, row.id as number)
    }
    await waitFor(
      `all ${N} invitations mailed`,
      60_000,
      () => (addresses.every(a => (smtp?.to(a).length ?? 0) > 0) ? true : undefined),
      () => `received: ${JSON.stringify(smtp?.received.map(r => r.to))}\n${logs()}`
    )
    // both loops run every DELIVERY_INTERVAL_MS: let each pass twice more, then count what arrived
    await sleep(2 * DELIVERY_INTERVAL_MS + 1_000)
    for (const a of addresses) {
      const mails = smtp.to(a)
      assert.equal(mails.length, 1, `${a} got ${mails.length} mails`)
      assert.equal(mails[0]?.mail.subject, `Invitation to manage the event "Gala ${suffix}"`)
    }
    // the invitation of (4) too; and nothing else arrived
    if (inviteMailAddress !== '') {
      assert.equal(
        smtp.to(inviteMailAddress).length,
        1,
        `${inviteMailAddress} got ${smtp.to(inviteMailAddress).length} mails`
      )
    }
    const expected = [...addresses, ...(inviteMailAddress !== '' ? [inviteMailAddress] : [])].sort()
    assert.deepEqual(smtp.received.flatMap(r => r.to).sort(), expected)
    const messageIds = smtp.received.map(r => r.mail.messageId)
    assert.equal(new Set(messageIds).size, messageIds.length, 'no message sent twice')

    // read back through B (the admin list) and in the database: each sent once, at the first attempt
    const list = await expectJson(
      await call(B(), 'GET', '/api/v1/notifications?size=50', dora),
      200,
      'notifications through B'
    )
    assert.deepEqual(
      list.items.map((r: Json) => [r.recipient, r.channel, r.status, r.attempts]).sort(),
      addresses.map(a => [a, 'email', 'sent', 1]).sort()
    )
    const rows = await superDb?.query<{ recipient: string; status: string; attempts: number }>(
      'select recipient, status, attempts from notification_outbox where tenant_id = $1 order by recipient',
      [tenant]
    )
    assert.deepEqual(
      rows?.rows.map(r => [r.recipient, r.status, r.attempts]),
      [...addresses].sort().map(a => [a, 'sent', 1])
    )
  })

  void it('(7) registrations confirmed at once through both instances fill the seats exactly: ' +
    'the rest wait in order', async () => {
    const tenant = `tenant-reg-${suffix}`
    const olga = await tokenFor('olga', tenant, ['admin'])
    const eventId = await createEvent(A(), olga, `Workshop ${suffix}`)
    const SEATS = 5
    const GUESTS = 16
    await expectJson(await call(B(), 'PATCH', `/api/v1/events/${eventId}/registration`, olga,
      { capacity: SEATS, waitlist_enabled: true }), 200, 'registration settings through B')
    // contacts without an e-mail: the confirmations are stored undeliverable, and the SMTP server of (6) sees none
    const contacts: string[] = []
    for (let n = 0; n < GUESTS; n++) {
      const made = await expectJson(await call(instance(n), 'POST', '/api/v1/contacts', olga,
        { first_name: `Guest${n}`, last_name: suffix }), 201, 'a guest contact')
      contacts.push(made.id as string)
    }
    const url = `/api/v1/events/${eventId}/attendees`
    await expectJson(await call(A(), 'POST', `${url}/bulk`, olga, { contact_ids: contacts, status: 'invited' }), 204,
      'the guests invited')
    // every guest is confirmed at the same moment, alternately through A and B, each by another administrator (one
    // rate-limit bucket each)
    const admins = await Promise.all(contacts.map(async (_, n) => await tokenFor(`desk${n}`, tenant, ['admin'])))
    const answers = await Promise.all(contacts.map(async (id, n) => {
      const res = await call(instance(n), 'PATCH', `${url}/${id}`, admins[n] ?? olga, { status: 'confirmed' })
      return { id, status: res.status, body: await res.json() as Json }
    }))
    assert.deepEqual(answers.filter(a => a.status !== 200).map(a => [a.status, a.body]), [], logs())
    const list = await expectJson(await call(B(), 'GET', `${url}?size=100`, olga), 200, 'the attendees through B')
    const confirmed = list.items.filter((r: Json) => r.status === 'confirmed')
    const waiting = list.items.filter((r: Json) => r.status === 'waitlisted')
      .sort((a: Json, b: Json) => Number(a.waitlist_position) - Number(b.waitlist_position))
    assert.equal(confirmed.length, SEATS)
    const positions = Array.from({ length: GUESTS - SEATS }, (_, i) => i + 1)
    assert.deepEqual(waiting.map((r: Json) => r.waitlist_position), positions)
    // each answer said where its guest landed, as the list reads now
    for (const a of answers) {
      const row = list.items.find((r: Json) => r.contact_id === a.id)
      assert.deepEqual([a.body.status, a.body.waitlist_position], [row?.status, row?.waitlist_position])
    }
    // a seat freed through A goes to the first in line, read back through B
    const first = waiting[0]?.contact_id as string
    await expectJson(await call(A(), 'PATCH', `${url}/${confirmed[0].contact_id as string}`, olga,
      { status: 'declined' }), 200, 'a confirmed guest declines through A')
    const after = await expectJson(await call(B(), 'GET', `${url}?size=100`, olga), 200, 'the attendees through B')
    assert.equal(after.items.find((r: Json) => r.contact_id === first)?.status, 'confirmed')
    assert.equal(after.items.filter((r: Json) => r.status === 'confirmed').length, SEATS)
  })

  void it('(8) webhooks: deliveries of writes through both instances reach the receiver once each, signed; ' +
    'a failed one is retried', async () => {
    const { Webhook } = await import('standardwebhooks')
    const received: Array<{ id: string, path: string, body: string, headers: Record<string, string> }> = []
    let failOnce = true
    const http = await import('node:http')
    const receiver = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString() })
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
        received.push({ id: headers['webhook-id'] ?? '', path: req.url ?? '', body, headers })
        // the first delivery to /flaky fails: the worker must try it again
        if (req.url === '/flaky' && failOnce) {
          failOnce = false
          res.writeHead(500).end()
          return
        }
        res.writeHead(204).end()
      })
    })
    await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
    try {
      const port = (receiver.address() as import('node:net').AddressInfo).port
      const tenant = `tenant-hooks-${suffix}`
      const root = await tokenFor('root', tenant, ['admin'])
      const sub = await expectJson(await call(A(), 'POST', '/api/v1/webhooks', root,
        { url: `http://127.0.0.1:${port}/hooks`, event_types: ['contact.created'] }), 201, 'a subscription through A')
      const flaky = await expectJson(await call(B(), 'POST', '/api/v1/webhooks', root,
        { url: `http://127.0.0.1:${port}/flaky`, event_types: ['contact.created'] }), 201, 'a subscription through B')
      const N = 8
      const ids: string[] = []
      for (let n = 0; n < N; n++) {
        const made = await expectJson(await call(instance(n), 'POST', '/api/v1/contacts', root,
          { first_name: `Hook${n}` }), 201, 'a contact')
        ids.push(made.id as string)
      }
      await waitFor(`${N} deliveries to /hooks`, 60_000,
        () => received.filter(r => r.path === '/hooks').length >= N ? true : undefined,
        () => `received: ${received.length}\n${logs()}`)
      const hooks = received.filter(r => r.path === '/hooks')
      const verifier = new Webhook((sub.secret as string).replace(/^whsec_/, ''))
      const contactIds = hooks.map(r => (verifier.verify(r.body, r.headers) as Json).data?.contact_id as string)
      assert.deepEqual(contactIds.sort(), [...ids].sort(), 'every contact once')
      assert.equal(new Set(hooks.map(r => r.id)).size, N, 'no webhook-id twice')
      // the first delivery to /flaky failed; made due now (its back-off's first step is 30 s), one of the two
      // workers tries it again with the same webhook-id, and every contact reached /flaky once with success
      const flakyOf = () => received.filter(r => r.path === '/flaky')
      await waitFor(`${N} attempts to /flaky`, 60_000, () => flakyOf().length >= N ? true : undefined, logs)
      const failedId = flakyOf()[0]?.id
      await superDb?.query(
        "update webhook_deliveries set next_attempt_at = now() where tenant_id = $1 and status = 'pending'", [tenant])
      await waitFor('the retry of the failed delivery', 60_000,
        () => flakyOf().length >= N + 1 ? true : undefined, logs)
      assert.equal(flakyOf().length, N + 1, 'one retry, no other repeat')
      assert.equal(flakyOf()[N]?.id, failedId, 'the retry carries the webhook-id of the failed attempt')
      assert.equal(new Set(flakyOf().map(r => r.id)).size, N)
      const log = await expectJson(await call(A(), 'GET', `/api/v1/webhooks/${flaky.id as string}/deliveries`, root),
        200, 'the delivery log through A')
      assert.deepEqual(log.items.map((d: Json) => d.status), Array.from({ length: N }, () => 'succeeded'))
    } finally {
      await new Promise(resolve => receiver.close(resolve))
    }
  })

  void it('(9) incremental sync on the cluster: a delta through B brings what was written through A ' +
    'since a token', async () => {
    const tenant = `tenant-sync-${suffix}`
    const sam = await tokenFor('sam', tenant, ['admin'])
    const first = await expectJson(await call(A(), 'POST', '/api/v1/contacts', sam, { first_name: 'Before' }), 201,
      'a contact')
    const full = await expectJson(await call(A(), 'GET', '/api/v1/contacts?sync=true', sam), 200,
      'a full read with sync=true')
    assert.equal(typeof full.sync_token, 'string', 'the cluster issues sync tokens')
    const later = await expectJson(await call(A(), 'POST', '/api/v1/contacts', sam, { first_name: 'After' }), 201,
      'a contact')
    await expectJson(await call(A(), 'DELETE', `/api/v1/contacts/${first.id as string}`, sam), 204, 'a delete')
    const delta = await expectJson(await call(B(), 'GET',
      `/api/v1/contacts?sync_token=${encodeURIComponent(full.sync_token as string)}`, sam), 200, 'a delta through B')
    assert.deepEqual(delta.items.map((c: Json) => c.id), [later.id])
    assert.deepEqual(delta.deleted, [{ id: first.id, deleted: true }])
    const next = await expectJson(await call(A(), 'GET',
      `/api/v1/contacts?sync_token=${encodeURIComponent(delta.sync_token as string)}`, sam), 200, 'the next delta')
    assert.deepEqual([next.items, next.deleted], [[], []], 'nothing repeated')
  })

  void it('stops both instances on SIGTERM, each exiting 0', async () => {
    assert.equal(instances.length, 2)
    const codes = await Promise.all(instances.map(async i => await i.stop()))
    assert.deepEqual(codes, [0, 0], logs())
  })
})
