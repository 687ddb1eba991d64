import crypto from 'node:crypto'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { databases, newTenant, useTestApp, type TestApp } from '../../../test/helpers/build-app.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { displayProfiles } from './identity.repository.ts'
import { ExportError, parseExport, resyncUsers } from './identity.idp-resync.ts'
import { applyUserChange } from './identity.service.ts'
import { userRow } from './identity.fixtures.ts'

async function topics (t: TestApp, tenantId: string) {
  const rows = await withTenant(t.ctx.db, { tenantId }, trx =>
    trx
      .selectFrom('outbox')
      .select(['topic', 'aggregate_id'])
      .where('tenant_id', '=', tenantId)
      .where('aggregate_type', '=', 'user')
      .orderBy('id')
      .execute()
  )
  return rows.map(r => `${r.aggregate_id}:${r.topic}`)
}

void describe('user export parsing', () => {
  void it('reads the flat format and ZITADEL user-service entries', () => {
    const users = parseExport({
      result: [
        {
          userId: 'a',
          resourceOwner: 'org',
          state: 'active',
          email: 'a@x.test',
          firstName: 'A',
          lastName: 'B',
          displayName: ' ',
          sequence: 4
        },
        {
          userId: 'b',
          details: { resourceOwner: 'org', sequence: '12' },
          state: 'USER_STATE_LOCKED',
          username: 'bee',
          human: {
            profile: { givenName: 'Bea', familyName: 'C', avatarUrl: 'https://x.test/b.png' },
            email: { email: 'b@x.test' }
          }
        },
        { userId: 'm', resourceOwner: 'org', state: 'USER_STATE_DELETED', machine: { name: 'Robot' } }
      ]
    })
    assert.deepEqual(users, [
      {
        userId: 'a',
        tenantId: 'org',
        state: 'active',
        sequence: 4,
        profile: { email: 'a@x.test', first_name: 'A', last_name: 'B', display_name: null }
      },
      {
        userId: 'b',
        tenantId: 'org',
        state: 'inactive',
        sequence: 12,
        profile: {
          email: 'b@x.test',
          first_name: 'Bea',
          last_name: 'C',
          username: 'bee',
          avatar_url: 'https://x.test/b.png'
        }
      },
      { userId: 'm', tenantId: 'org', state: 'removed', sequence: undefined, profile: { display_name: 'Robot' } }
    ])
  })

  void it('names every problem by position', () => {
    assert.throws(
      () =>
        parseExport([
          { resourceOwner: 'org', state: 'active' },
          { userId: 'x', resourceOwner: 'org', state: 'gone', email: 5 },
          'no'
        ]),
      (err: unknown) => {
        assert.ok(err instanceof ExportError)
        assert.deepEqual(err.problems, [
          '[0].userId: required',
          '[1].state: expected active, inactive, locked, initial, removed or deleted (USER_STATE_… accepted)',
          '[1].email: expected a string',
          '[2]: expected an object'
        ])
        return true
      }
    )
    assert.throws(() => parseExport({ nothing: true }), ExportError)
  })
})

