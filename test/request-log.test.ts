/**
 * Every log line of a request carries its reqId, route template and (once authenticated) tenant:
 * lines a handler writes, lines of the error handler (a 500, a handled 400), and the completion
 * line; a request that matched no route says `route: unmatched`. The app logs through pino into a
 * stream the test reads.
 */
import crypto from 'node:crypto'
import { Writable } from 'node:stream'
import { before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { LazyChild } from '../src/platform/request-log.ts'
import { databases, useTestApp } from './helpers/build-app.ts'

type Line = Record<string, unknown>

for (const kind of databases()) {
  describe(`${kind}: request log lines`, () => {
    const lines: Line[] = []
    const stream = new Writable({
      write (chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString('utf8').split('\n')) {
          if (text.trim() !== '') lines.push(JSON.parse(text) as Line)
        }
        done()
      }
    })
    const t = useTestApp(kind, {
      logger: { level: 'info', stream },
      // a test-only route whose handler logs, then fails
      beforeReady: app => {
        app.get('/api/v1/test-log-failure/:id', async (request) => {
          request.log.info({ id: (request.params as { id: string }).id }, 'handler line')
          throw new Error('deliberate failure')
        })
      }
    })
    let token: string
    const tenant = `tenant-${crypto.randomUUID()}`

    before(async () => {
      token = await t.token({ sub: 'alice', tenant, roles: ['admin'], email: 'alice@example.test' })
    })

    /** The lines of the one request answered with this id (the `instance` of an error body names it). */
    function linesOf (reqId: string): Line[] {
      const mine = lines.filter(l => l.reqId === reqId)
      assert.ok(mine.length > 0, `no line of request ${reqId}`)
      return mine
    }
    const reqIdOf = (instance: string): string => instance.split('#')[1] ?? ''

    it("a 500: the handler's line, the error handler's and the completion line carry reqId, " +
      'tenant and route', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/test-log-failure/42',
        headers: { authorization: `Bearer ${token}` }
      })
      assert.equal(res.statusCode, 500)
      const reqId = reqIdOf(res.json().instance as string)
      const mine = linesOf(reqId)
      assert.deepEqual(
        mine.map(l => l.msg),
        ['handler line', 'request failed', 'request completed']
      )
      for (const l of mine) {
        assert.equal(l.tenant, tenant, JSON.stringify(l))
        assert.equal(l.route, '/api/v1/test-log-failure/:id', JSON.stringify(l))
      }
      // the completion line names the request itself
      const done = mine.at(-1) as { req?: { method?: string; url?: string }; res?: { statusCode?: number } }
      assert.equal(done.req?.method, 'GET')
      assert.equal(done.req?.url, '/api/v1/test-log-failure/42')
      assert.equal(done.res?.statusCode, 500)
    })

    it('a handled 400 of a real route: the refusal and completion lines carry them too', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/contacts',
        headers: { authorization: `Bearer ${token}` },
        payload: { first_name: 'Ada', email: 'not an address' }
      })
      assert.equal(res.statusCode, 400, res.body)
      const mine = linesOf(reqIdOf(res.json().instance as string))
      assert.deepEqual(mine.map(l => l.msg), ['request refused', 'request completed'])
      for (const l of mine) {
        assert.equal(l.tenant, tenant, JSON.stringify(l))
        assert.equal(l.route, '/api/v1/contacts', JSON.stringify(l))
      }
    })

    it("keeps a calendar feed's token out of the completion line, and the rest of the URL in it", async () => {
      const secret = crypto.randomBytes(32).toString('base64url')
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/me/calendar.ics?token=${secret}` })
      assert.equal(res.statusCode, 404)
      const mine = linesOf(reqIdOf(res.json().instance as string))
      assert.ok(mine.every(l => !JSON.stringify(l).includes(secret)), JSON.stringify(mine))
      const done = mine.at(-1) as { req?: { url?: string, method?: string } }
      assert.equal(done.req?.url, '/api/v1/me/calendar.ics?token=%5Bredacted%5D')
      assert.equal(done.req?.method, 'GET')
    })

    it('no route matched: route is "unmatched"; without a valid token there is no tenant', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/no-such-path/${crypto.randomUUID()}`,
        headers: { authorization: `Bearer ${token}` }
      })
      assert.equal(res.statusCode, 404)
      for (const l of linesOf(reqIdOf(res.json().instance as string))) {
        assert.equal(l.route, 'unmatched', JSON.stringify(l))
      }

      const refused = await t.app.inject({
        method: 'GET',
        url: '/api/v1/contacts',
        headers: { authorization: 'Bearer not.a.token' }
      })
      assert.equal(refused.statusCode, 401)
      for (const l of linesOf(reqIdOf(refused.json().instance as string))) {
        assert.equal(l.route, '/api/v1/contacts', JSON.stringify(l))
        assert.equal(l.tenant, undefined, JSON.stringify(l))
      }
    })
  })
}

describe('lazy child loggers', () => {
  /** A pino logger writing into `lines`, and how many children were made of it (pino's own `child`, counted). */
  function logger (level: string) {
    const lines: Line[] = []
    const stream = new Writable({
      write (chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Line)
        done()
      }
    })
    const root = pino({ level, base: null, timestamp: false }, stream)
    const made = { children: 0 }
    // pino's children inherit from their parent: this counts theirs too
    const child = root.child
    root.child = function (this: typeof root, bindings, options) {
      made.children++
      return child.call(this, bindings, options)
    } as typeof root.child
    return { root, lines, made }
  }

  it('writes what the real child writes, with every binding of the chain, once a line is enabled', async () => {
    const { root, lines, made } = logger('info')
    const lazy = new LazyChild(root, { reqId: 'r1', route: '/x' }).child({ tenant: 't1' })
    const real = root.child({ reqId: 'r1', route: '/x' }).child({ tenant: 't1' })
    made.children = 0
    lazy.info({ n: 1 }, 'line')
    real.info({ n: 1 }, 'line')
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(lines.length, 2)
    assert.deepEqual(lines[0], lines[1])
    assert.deepEqual(lines[0], { level: 30, reqId: 'r1', route: '/x', tenant: 't1', n: 1, msg: 'line' })
    assert.equal(made.children, 2, 'the lazy chain became real children on its first line')
    lazy.info('again')
    assert.equal(made.children, 2, 'and stays them')
  })

  it('makes no child and writes nothing for lines below the level', async () => {
    const { root, lines, made } = logger('warn')
    const lazy = new LazyChild(root, { reqId: 'r2' }).child({ tenant: 't2' })
    lazy.info('not written')
    lazy.debug('not written')
    assert.equal(lazy.level, 'warn')
    assert.equal(made.children, 0)
    lazy.warn('written')
    await new Promise(resolve => setImmediate(resolve))
    assert.deepEqual(lines, [{ level: 40, reqId: 'r2', tenant: 't2', msg: 'written' }])
  })

  it("a child's own level applies to its lines", async () => {
    const { root, lines } = logger('warn')
    const lazy = new LazyChild(root, { reqId: 'r3' })
    lazy.level = 'debug'
    lazy.debug('written at debug')
    await new Promise(resolve => setImmediate(resolve))
    assert.deepEqual(lines, [{ level: 20, reqId: 'r3', msg: 'written at debug' }])
  })
})
