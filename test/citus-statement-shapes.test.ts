/**
 * The citus/statement-shapes lint rule (eslint-rules/citus-statement-shapes.js; docs/architecture.md,
 * "Statements Citus accepts") finds statement shapes a Citus cluster refuses before a cluster run does:
 * a function that is not IMMUTABLE inside CASE/COALESCE or ON CONFLICT DO UPDATE SET, INSERT … SELECT,
 * and row locks on a statement that never names tenant_id. The repository's eslint.config.js applies it.
 */
/* eslint-disable no-template-curly-in-string -- the cases are source text whose own templates hold ${…} */
import assert from 'node:assert/strict'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ESLint, RuleTester, type Rule } from 'eslint'
import tseslint from 'typescript-eslint'

// The rule is plain JavaScript without type declarations: imported by a path TypeScript does not resolve.
const pluginPath = '../eslint-rules/index.js'
const plugin = (await import(pluginPath) as { default: { rules: Record<string, Rule.RuleModule> } }).default
const rule = plugin.rules['statement-shapes']
assert.ok(rule !== undefined)

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } })
const valid = (...code: string[]) => tester.run('citus/statement-shapes', rule, { valid: code, invalid: [] })
const invalid = (code: string, ...messageIds: string[]) => tester.run('citus/statement-shapes', rule, {
  valid: [],
  invalid: [{ code, errors: messageIds.map(messageId => ({ messageId })) }]
})

void describe('citus/statement-shapes', () => {
  void it('accepts the time passed as a parameter, taken from excluded, or outside any CASE/COALESCE', () => {
    valid(
      'sql`update monitors set failing_since = coalesce(failing_since, ${now}) where tenant_id = ${tenantId}`',
      `sql<{ n: number }>\`insert into marks (tenant_id, id, updated_at) values (\${t}, \${id}, \${at})
        on conflict (tenant_id, id) do update set updated_at = excluded.updated_at\``,
      'sql`update contacts set updated_at = now() where tenant_id = ${tenantId} and id = ${id}`',
      `trx.insertInto('users').values({ updated_at: sql\`now()\` })
        .onConflict(oc => oc.column('id').doUpdateSet(eb => ({ updated_at: eb.ref('excluded.updated_at') })))`
    )
  })

  void it('accepts INSERT … VALUES', () => {
    valid(
      "client.query('insert into schema_migrations (name, checksum) values ($1, $2)', [name, checksum])",
      'sql`insert into ${table} (tenant_id, id) values ${rows} returning id`',
      "trx.insertInto('outbox').values(chunk).execute()"
    )
  })

  void it('accepts a row lock on a statement that filters by tenant_id', () => {
    valid(
      'sql`select id from contacts where tenant_id = ${tenantId} and id = ${id} for update`',
      "trx.selectFrom('contacts').where('tenant_id', '=', tenantId).where('id', '=', id).forUpdate().execute()",
      "trx.selectFrom('spaces').where(sql`tenant_id = ${tenantId}`).$if(lock, qb => qb.forUpdate())",
      "selectRows(trx, 'events', { tenant_id: tenantId, id }).forNoKeyUpdate()"
    )
  })

  void it('ignores words in SQL comments and quoted literals', () => {
    valid(
      `sql\`update t set state = case when \${a} then 'now()' /* not now() */ end -- now() in a CASE
        where tenant_id = \${tenantId}\``,
      "runner.query(\"select 'insert into t select 1 for update' as note\")"
    )
  })

  void it('flags a now() planted inside a CASE of a repository statement', () => {
    tester.run('citus/statement-shapes', rule, {
      valid: [],
      invalid: [{
        code: `const done = await sql\`update contacts
  set seen_at = case when \${seen} then now() else seen_at end
  where tenant_id = \${tenantId}\`.execute(trx)`,
        errors: [{ messageId: 'volatileInCase', data: { fn: 'now()', construct: 'CASE' }, line: 2, column: 40 }]
      }]
    })
  })

  void it('flags a not-immutable function inside coalesce, nullif, greatest or least', () => {
    invalid(
      "trx.updateTable('monitors').set({ failing_since: sql`coalesce(failing_since, now())` }).where('id', '=', id)",
      'volatileInCase'
    )
    invalid("sql.raw('select greatest(a, clock_timestamp()), nullif(b, current_timestamp)')",
      'volatileInCase', 'volatileInCase')
  })

  void it('flags a CASE built in a nested sql fragment on its own', () => {
    invalid('sql`update t set x = ${sql`case when ${x} then random() end`} where tenant_id = ${t}`', 'volatileInCase')
  })

  void it('flags now() in ON CONFLICT … DO UPDATE SET, in SQL text and in doUpdateSet', () => {
    invalid(
      'sql`insert into marks (tenant_id, at) values (${t}, ${at}) on conflict (tenant_id) do update set at = now()`',
      'volatileInConflict'
    )
    invalid("trx.insertInto('t').values(row).onConflict(oc => oc.column('id').doUpdateSet({ at: sql`now()` }))",
      'volatileInConflict')
  })

  void it('flags INSERT … SELECT in SQL text and as a Kysely insertInto(…).expression(…)', () => {
    invalid("client.query('insert into t (a) select a from u')", 'insertSelect')
    invalid('sql`with moved as (select * from u) insert into t select * from moved`', 'insertSelect')
    invalid("trx.insertInto('t').columns(['a']).expression(eb => eb.selectFrom('u').select('a')).execute()",
      'insertSelect')
  })

  void it('flags a row lock whose statement or chain never names tenant_id', () => {
    invalid('sql`select id from jobs where id = ${id} for update skip locked`', 'lockWithoutTenant')
    invalid("await trx.selectFrom('x').where('id', '=', 1).forUpdate().executeTakeFirst()", 'lockWithoutTenant')
    invalid("trx.selectFrom('x').where('id', '=', 1).$if(lock, qb => qb.forShare())", 'lockWithoutTenant')
  })

  void it("is applied by the repository's eslint.config.js to repository files", async () => {
    const filePath = 'src/modules/contacts/planted.repository.ts'
    // The file does not exist, so the type-aware parser takes it into its default project.
    const eslint = new ESLint({
      cwd: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'),
      overrideConfig: {
        files: [filePath],
        languageOptions: { parserOptions: { projectService: { allowDefaultProject: [filePath] } } }
      }
    })
    const code = [
      "import { sql } from 'kysely'",
      '',
      'export const planted = sql`update contacts set seen_at = case when seen then now() end where tenant_id = ${1}`',
      ''
    ].join('\n')
    const [result] = await eslint.lintText(code, { filePath })
    assert.ok(result !== undefined)
    assert.deepEqual(result.messages.filter(m => m.fatal === true), [])
    const found = result.messages.filter(m => m.ruleId === 'citus/statement-shapes')
    assert.deepEqual(found.map(m => [m.line, m.messageId]), [[3, 'volatileInCase']])
  })
})
