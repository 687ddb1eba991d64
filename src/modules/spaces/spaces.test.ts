import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { itemsByCursor, refusedCursor } from '../../../test/helpers/pages.ts'
import { assertBadRequestAt } from '../../../test/helpers/problem.ts'
import {
  expectStatus, expectStatuses, getJson, TITLED_BODY_REFUSALS, writeIfMatch
} from '../../../test/helpers/requests.ts'
import { alicePublishedSpace, createSpace, publish } from './spaces.fixtures.ts'

type Json = Record<string, any>

const get = async (t: TestApp, token: string, url: string) => await t.as(token, { method: 'GET', url })

for (const kind of databases()) {
  void describe(`${kind}: spaces`, () => {
    const t = useTestApp(kind)

    void it('creates a draft space whose creator is its first manager', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const res = await expectStatus(t, alice, 'POST', '/api/v1/spaces', 201, {
        title: 'Garden',
        description: 'Plants',
        timezone: 'Europe/Berlin',
        visibility: 40,
        position: 3
      })
      const s = res.json()
      assert.equal(res.headers.location, `/api/v1/spaces/${s.id}`)
      assert.equal(res.headers.etag, '"1"')
      assert.equal(s.$schema, 'http://localhost:8080/schemas/Space.json')
      assert.deepEqual(
        { ...s, id: 0, created_at: '', updated_at: '' },
        {
          $schema: s.$schema,
          id: 0,
          title: 'Garden',
          description: 'Plants',
          timezone: 'Europe/Berlin',
          visibility: 40,
          status: 'draft',
          org_id: null,
          creator_id: 'alice',
          parent_ids: [],
          position: 3,
          published_at: null,
          published_id: null,
          version: 0,
          is_deleted: false,
          has_draft: false,
          public_handle: null,
          created_at: '',
          updated_at: ''
        }
      )
      assert.equal('tenant_id' in s, false)
      const managers = await get(t, alice, `/api/v1/spaces/${s.id}/managers`)
      assert.equal(managers.statusCode, 200)
      assert.equal(managers.json().total, 1)
      assert.equal(managers.json().items[0].user_id, 'alice')
      assert.equal(managers.json().items[0].role, 'space_manager:full')
      const again = await get(t, alice, `/api/v1/spaces/${s.id}`)
      assert.equal(again.json().title, 'Garden')
      const events = await t.ctx.db
        .selectFrom('outbox')
        .select(['topic', 'aggregate_id'])
        .where('tenant_id', '=', tenant.id)
        .execute()
      assert.deepEqual(events, [{ topic: 'space.created', aggregate_id: String(s.id) }])
    })

    void it('refuses bad input with 400 naming the field and creates nothing', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const cases: Array<[Json, string]> = [
        ...TITLED_BODY_REFUSALS,
        [{ title: 'a', position: -1 }, 'body.position'],
        [{ title: 'a', parent_ids: [999999] }, 'body.parent_ids[0]']
      ]
      for (const [payload, location] of cases) {
        const res = await t.as(alice, { method: 'POST', url: '/api/v1/spaces', payload })
        assertBadRequestAt(res, location)
        assert.equal(res.json().title, 'Bad Request')
      }
      const list = await get(t, alice, '/api/v1/spaces')
      assert.equal(list.json().total, 0)
    })

    void it('enforces permissions and tenancy', async () => {
      const { tenant, alice, s } = await alicePublishedSpace(t, { visibility: 40 })
      const viewer = await tenant.user('vera', ['viewer'])
      const bob = await tenant.user('bob')
      const other = await newTenant(t).user('mallory', ['admin'])

      await expectStatus(t, viewer, 'POST', '/api/v1/spaces', 403, { title: 'x' })
      assert.equal((await get(t, viewer, `/api/v1/spaces/${s.id}`)).statusCode, 200)
      await expectStatus(t, bob, 'PATCH', `/api/v1/spaces/${s.id}`, 403, { title: 'Mine' })
      await expectStatuses(t, [
        [bob, 'POST', `/api/v1/spaces/${s.id}/publish`, 403],
        [bob, 'DELETE', `/api/v1/spaces/${s.id}`, 403]
      ])
      assert.equal((await get(t, other, `/api/v1/spaces/${s.id}`)).statusCode, 404)
      await expectStatus(t, other, 'DELETE', `/api/v1/spaces/${s.id}`, 404)
      const after = await get(t, alice, `/api/v1/spaces/${s.id}/draft`)
      assert.equal(after.statusCode, 404)
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).json().title, 'Reading club')
    })

    void it('shows a space according to its visibility once published', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice', ['member'], { orgId: 'org-1' })
      const bob = await tenant.user('bob', ['member'], { orgId: 'org-1' })
      const carol = await tenant.user('carol', ['member'], { orgId: 'org-2' })
      const admin = await tenant.user('root', ['admin'])
      const priv = await createSpace(t, alice, { title: 'private', visibility: 10 })
      const members = await createSpace(t, alice, { title: 'members', visibility: 20 })
      const org = await createSpace(t, alice, { title: 'org', visibility: 30 })
      const pub = await createSpace(t, alice, { title: 'public', visibility: 40 })
      const titles = async (token: string) =>
        (await get(t, token, '/api/v1/spaces?sort_by=title&sort_dir=asc')).json().items.map((s: Json) => s.title)
      assert.deepEqual(await titles(bob), [], 'drafts are seen by their managers only')
      for (const s of [priv, members, org, pub]) await publish(t, alice, s.id)
      assert.deepEqual(await titles(alice), ['members', 'org', 'private', 'public'])
      assert.deepEqual(await titles(admin), ['members', 'org', 'private', 'public'])
      assert.deepEqual(await titles(bob), ['org', 'public'])
      assert.deepEqual(await titles(carol), ['public'])
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${members.id}/members`, 201, {
        user_id: 'carol',
        role: 'space_member'
      })
      assert.deepEqual(await titles(carol), ['members', 'public'])
      const filtered = await get(t, alice, '/api/v1/spaces?visibility=30')
      assert.deepEqual(filtered.json().items.map((s: Json) => s.title), ['org'])
      const search = await get(t, alice, '/api/v1/spaces?search=PRIV&size=1')
      assert.deepEqual([search.json().total, search.json().size, search.json().items[0].title], [1, 1, 'private'])
    })

    void it('changes a draft space directly and keeps changes of a published one pending until publish', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice, { title: 'Old' })
      const put = await expectStatus(t, alice, 'PUT', `/api/v1/spaces/${s.id}`, 200, { title: 'New', visibility: 40 })
      assert.deepEqual(
        [put.json().title, put.json().visibility, put.json().description, put.json().has_draft],
        ['New', 40, '', false]
      )
      assert.equal(put.headers.etag, '"2"')

      await publish(t, alice, s.id)
      const published = (await get(t, alice, `/api/v1/spaces/${s.id}`)).json()
      assert.equal(published.status, 'published')
      assert.equal(published.version, 1)
      assert.ok(published.published_at)

      const patch = await expectStatus(t, alice, 'PATCH', `/api/v1/spaces/${s.id}`, 200, {
        title: 'Newer',
        description: 'pending'
      })
      assert.deepEqual([patch.json().title, patch.json().has_draft], ['New', true])
      const draft = await get(t, alice, `/api/v1/spaces/${s.id}/draft`)
      assert.equal(draft.statusCode, 200)
      assert.deepEqual(
        [draft.json().title, draft.json().description, draft.json().status, draft.json().published_id],
        ['Newer', 'pending', 'draft', s.id]
      )
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).json().title, 'New')

      await publish(t, alice, s.id, { notify: false })
      const promoted = (await get(t, alice, `/api/v1/spaces/${s.id}`)).json()
      assert.deepEqual(
        [promoted.title, promoted.description, promoted.version, promoted.has_draft],
        ['Newer', 'pending', 2, false]
      )
      assert.ok(new Date(promoted.published_at) >= new Date(published.published_at))

      // nothing pending: a no-op 204
      await publish(t, alice, s.id)
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).json().version, 2)
      const topics = await t.ctx.db
        .selectFrom('outbox')
        .select('topic')
        .where('tenant_id', '=', tenant.id)
        .orderBy('id')
        .execute()
      assert.deepEqual(
        topics.map(r => r.topic),
        ['space.created', 'space.updated', 'space.published', 'space.updated', 'space.published']
      )
    })

    void it('opens, reads and discards a draft', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/discard`, 409)
      await publish(t, alice, s.id)
      const edit = await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/edit`, 200)
      assert.deepEqual(
        [edit.json().status, edit.json().published_id, edit.json().title],
        ['draft', s.id, 'Reading club']
      )
      await t.as(alice, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'Changed' } })
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/discard`, 204)
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}/draft`)).statusCode, 404)
      const after = (await get(t, alice, `/api/v1/spaces/${s.id}`)).json()
      assert.deepEqual([after.title, after.has_draft, after.version], ['Reading club', false, 1])
    })

    void it('queues the publish notification to the creator when asked', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice, { title: 'Choir' })
      const bad = await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/publish`, 400, {
        notify: true,
        channels: ['fax'],
        priority: 'urgent'
      })
      assert.deepEqual(bad.json().errors.map((e: Json) => e.location).sort(), ['body.channels[0]', 'body.priority'])
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).json().status, 'draft')

      await publish(t, alice, s.id, {
        notify: true,
        channels: ['email', 'push'],
        message: 'We are live',
        priority: 'high'
      })
      const rows = await t.ctx.db
        .selectFrom('notification_outbox')
        .select(['channel', 'recipient', 'subject', 'body', 'priority', 'status'])
        .where('tenant_id', '=', tenant.id)
        .orderBy('id')
        .execute()
      assert.deepEqual(rows, [
        {
          channel: 'email',
          recipient: 'alice@example.test',
          subject: 'Space "Choir" was published',
          body: 'We are live',
          priority: 'high',
          status: 'pending'
        },
        {
          channel: 'push',
          recipient: 'alice',
          subject: 'Space "Choir" was published',
          body: 'We are live',
          priority: 'high',
          status: 'pending'
        }
      ])
      await t.as(alice, { method: 'PATCH', url: `/api/v1/spaces/${s.id}`, payload: { title: 'Choir 2' } })
      await publish(t, alice, s.id, { notify: true })
      const second = await t.ctx.db
        .selectFrom('notification_outbox')
        .select(['channel', 'subject', 'body', 'priority'])
        .where('tenant_id', '=', tenant.id)
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow()
      assert.deepEqual(second, {
        channel: 'email',
        subject: 'Space "Choir 2" was published',
        body: 'The space "Choir 2" was published.',
        priority: 'normal'
      })
    })

    void it('checks If-Match, refuses changes to an archived space and deletes', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const s = await createSpace(t, alice)
      const url = `/api/v1/spaces/${s.id}`
      assert.equal((await writeIfMatch(t, alice, 'PATCH', url, '"7"', { title: 'x' })).statusCode, 412)
      assert.equal((await writeIfMatch(t, alice, 'PATCH', url, '"1"', { title: 'y' })).statusCode, 200)
      await publish(t, alice, s.id)
      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${s.id}/archive`, 204)
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).json().status, 'archived')
      await expectStatuses(t, [
        [alice, 'PATCH', `/api/v1/spaces/${s.id}`, 409, { title: 'z' }],
        [alice, 'POST', `/api/v1/spaces/${s.id}/publish`, 409]
      ])
      await expectStatus(t, alice, 'DELETE', `/api/v1/spaces/${s.id}`, 204)
      assert.equal((await get(t, alice, `/api/v1/spaces/${s.id}`)).statusCode, 404)
      assert.equal((await get(t, alice, '/api/v1/spaces')).json().total, 0)
      const topics = await t.ctx.db
        .selectFrom('outbox')
        .select('topic')
        .where('tenant_id', '=', tenant.id)
        .orderBy('id', 'desc')
        .limit(1)
        .execute()
      assert.deepEqual(topics, [{ topic: 'space.deleted' }])
    })

    void it('builds a multi-parent hierarchy without cycles', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const root = await createSpace(t, alice, { title: 'root' })
      const other = await createSpace(t, alice, { title: 'other' })
      const child = await createSpace(t, alice, { title: 'child', parent_ids: [root.id] })
      assert.deepEqual(child.parent_ids, [root.id])
      const grandchild = await createSpace(t, alice, { title: 'grandchild', parent_ids: [child.id] })

      await expectStatus(t, alice, 'POST', `/api/v1/spaces/${child.id}/parents`, 204, { parent_id: other.id })
      assert.deepEqual((await get(t, alice, `/api/v1/spaces/${child.id}`)).json().parent_ids, [root.id, other.id])
      const parents = await get(t, alice, `/api/v1/spaces/${child.id}/parents`)
      assert.deepEqual(parents.json().items.map((s: Json) => s.title), ['root', 'other'])

      for (const [space, parent] of [[root.id, grandchild.id], [root.id, root.id], [child.id, grandchild.id]]) {
        const cycle = await expectStatus(t, alice, 'POST', `/api/v1/spaces/${space}/parents`, 400, {
          parent_id: parent
        })
        assert.equal(cycle.json().errors[0].location, 'body.parent_id')
      }
      assert.deepEqual((await get(t, alice, `/api/v1/spaces/${root.id}`)).json().parent_ids, [])

      const children = await get(t, alice, `/api/v1/spaces/${root.id}/children`)
      assert.deepEqual(children.json().items.map((s: Json) => s.title), ['child'])
      const tree = await get(t, alice, '/api/v1/spaces/tree')
      assert.equal(tree.statusCode, 200, tree.body)
      const shape = (n: Json): Json => ({ [n.title]: n.children.map(shape) })
      assert.deepEqual(tree.json().items.map(shape), [
        { root: [{ child: [{ grandchild: [] }] }] },
        { other: [{ child: [{ grandchild: [] }] }] }
      ])

      await expectStatus(t, alice, 'DELETE', `/api/v1/spaces/${child.id}/parents/${root.id}`, 204)
      assert.deepEqual((await get(t, alice, `/api/v1/spaces/${child.id}`)).json().parent_ids, [other.id])
      await expectStatus(t, alice, 'DELETE', `/api/v1/spaces/${child.id}/parents/${root.id}`, 404)

      await t.as(alice, { method: 'DELETE', url: `/api/v1/spaces/${other.id}` })
      assert.deepEqual((await get(t, alice, `/api/v1/spaces/${child.id}`)).json().parent_ids, [])
    })

    void it('bounds the tree: a lattice of 29 spaces that would unfold into 2^14 nodes answers 422 naming the ' +
      'children route', async () => {
      const tenant = newTenant(t)
      const alice = await tenant.user('alice')
      const top = await createSpace(t, alice, { title: 'top' })
      let level = [top.id as number]
      for (let depth = 0; depth < 14; depth++) {
        const next: number[] = []
        for (const side of ['a', 'b']) {
          next.push((await createSpace(t, alice, { title: `${side}${depth}`, parent_ids: level })).id as number)
        }
        level = next
      }
      const tree = await get(t, alice, '/api/v1/spaces/tree')
      assert.equal(tree.statusCode, 422, tree.body.slice(0, 200))
      assert.match(tree.json().detail, /more than 5000 nodes.*\/children/)
      // a small tree of another tenant answers as before
      const other = newTenant(t)
      const bob = await other.user('bob')
      const root = await createSpace(t, bob, { title: 'root' })
      await createSpace(t, bob, { title: 'leaf', parent_ids: [root.id] })
      const small = await get(t, bob, '/api/v1/spaces/tree')
      assert.equal(small.statusCode, 200, small.body)
      assert.deepEqual(
        small.json().items.map((n: Json) => [n.title, n.children.map((c: Json) => c.title)]),
        [['root', ['leaf']]]
      )
    })

    void it("pages the spaces and a space's children by cursor as by page, every sort, " +
      'ties and unpublished last', async () => {
      const alice = await newTenant(t).user('alice')
      const root = await createSpace(t, alice, { title: 'Root' })
      for (let i = 0; i < 8; i++) {
        const s = await createSpace(t, alice, {
          title: i % 3 === 0 ? 'Same' : `Space ${i}`,
          parent_ids: [root.id],
          position: i % 2
        })
        if (i % 2 === 0) await publish(t, alice, s.id as number)
      }
      for (const url of [
        '/api/v1/spaces?sort_by=title&sort_dir=asc',
        '/api/v1/spaces?sort_by=published_at&sort_dir=desc',
        '/api/v1/spaces?sort_by=position&sort_dir=asc',
        '/api/v1/spaces?sort_dir=desc',
        `/api/v1/spaces/${root.id as number}/children?x=1`
      ]) {
        const all = ((await getJson(t, alice, `${url}&size=100`)).items as Json[]).map(s => s.id)
        assert.ok(all.length >= 8, url)
        const walked = (await itemsByCursor(t, alice, `${url}&size=3`)).map(s => s.id)
        assert.deepEqual(walked, all, url)
      }
      const first = await getJson(t, alice, '/api/v1/spaces?sort_by=title&size=3')
      await refusedCursor(t, alice, '/api/v1/spaces?sort_by=position&size=3', first.next_cursor)
    })
  })
}
