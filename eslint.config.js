import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'
import citus from './eslint-rules/index.js'

export default [
  ...neostandard({ ts: true, ignores: ['node_modules', 'data', 'coverage', '.bench', 'dist'] }),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // node:test's describe/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{
          from: 'package',
          package: 'node:test',
          name: ['describe', 'it', 'test', 'before', 'after', 'beforeEach', 'afterEach', 'suite']
        }]
      }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A TypeBox schema and its static type share one name (architecture: "value and type together").
      '@typescript-eslint/no-redeclare': 'off',
      // Wire and database fields are snake_case end to end.
      camelcase: ['error', { properties: 'never', ignoreDestructuring: true, ignoreImports: true }],
      'no-void': ['error', { allowAsStatement: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      curly: ['error', 'multi-line']
    }
  },
  {
    // One line width for every file, strings, templates and SQL included (#36): a long string is split into
    // concatenations at word boundaries; SQL breaks its line before a clause, which changes none of its meaning.
    rules: { '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true }] }
  },
  {
    // SQL lives in repositories (docs/architecture.md): a module's other files call repository functions.
    // Tests and their fixtures may write rows directly; the platform (src/platform) holds shared SQL helpers.
    files: ['src/modules/**/*.ts'],
    ignores: ['**/*.repository.ts', '**/*.test.ts', '**/*.fixtures.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{
          name: 'kysely',
          importNames: ['sql', 'CompiledQuery'],
          message: 'SQL belongs in a *.repository.ts file of the module (docs/architecture.md).'
        }]
      }],
      'no-restricted-syntax': ['error', {
        selector: 'CallExpression[callee.property.name=/^(selectFrom|selectNoFrom|insertInto|updateTable|deleteFrom|' +
          'mergeInto|replaceInto|with|withRecursive|executeQuery)$/]',
        message: 'SQL belongs in a *.repository.ts file of the module (docs/architecture.md).'
      }]
    }
  },
  {
    // Statement shapes a Citus cluster refuses (docs/architecture.md, "Statements Citus accepts").
    files: ['src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.fixtures.ts'],
    plugins: { citus },
    rules: { 'citus/statement-shapes': 'error' }
  },
  {
    // A module's public face is its index.ts; the platform imports no module (docs/architecture.md, "Modules and
    // their public faces").
    files: ['src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.fixtures.ts'],
    plugins: { modules: citus },
    rules: { 'modules/index-only': 'error' }
  }
]
