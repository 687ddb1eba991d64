import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../test/helpers/build-app.ts'
import { withTenant } from './db/tenant.ts'
import { EMIT_ROWS_PER_STATEMENT, emit, emitMany, type DomainEvent } from './outbox.ts'

for (const kind of databases()) {
  void describe(`${kind}: outbox`, () => {
    const t = useTestApp(kind)

    const event = (tenantId: string, n: number): DomainEvent =>
      ({ tenantId, topic: 'test.happened', aggregateType: 'test', aggregateId: n, actorId: 'alice', payload: { n, text: `"quoted" ${n}` }, depth: n % 3 })

    async function rows (tenantId: string) {
      return await withTenant(t.ctx.db, { tenantId }, async trx => await trx.selectFrom('outbox')
        .select(['topic', 'aggregate_type', 'aggregate_id', 'actor_id', 'payload', 'depth'])
        .where('tenant_id', '=', tenantId).orderBy('id').execute())
    }

    void it('emitMany writes one row per event in the order given, as many emits would, beyond one statement\'s parameters', async () => {
      const tenant = newTenant(t)
      const n = EMIT_ROWS_PER_STATEMENT + 5
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        await emit(trx, event(tenant.id, -1))
        await emitMany(trx, [])
        await emitMany(trx, Array.from({ length: n }, (_, i) => event(tenant.id, i)))
        await emit(trx, event(tenant.id, n))
      })
      const written = await rows(tenant.id)
      assert.equal(written.length, n + 2)
      assert.deepEqual(written.map(r => r.payload.n), Array.from({ length: n + 2 }, (_, i) => i - 1))
      assert.deepEqual(written[1], { topic: 'test.happened', aggregate_type: 'test', aggregate_id: '0', actor_id: 'alice', payload: { n: 0, text: '"quoted" 0' }, depth: 0 })
      assert.deepEqual(written.slice(1, 4).map(r => r.depth), [0, 1, 2])
    })

    void it('emitMany writes nothing when the transaction rolls back', async () => {
      const tenant = newTenant(t)
      await assert.rejects(withTenant(t.ctx.db, { tenantId: tenant.id }, async (trx) => {
        await emitMany(trx, [event(tenant.id, 1), event(tenant.id, 2)])
        throw new Error('request failed')
      }), /request failed/)
      assert.deepEqual(await rows(tenant.id), [])
    })
  })
}
