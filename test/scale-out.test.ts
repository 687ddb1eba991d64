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
 *    once although both instances run the delivery loop;
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
import { multipartBody, PNG, sha256 } from '../src/modules/event-collab/event-collab.cover.fixtures.ts'
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
    ? `needs TEST_CITUS_URL and TEST_REDIS_URL (unset: ${missing.join(', ')}; npm test sets TEST_CITUS_URL when the citus extension is installed)`
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

  void it('starts two instances on the coordinator: WORKERS=true, one Redis, the S3 store, the SMTP server', async () => {
    assert.ok(s3 !== undefined && smtp !== undefined && superDb !== undefined)
    // the database is really distributed: a tenant table is hash-distributed, and the workers hold its shards
    const layout = await superDb.query<{ method: string; workers: number }>(
      "select p.partmethod as method, (select count(distinct nodename || ':' || nodeport)::int from pg_dist_shard_placement sp join pg_dist_shard s using (shardid) where s.logicalrelid = p.logicalrelid) as workers from pg_dist_partition p where p.logicalrelid = 'contacts'::regclass"
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

  void it('(1) shares one rate-limit bucket per caller: requests alternated between A and B drain it once', async () => {
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

  void it("(2) shares Idempotency-Key answers: a repeat sent to B replays A's answer, and the contact exists once", async () => {
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
            'select id, status, attempts from automation_executions where tenant_id = $1 and rule_id = $2 order by created_at',
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

  void it('(4) an event manager invite created through A is mailed, seen and accepted through B by the invitee, and read back through A', async () => {
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

  void it('(5) a cover uploaded through A is stored in the S3 bucket and served by B: same bytes, same ETag', async () => {
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

  void it('(6) notifications queued through both instances are each mailed exactly once, although both run the delivery loop', async () => {
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

  void it('stops both instances on SIGTERM, each exiting 0', async () => {
    assert.equal(instances.length, 2)
    const codes = await Promise.all(instances.map(async i => await i.stop()))
    assert.deepEqual(codes, [0, 0], logs())
  })
})
