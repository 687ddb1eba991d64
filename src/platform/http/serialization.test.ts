import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Type } from '@sinclair/typebox'
import { forSerialization, serializerCompiler } from './serialization.ts'
import { Nullable, StringEnum, Timestamp } from './schema.ts'

const Row = Type.Object({
  name: Nullable(Type.String()),
  count: Nullable(Type.Integer()),
  ratio: Nullable(Type.Number()),
  at: Nullable(Timestamp()),
  state: Nullable(StringEnum(['a', 'b'] as const)),
  meta: Nullable(Type.Object({}, { additionalProperties: true })),
  tags: Nullable(Type.Array(Type.String())),
  either: Type.Union([Type.String(), Type.Integer()])
})

const serialize = (schema: unknown, data: unknown): string =>
  serializerCompiler({ schema, method: 'GET', url: '/', httpStatus: '200' } as unknown as Parameters<
    typeof serializerCompiler
  >[0])(data)

void describe('response serialization', () => {
  it('writes nullable fields as values or null, like JSON.stringify', () => {
    const full = {
      name: 'Ada',
      count: 3,
      ratio: 0.5,
      at: new Date('2026-01-02T03:04:05.000Z'),
      state: 'b',
      meta: { k: [1] },
      tags: ['x'],
      either: 7
    }
    assert.deepEqual(JSON.parse(serialize(Row, full)), { ...full, at: '2026-01-02T03:04:05.000Z' })
    const empty = { name: null, count: null, ratio: null, at: null, state: null, meta: null, tags: null, either: 'y' }
    assert.deepEqual(JSON.parse(serialize(Row, empty)), empty)
  })

  it('serializes a simple nullable as a type list, and leaves other unions as they are', () => {
    const s = forSerialization(Row) as { properties: Record<string, Record<string, unknown>> }
    assert.deepEqual(s.properties.name, { type: ['string', 'null'] })
    assert.deepEqual(s.properties.at, { type: ['string', 'null'], format: 'date-time' })
    assert.deepEqual(s.properties.state, { type: ['string', 'null'], enum: ['a', 'b', null] })
    assert.ok(Array.isArray(s.properties.either?.anyOf))
    // the declared schema is untouched (validation and OpenAPI use it)
    assert.ok(Array.isArray((Row.properties.name as { anyOf?: unknown }).anyOf))
  })
})
