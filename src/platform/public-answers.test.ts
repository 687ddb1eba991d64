/**
 * Answers kept for anonymous callers (public-answers.ts): kept for their time, dropped by a write of their tenant, and
 * never kept when their tenant was written to while they were read (an answer of the data before the write).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { KeptPublicAnswers } from './public-answers.ts'
import { TenantWrites } from './tenant-writes.ts'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

void describe('answers kept for anonymous callers', () => {
  void it('keeps an answer for its time; a write of its tenant drops it, of another tenant does not', async () => {
    const writes = new TenantWrites()
    const kept = new KeptPublicAnswers<string>(40, writes)
    kept.set('a', 't1', 'page of t1', kept.mark())
    kept.set('b', 't2', 'page of t2', kept.mark())
    assert.equal(kept.get('a'), 'page of t1')
    writes.notify('t2')
    assert.equal(kept.get('a'), 'page of t1')
    assert.equal(kept.get('b'), undefined)
    await sleep(60)
    assert.equal(kept.get('a'), undefined, 'past its time')
    kept.set('a', 't1', 'again', kept.mark())
    writes.notify(null)
    assert.equal(kept.get('a'), undefined, 'a write naming no tenant drops every tenant\'s')
  })

  void it('does not keep an answer read across a write of its tenant', () => {
    const writes = new TenantWrites()
    const kept = new KeptPublicAnswers<string>(10_000, writes)
    const before = kept.mark()
    writes.notify('t1') // committed while the answer below was being read
    kept.set('a', 't1', 'old page of t1', before)
    assert.equal(kept.get('a'), undefined)
    // another tenant's write meanwhile does not matter
    const mark = kept.mark()
    writes.notify('t2')
    kept.set('a', 't1', 'page of t1', mark)
    assert.equal(kept.get('a'), 'page of t1')
    // nor does a write before the mark
    kept.set('c', 't2', 'page of t2', kept.mark())
    assert.equal(kept.get('c'), 'page of t2')
    // a write of every tenant refuses every answer read across it
    const across = kept.mark()
    writes.notify(null)
    kept.set('d', 't3', 'old page of t3', across)
    assert.equal(kept.get('d'), undefined)
  })

  void it('keeps nothing with a time of 0, and at most `max` answers, the oldest dropped first', () => {
    const writes = new TenantWrites()
    const off = new KeptPublicAnswers<string>(0, writes)
    off.set('a', 't1', 'x', off.mark())
    assert.equal(off.get('a'), undefined)
    const two = new KeptPublicAnswers<string>(10_000, writes, 2)
    for (const key of ['a', 'b', 'c']) two.set(key, 't1', key, two.mark())
    assert.deepEqual(['a', 'b', 'c'].map(k => two.get(k)), [undefined, 'b', 'c'])
  })
})
