/**
 * The modules/index-only lint rule (eslint-rules/modules-index-only.js; docs/architecture.md, "Modules and their
 * public faces"): another module's files are reached only through its index.ts, the platform imports no module but
 * the table types `database.ts` assembles, and tests and fixtures may reach anywhere. The repository's
 * eslint.config.js applies it to src/.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ESLint, RuleTester, type Rule } from 'eslint'
import tseslint from 'typescript-eslint'

// The rule is plain JavaScript without type declarations: imported by a path TypeScript does not resolve.
const pluginPath = '../eslint-rules/index.js'
const plugin = (await import(pluginPath) as { default: { rules: Record<string, Rule.RuleModule> } }).default
const rule = plugin.rules['index-only']
assert.ok(rule !== undefined)

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const at = (file: string): string => path.join(root, file)
const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } })

void describe('modules/index-only', () => {
  void it('accepts imports of another module through its index, within a module, and from tests and fixtures', () => {
    tester.run('modules/index-only', rule, {
      valid: [
        {
          filename: at('src/modules/attendees/attendees.routes.ts'),
          code: "import { lockEventForWrite } from '../events/index.ts'"
        },
        {
          filename: at('src/modules/attendees/attendees.routes.ts'),
          code: "import { BULK_MAX } from './attendees.schemas.ts'"
        },
        {
          filename: at('src/modules/attendees/attendees.test.ts'),
          code: "import { insertSpace } from '../events/events.fixtures.ts'"
        },
        {
          filename: at('src/modules/series/series.fixtures.ts'),
          code: "import { createEvent } from '../events/events.fixtures.ts'"
        },
        { filename: at('src/app.ts'), code: "import { attendeesModule } from './modules/attendees/index.ts'" },
        {
          filename: at('src/platform/db/database.ts'),
          code: "import type { EventsTables } from '../../modules/events/events.table.ts'"
        },
        { filename: at('src/platform/http/errors.ts'), code: "import { x } from './schema.ts'" }
      ],
      invalid: []
    })
  })

  void it("refuses another module's file, a value import of a table file, and any module from the platform", () => {
    tester.run('modules/index-only', rule, {
      valid: [],
      invalid: [
        {
          filename: at('src/modules/attendees/attendees.routes.ts'),
          code: "import { lockEventForWrite } from '../events/events.access.repository.ts'",
          errors: [{ messageId: 'notIndex' }]
        },
        {
          filename: at('src/modules/webhooks/webhooks.routes.ts'),
          code: "export { writerOf } from '../automation/automation.run-as.ts'",
          errors: [{ messageId: 'notIndex' }]
        },
        {
          filename: at('src/workers.ts'),
          code: "import { startSeriesWindows } from './modules/series/series.service.ts'",
          errors: [{ messageId: 'notIndex' }]
        },
        {
          filename: at('src/platform/retention.ts'),
          code: "import { compactListCounts } from '../modules/events/index.ts'",
          errors: [{ messageId: 'platform' }]
        },
        {
          filename: at('src/platform/db/database.ts'),
          code: "import { EVENT_COLUMNS } from '../../modules/events/events.table.ts'",
          errors: [{ messageId: 'platform' }]
        }
      ]
    })
  })

  void it("is applied by the repository's eslint.config.js to src/, not to tests", async () => {
    const eslint = new ESLint({ cwd: root })
    const level = async (file: string): Promise<unknown> => {
      const config = await eslint.calculateConfigForFile(at(file)) as { rules?: Record<string, unknown> }
      const entry = config.rules?.['modules/index-only']
      return Array.isArray(entry) ? entry[0] : entry
    }
    for (const file of ['src/modules/attendees/attendees.routes.ts', 'src/app.ts', 'src/platform/retention.ts']) {
      assert.ok([2, 'error'].includes(await level(file) as never), file)
    }
    assert.equal(await level('src/modules/attendees/attendees.test.ts'), undefined)
    assert.equal(await level('src/modules/attendees/attendees.fixtures.ts'), undefined)
  })
})
