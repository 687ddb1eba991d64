/**
 * The authorization policy is one table (src/modules/policy/policy.ts), shown as is in
 * docs/authorization.md, and every route that needs a token names the row it enforces (`x-policy`),
 * whose tenant permission is the one the route checks (`x-permission`).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { policyMarkdown, policyOf, POLICY, RESOURCE_KINDS, type ResourceKind } from '../src/modules/policy/policy.ts'
import { disclosureMarkdown, TOPIC_AUDIENCE } from '../src/modules/disclosure/disclosure.ts'
import { DOMAIN_TRIGGERS } from '../src/modules/automation/automation.catalogue.ts'
import { useTestApp } from './helpers/build-app.ts'
import { apiRoutes } from './helpers/routes.ts'

describe('authorization policy', () => {
  it('is the table docs/authorization.md shows', () => {
    const doc = fs.readFileSync(new URL('../docs/authorization.md', import.meta.url), 'utf8')
    const shown = doc.split('<!-- policy-table:start -->')[1]?.split('<!-- policy-table:end -->')[0]?.trim()
    assert.equal(shown, policyMarkdown(), 'regenerate the table of docs/authorization.md from policyMarkdown()')
  })

  it('says who is told of each topic of the trigger catalogue, as docs/authorization.md shows', () => {
    const doc = fs.readFileSync(new URL('../docs/authorization.md', import.meta.url), 'utf8')
    const shown = doc.split('<!-- disclosure-table:start -->')[1]?.split('<!-- disclosure-table:end -->')[0]?.trim()
    assert.equal(shown, disclosureMarkdown(), 'regenerate the table of docs/authorization.md from disclosureMarkdown()')
    const missing = DOMAIN_TRIGGERS.map(t => t.type).filter(topic => TOPIC_AUDIENCE[topic] === undefined)
    assert.deepEqual(missing, [],
      'every topic of the catalogue needs a row in TOPIC_AUDIENCE (disclosure/disclosure.ts)')
    const unknown = Object.keys(TOPIC_AUDIENCE).filter(topic => !DOMAIN_TRIGGERS.some(t => t.type === topic))
    assert.deepEqual(unknown, [], 'a row of TOPIC_AUDIENCE names no topic of the catalogue')
  })

  it('refuses an action the table does not name, so a typo cannot allow anything', () => {
    assert.throws(() => policyOf('event', 'edt' as never), /no policy for event:edt/)
    for (const kind of RESOURCE_KINDS) assert.ok(Object.keys(POLICY[kind]).length > 0, `${kind} has no row`)
  })

  describe('routes', () => {
    const t = useTestApp('pglite')
    it('every route that needs a token names its policy row, and checks that row\'s tenant permission', async () => {
      const { routes } = await apiRoutes(t.app)
      const problems: string[] = []
      for (const r of routes.filter(x => x.auth === 'required' && x.name !== 'GET /api/v1/auth/me')) {
        const named = r.operation['x-policy']
        if (named === undefined) { problems.push(`${r.name} names no policy row (use requirePolicy)`); continue }
        const [kind, action] = named.split(':') as [ResourceKind, string]
        const row = (POLICY[kind] as Record<string, { tenant: string } | undefined> | undefined)?.[action]
        if (row === undefined) problems.push(`${r.name}: unknown policy row ${named}`)
        else if (row.tenant !== r.permission) {
          problems.push(`${r.name}: ${named} needs ${row.tenant}, the route checks ${String(r.permission)}`)
        }
      }
      assert.deepEqual(problems, [])
    })
  })
})
