import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RowJsonCache } from './row-json-cache.ts'

const json = (text: string) => Buffer.from(text)

void describe('row JSON cache', () => {
  void it('answers only for the version cached', () => {
    const cache = new RowJsonCache(1000)
    cache.set('t1:1', '100', json('{"id":1'))
    assert.equal(cache.get('t1:1', '100')?.toString(), '{"id":1')
    assert.equal(cache.get('t1:1', '101'), undefined, 'a newer row version')
    assert.equal(cache.get('t2:1', '100'), undefined, 'the same id in another tenant')
    cache.set('t1:1', '101', json('{"id":1,"x":2'))
    assert.equal(cache.get('t1:1', '100'), undefined)
    assert.equal(cache.get('t1:1', '101')?.toString(), '{"id":1,"x":2')
    assert.equal(cache.size, 1)
  })

  void it('keeps at most its bytes, evicting the least recently used', () => {
    const cache = new RowJsonCache(30)
    cache.set('a', '1', json('x'.repeat(10)))
    cache.set('b', '1', json('x'.repeat(10)))
    cache.set('c', '1', json('x'.repeat(10)))
    assert.ok(cache.get('a', '1') !== undefined) // a is now the most recently used
    cache.set('d', '1', json('x'.repeat(10)))
    assert.equal(cache.get('b', '1'), undefined, 'the least recently used went')
    assert.deepEqual(['a', 'c', 'd'].map(k => cache.get(k, '1')?.length), [10, 10, 10])
    cache.set('e', '1', json('x'.repeat(31)))
    assert.equal(cache.get('e', '1'), undefined, 'larger than the whole cache: not kept')
    assert.equal(cache.size, 3)
    cache.set('a', '2', json('x'.repeat(25)))
    assert.deepEqual(['a', 'c', 'd'].map(k => cache.get(k, k === 'a' ? '2' : '1')?.length), [25, undefined, undefined])
  })
})
