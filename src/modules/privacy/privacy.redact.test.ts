/** The scrubbing rules of an erasure (privacy.redact.ts), as tables of cases. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ERASED, PersonalValues, scrubJson, scrubJsonText, stringsOf } from './privacy.redact.ts'

const person = new PersonalValues(['Ann.Lee@Example.org', 'Ann', 'Leeward', 'Al', '+49 30 1234567', null, 42])

void describe('erasure scrubbing', () => {
  void it('replaces each value in text, any case, keeping the other words; ignores values under 3 characters', () => {
    const cases: Array<[string, string]> = [
      ['Mail ann.lee@example.ORG now', `Mail ${ERASED} now`],
      ['ANN LEEWARD registered', `${ERASED} ${ERASED} registered`],
      ['Call +49 30 1234567.', `Call ${ERASED}.`],
      ['Al is here', 'Al is here'],
      ['nothing personal', 'nothing personal']
    ]
    for (const [input, output] of cases) assert.equal(person.scrubText(input), output, input)
    assert.equal(person.holds('x ANN.LEE@example.org'), true)
  })

  void it('nulls personal keys at any depth and scrubs other strings; ids and numbers stay', () => {
    const payload = {
      contact_id: '0b9f2c1e-7d4a-4c55-9a7e-3f1c2d4b5a69',
      email: 'someone.else@example.org',
      data: { first_name: 'Bob', answers: { diet: 'veg' }, note: null, title: 'Dinner with Ann' },
      list: [{ phone_primary: '+1 555 0100' }, 'Leeward was here', 7]
    }
    assert.deepEqual(scrubJson(payload, person), {
      contact_id: '0b9f2c1e-7d4a-4c55-9a7e-3f1c2d4b5a69',
      email: null,
      data: { first_name: null, answers: null, note: null, title: `Dinner with ${ERASED}` },
      list: [{ phone_primary: null }, `${ERASED} was here`, 7]
    })
    assert.equal(scrubJsonText('{"items":[{"email":"x@y.z","venue":"Ann Arbor"}]}', person),
      `{"items":[{"email":null,"venue":"${ERASED} Arbor"}]}`)
    assert.equal(scrubJsonText('not json: Ann', person), `not json: ${ERASED}`)
    assert.deepEqual(stringsOf({ a: 'x', b: ['y', { c: 'z' }], d: 3, e: true }), ['x', 'y', 'z'])
  })
})
