import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { allowedMoves, decideTransition, type TransitionVerdict } from './events.state.ts'
import { findTemplate, latestTemplate, templateAllows, TEMPLATE_IDS, TEMPLATE_REGISTRY } from './events.templates.ts'

const delivery2 = findTemplate('delivery', 2)?.state_machine ?? null
const delivery1 = findTemplate('delivery', 1)?.state_machine ?? null
const meeting = latestTemplate('meeting')?.state_machine ?? null

void describe('event state machine', () => {
  const cases: Array<{
    name: string
    machine: typeof delivery2
    from: string | null
    to: string
    payload?: Record<string, unknown>
    want: TransitionVerdict['ok'] | 'not_allowed' | 'guard_failed' | 'no_state_machine'
    allowed?: string[]
    missing?: string[]
  }> = [
    { name: 'pending to in_transit', machine: delivery2, from: 'pending', to: 'in_transit', want: true },
    { name: 'null state counts as the initial one', machine: delivery2, from: null, to: 'in_transit', want: true },
    {
      name: 'pending cannot jump to delivered',
      machine: delivery2,
      from: 'pending',
      to: 'delivered',
      want: 'not_allowed',
      allowed: ['in_transit', 'cancelled']
    },
    {
      name: 'delivered needs proof_of_delivery',
      machine: delivery2,
      from: 'in_transit',
      to: 'delivered',
      payload: {},
      want: 'guard_failed',
      missing: ['proof_of_delivery']
    },
    {
      name: 'an empty proof is no proof',
      machine: delivery2,
      from: 'in_transit',
      to: 'delivered',
      payload: { proof_of_delivery: '  ' },
      want: 'guard_failed',
      missing: ['proof_of_delivery']
    },
    {
      name: 'delivered with proof',
      machine: delivery2,
      from: 'in_transit',
      to: 'delivered',
      payload: { proof_of_delivery: 'sig-123' },
      want: true
    },
    {
      name: 'proof may be an object',
      machine: delivery2,
      from: 'in_transit',
      to: 'delivered',
      payload: { proof_of_delivery: { photo: 'k' } },
      want: true
    },
    {
      name: 'failed needs a reason',
      machine: delivery2,
      from: 'in_transit',
      to: 'failed',
      want: 'guard_failed',
      missing: ['failure_reason']
    },
    {
      name: 'failed with a reason',
      machine: delivery2,
      from: 'in_transit',
      to: 'failed',
      payload: { failure_reason: 'nobody home' },
      want: true
    },
    { name: 'failed can be retried', machine: delivery2, from: 'failed', to: 'in_transit', want: true },
    { name: 'failed can be returned', machine: delivery2, from: 'failed', to: 'returned', want: true },
    {
      name: 'delivered is final',
      machine: delivery2,
      from: 'delivered',
      to: 'in_transit',
      want: 'not_allowed',
      allowed: []
    },
    {
      name: 'version 1 has no returned state',
      machine: delivery1,
      from: 'failed',
      to: 'returned',
      want: 'not_allowed',
      allowed: ['in_transit']
    },
    {
      name: 'unknown target state',
      machine: delivery2,
      from: 'pending',
      to: 'teleported',
      want: 'not_allowed',
      allowed: ['in_transit', 'cancelled']
    },
    { name: 'meeting starts', machine: meeting, from: 'scheduled', to: 'in_progress', want: true },
    {
      name: 'meeting completes only once started',
      machine: meeting,
      from: 'scheduled',
      to: 'completed',
      want: 'not_allowed',
      allowed: ['in_progress', 'cancelled']
    },
    { name: 'no machine', machine: null, from: null, to: 'anything', want: 'no_state_machine' }
  ]
  for (const c of cases) {
    void it(c.name, () => {
      const v = decideTransition(c.machine, c.from, c.to, c.payload ?? {})
      if (c.want === true) {
        assert.equal(v.ok, true, JSON.stringify(v))
        return
      }
      assert.equal(v.ok, false)
      if (v.ok) return
      assert.equal(v.reason, c.want)
      if (v.reason === 'not_allowed') assert.deepEqual(v.allowed, c.allowed)
      if (v.reason === 'guard_failed') assert.deepEqual(v.missing, c.missing)
    })
  }

  void it('lists allowed moves from a state', () => {
    assert.ok(delivery2 !== null)
    assert.deepEqual(allowedMoves(delivery2, 'in_transit'), ['delivered', 'failed', 'returned'])
    assert.deepEqual(allowedMoves(delivery2, null), ['in_transit', 'cancelled'])
  })
})

void describe('template registry', () => {
  void it('has the templates, versions and a consistent machine each', () => {
    for (const id of ['generic', 'announcement', 'meeting', 'delivery']) assert.ok(TEMPLATE_IDS.includes(id), id)
    assert.equal(latestTemplate('delivery')?.version, 2)
    assert.equal(latestTemplate('generic')?.state_machine, null)
    for (const t of TEMPLATE_REGISTRY) {
      const m = t.state_machine
      if (m === null) continue
      assert.ok(m.states.includes(m.initial), `${t.id} v${t.version} initial`)
      for (const tr of m.transitions) {
        assert.ok(m.states.includes(tr.from) && m.states.includes(tr.to), `${t.id} v${t.version} ${tr.from}->${tr.to}`)
        assert.ok(!m.final.includes(tr.from), `${t.id} v${t.version}: final state ${tr.from} has a way out`)
      }
    }
  })

  const allows: Array<[string, number, 'attachment' | 'participant_role' | 'activity', string, boolean]> = [
    ['delivery', 2, 'attachment', 'proof_of_delivery', true],
    ['generic', 1, 'attachment', 'proof_of_delivery', false],
    ['delivery', 1, 'participant_role', 'courier', true],
    ['delivery', 1, 'participant_role', 'vendor', false],
    ['delivery', 2, 'participant_role', 'vendor', true],
    ['announcement', 1, 'activity', 'note', true],
    ['announcement', 1, 'activity', 'acknowledged', true],
    ['generic', 1, 'activity', 'location_update', false],
    ['generic', 0, 'attachment', 'image', true],
    ['nonexistent', 1, 'attachment', 'image', true]
  ]
  for (const [id, version, what, kind, want] of allows) {
    void it(`${id} v${version} ${want ? 'allows' : 'refuses'} ${what} ${kind}`, () => {
      assert.equal(templateAllows(id, version, what, kind), want)
    })
  }
})