for (const kind of databases()) {
  void describe(`${kind}: user lifecycle`, () => {
    const t = useTestApp(kind)

    void describe('displayProfiles', () => {
      void it('gives every requested user a name, initials and avatar with the documented fallbacks', async () => {
        const tenantId = `org-${crypto.randomUUID()}`
        await withTenant(t.ctx.db, { tenantId }, async (trx) => {
          await trx
            .insertInto('users')
            .values([
              {
                tenant_id: tenantId,
                id: 'full',
                display_name: 'Grace Hopper',
                first_name: 'Grace',
                last_name: 'Hopper',
                email: 'g@x.test',
                username: null,
                avatar_url: 'https://x.test/g.png',
                idp_sequence: null
              },
              {
                tenant_id: tenantId,
                id: 'names',
                display_name: null,
                first_name: 'Ada',
                last_name: 'Lovelace',
                email: null,
                username: null,
                avatar_url: null,
                idp_sequence: null
              },
              {
                tenant_id: tenantId,
                id: 'mail',
                display_name: '  ',
                first_name: null,
                last_name: null,
                email: 'john.smith@x.test',
                username: null,
                avatar_url: null,
                idp_sequence: null
              }
            ])
            .execute()
        })
        const profiles = await withTenant(t.ctx.db, { tenantId }, trx =>
          displayProfiles(trx, tenantId, ['full', 'names', 'mail', 'unknown-user', 'full'])
        )
        assert.deepEqual([...profiles.keys()], ['full', 'names', 'mail', 'unknown-user'])
        assert.deepEqual(profiles.get('full'), {
          user_id: 'full',
          display_name: 'Grace Hopper',
          initials: 'GH',
          avatar_url: 'https://x.test/g.png',
          known: true,
          state: 'active'
        })
        assert.deepEqual(profiles.get('names'), {
          user_id: 'names',
          display_name: 'Ada Lovelace',
          initials: 'AL',
          avatar_url: null,
          known: true,
          state: 'active'
        })
        assert.equal(profiles.get('mail')?.display_name, 'john.smith')
        assert.equal(profiles.get('mail')?.initials, 'JS')
        assert.equal(profiles.get('unknown-user')?.display_name, 'unknown-user')
        assert.equal(profiles.get('unknown-user')?.known, false)
        // another tenant sees none of them
        const other = await withTenant(t.ctx.db, { tenantId: 'other' }, trx => displayProfiles(trx, 'other', ['full']))
        assert.equal(other.get('full')?.known, false)
        assert.equal((await withTenant(t.ctx.db, { tenantId }, trx => displayProfiles(trx, tenantId, []))).size, 0)
      })
    })

    void describe('resync', () => {
      void it('creates, updates, deactivates and removes users from an export, ' +
        'and a second run changes nothing', async () => {
        const tenantId = `org-${crypto.randomUUID()}`
        await withTenant(t.ctx.db, { tenantId }, async trx => {
          for (const [userId, profile, sequence] of [
            ['kept', { email: 'old@x.test', first_name: 'Old' }, 3],
            ['lost', { email: 'lost@x.test' }, 1],
            ['newer', { email: 'newer@x.test' }, 9]
          ] as const) {
            await applyUserChange(trx, {
              tenantId,
              userId,
              profile,
              state: 'active',
              sequence,
              actorId: null,
              source: 'user.human.added'
            })
          }
        })
        const token = await newTenant(t, tenantId).user('lost')
        assert.equal((await t.as(token, { method: 'GET', url: '/api/v1/auth/me' })).statusCode, 200)

        const users = parseExport([
          { userId: 'kept', resourceOwner: tenantId, state: 'active', email: 'new@x.test', sequence: 5 },
          { userId: 'fresh', resourceOwner: tenantId, state: 'active', email: 'fresh@x.test', displayName: 'Fresh' },
          { userId: 'locked', resourceOwner: tenantId, state: 'USER_STATE_LOCKED', email: 'locked@x.test' },
          { userId: 'newer', resourceOwner: tenantId, state: 'inactive', sequence: 8 }
        ])
        const dry = await resyncUsers(t.ctx.db, users, { removeMissing: true, dryRun: true })
        assert.deepEqual(dry, { changed: 3, unchanged: 0, stale: 1, ignored: 0, removedMissing: 1, dryRun: true })
        assert.equal(await userRow(t, tenantId, 'fresh'), undefined)

        const report = await resyncUsers(t.ctx.db, users, { removeMissing: true })
        assert.deepEqual(report, { changed: 3, unchanged: 0, stale: 1, ignored: 0, removedMissing: 1, dryRun: false })
        const kept = await userRow(t, tenantId, 'kept')
        assert.deepEqual(
          [kept?.email, kept?.first_name, kept?.state, kept?.idp_sequence],
          ['new@x.test', 'Old', 'active', 5]
        )
        assert.equal((await userRow(t, tenantId, 'fresh'))?.display_name, 'Fresh')
        assert.equal((await userRow(t, tenantId, 'locked'))?.state, 'inactive')
        assert.equal((await userRow(t, tenantId, 'newer'))?.state, 'active')
        assert.equal((await userRow(t, tenantId, 'lost'))?.state, 'removed')
        assert.deepEqual((await topics(t, tenantId)).slice(3), [
          'kept:user.changed',
          'fresh:user.added',
          'locked:user.deactivated',
          'lost:user.removed'
        ])

        const again = await resyncUsers(
          t.ctx.db,
          parseExport([
            { userId: 'kept', resourceOwner: tenantId, state: 'active', email: 'new@x.test' },
            { userId: 'fresh', resourceOwner: tenantId, state: 'active', email: 'fresh@x.test', displayName: 'Fresh' },
            { userId: 'lost', resourceOwner: tenantId, state: 'deleted' }
          ])
        )
        assert.deepEqual(again, { changed: 0, unchanged: 2, stale: 0, ignored: 1, removedMissing: 0, dryRun: false })
        assert.equal((await topics(t, tenantId)).length, 7)
      })
    })
  })
}
