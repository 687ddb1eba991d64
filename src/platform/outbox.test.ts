import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { databases, newTenant, useTestApp } from '../../test/helpers/build-app.ts'
import { withTenant } from './db/tenant.ts'
import { emit, emitMany, type DomainEvent } from './outbox.ts'

for (const kind of databases()) {
  void describe(`${kind}: outbox`, () => {
    const t = useTestApp(kind)

    /** Text that array literals quote or escape: quotes, backslashes, braces, commas, NULL, blanks, non-ASCII. */
    const AWKWARD = [
      '"quoted"',
      'back\\slash \\"',
      '{braces}, commas',
      'NULL',
      '',
      ' padded ',
      'naïve ☃ 𝄞',
      'line\nbreak'
    ]
    const event = (tenantId: string, n: number): DomainEvent => ({
      tenantId,
      topic: `test.${AWKWARD[n % AWKWARD.length] ?? ''}`,
      aggregateType: 'test',
      aggregateId: n,
      actorId: n % 5 === 0 ? null : AWKWARD[n % AWKWARD.length] ?? null,
      payload: { n, text: AWKWARD[n % AWKWARD.length], nested: { list: [1, null, 'NULL'], empty: {} } },
      depth: n % 3
    })

    async function rows (tenantId: string) {
      return await withTenant(t.ctx.db, { tenantId }, async trx => await trx.selectFrom('outbox')
        .select(['topic', 'aggregate_type', 'aggregate_id', 'actor_id', 'payload', 'depth'])
        .where('tenant_id', '=', tenantId).orderBy('id').execute())
    }

    void it('emitMany writes one row per event in the order given, as many emits would, ' +
      'beyond the bind parameters of one VALUES statement', async () => {
      const tenant = newTenant(t)
      // 7 columns: a VALUES list of 10 000 rows would need 70 000 bind parameters (PostgreSQL takes 65 535)
      const n = 10_000
      const many = Array.from({ length: n }, (_, i) => event(tenant.id, i))
      await withTenant(t.ctx.db, { tenantId: tenant.id }, async trx => {
        await emit(trx, event(tenant.id, -1))
        await emitMany(trx, [])
        await emitMany(trx, many)
        await emit(trx, event(tenant.id, n))
      })
      const written = await rows(tenant.id)
      assert.equal(written.length, n + 2)
      assert.deepEqual(
        written.map(r => r.payload.n),
        Array.from({ length: n + 2 }, (_, i) => i - 1)
      )
      const expected = (e: DomainEvent) => ({
        topic: e.topic,
        aggregate_type: e.aggregateType,
        aggregate_id: String(e.aggregateId),
        actor_id: e.actorId,
        payload: e.payload,
        depth: e.depth
      })
      assert.deepEqual(written.slice(1, 41), many.slice(0, 40).map(expected))
      assert.deepEqual(written.at(-2), expected(many.at(-1) as DomainEvent))
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
