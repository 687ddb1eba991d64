/**
 * citus/statement-shapes: statement shapes plain PostgreSQL accepts and a Citus cluster refuses
 * (docs/architecture.md, "Statements Citus accepts"; docs/scale-out.md). Three checks:
 *
 * 1. A function that is not IMMUTABLE (now(), random(), …) lexically inside CASE … END or inside
 *    coalesce/nullif/greatest/least(…), or in the ON CONFLICT … DO UPDATE SET part of an INSERT.
 * 2. INSERT … SELECT (Citus runs many as a COPY into the shards; row-level security refuses COPY),
 *    in SQL text and as Kysely's `.insertInto(…)…expression(…)`.
 * 3. FOR UPDATE/SHARE row locks whose statement (or Kysely chain) never mentions `tenant_id`.
 *
 * SQL text is read from `sql` tagged templates (`sql`, `sql<T>`, `sql.x`), from string arguments of
 * `sql.raw(…)` and from string arguments of calls named `query`. A template's `${…}` expressions
 * become the placeholder ` $1 `; a nested `sql` fragment is checked on its own.
 */

const DOCS = 'docs/architecture.md, "Statements Citus accepts"'
const VOLATILE_CALLS = new Set([
  'now', 'clock_timestamp', 'statement_timestamp', 'transaction_timestamp', 'random', 'gen_random_uuid'
])
const VOLATILE_WORDS = new Set(['current_timestamp']) // no parentheses needed
const GUARDED_CALLS = new Set(['coalesce', 'nullif', 'greatest', 'least'])
const LOCK_CLAUSES = ['update', 'share', 'no key update', 'key share'].map((clause) => clause.split(' '))
const LOCK_METHODS = new Set(['forUpdate', 'forShare', 'forNoKeyUpdate', 'forKeyShare'])
// Parents through which a lock call still belongs to one builder chain (`.$if(lock, qb => qb.forUpdate())`).
const CHAIN_PARENTS = new Set([
  'MemberExpression', 'CallExpression', 'ArrowFunctionExpression', 'AwaitExpression', 'ChainExpression',
  'TSAsExpression', 'TSNonNullExpression', 'TSSatisfiesExpression'
])
const TENANT = /\btenant_id\b/

/** Lower-cases and blanks out comments and single-quoted literals (same length: offsets stay valid). */
function clean (text) {
  const blank = (m) => m.replace(/[^\n]/g, ' ')
  return text.toLowerCase().replace(/--[^\n]*|\/\*[\s\S]*?\*\/|'(?:[^']|'')*'/g, blank)
}

// Words (also "quoted" identifiers and $1 placeholders), parentheses, dots and semicolons.
const TOKEN = /"[^"]*"|\$\d+|[a-z_][a-z0-9_$]*|[().;]/g

/**
 * Walks the tokens of one SQL text and returns findings `{ at, messageId, data }` (`at`: offset in text).
 * `stack` holds the open constructs: `{ kind: 'case' }` until its END, `{ kind: 'paren', name }` until
 * its `)` (name: the guarded function the parenthesis belongs to, if any).
 */
function scanSql (text, { conflictSet: outerConflictSet = false, tenantElsewhere = false } = {}) {
  const tokens = [...clean(text).matchAll(TOKEN)].map((m) => ({ v: m[0], at: m.index }))
  const word = (i) => tokens[i]?.v
  const findings = []
  const stack = []
  const locks = [] // lock clauses of the current statement, reported at its end unless it names tenant_id
  let conflictSet = outerConflictSet // inside ON CONFLICT … DO UPDATE SET
  let tenant = tenantElsewhere

  const endStatement = () => {
    if (!tenant) findings.push(...locks)
    stack.length = 0
    locks.length = 0
    conflictSet = outerConflictSet
    tenant = tenantElsewhere
  }

  for (let i = 0; i < tokens.length; i++) {
    const { v, at } = tokens[i]
    const afterDot = word(i - 1) === '.'
    if (v === ';') endStatement()
    else if (v === 'tenant_id' || v === '"tenant_id"') tenant = true
    else if (v === 'case') stack.push({ kind: 'case' })
    else if (v === 'end' && stack.at(-1)?.kind === 'case') stack.pop()
    else if (v === '(') {
      const name = word(i - 1)
      stack.push({ kind: 'paren', name: GUARDED_CALLS.has(name) && word(i - 2) !== '.' ? name : undefined })
    } else if (v === ')') {
      while (stack.length > 0 && stack.pop().kind !== 'paren');
    } else if (v === 'do' && word(i + 1) === 'update' && word(i + 2) === 'set') conflictSet = true
    else if (v === 'returning') conflictSet = outerConflictSet
    else if (!afterDot && (VOLATILE_WORDS.has(v) || (VOLATILE_CALLS.has(v) && word(i + 1) === '('))) {
      const open = stack.findLast((f) => f.kind === 'case' || f.name !== undefined)
      const fn = VOLATILE_WORDS.has(v) ? v : `${v}()`
      if (open !== undefined) {
        const construct = open.kind === 'case' ? 'CASE' : `${open.name}(…)`
        findings.push({ at, messageId: 'volatileInCase', data: { fn, construct } })
      } else if (conflictSet) findings.push({ at, messageId: 'volatileInConflict', data: { fn } })
    } else if (v === 'insert' && word(i + 1) === 'into' && isInsertSelect(tokens, i + 2)) {
      findings.push({ at, messageId: 'insertSelect', data: {} })
    } else if (v === 'for' && !afterDot) {
      const lock = LOCK_CLAUSES.find((words) => words.every((w, k) => word(i + 1 + k) === w))?.join(' ').toUpperCase()
      if (lock !== undefined) locks.push({ at, messageId: 'lockWithoutTenant', data: { lock: `FOR ${lock}` } })
    }
  }
  endStatement()
  return findings
}

/** After `insert into`: skips the table name, an alias and a column list; is the source a SELECT? */
function isInsertSelect (tokens, j) {
  const word = (k) => tokens[k]?.v
  j++ // the table name (or a $1 placeholder)
  while (word(j) === '.') j += 2
  if (word(j) === 'as') j += 2
  while (word(j) === '$1') j++
  if (word(j) === '(' && word(j + 1) !== 'select' && word(j + 1) !== 'with') {
    for (let depth = 0; j < tokens.length; j++) {
      if (word(j) === '(') depth++
      else if (word(j) === ')' && --depth === 0) break
    }
    j++
  }
  if (word(j) === '(') j++
  return word(j) === 'select' || word(j) === 'with'
}

/** The identifier a tag or callee starts from: `sql` for sql`…`, sql.raw, sql<T>`…`. */
function rootName (node) {
  while (node.type === 'MemberExpression' || node.type === 'CallExpression') {
    node = node.type === 'MemberExpression' ? node.object : node.callee
  }
  return node.type === 'Identifier' ? node.name : undefined
}

/** Method names called along a builder chain, outermost first: a.b().c() → ['c', 'b']. */
function chainMethods (node) {
  const names = []
  for (let n = node; n !== undefined;) {
    if (n.type === 'CallExpression') n = n.callee
    else if (n.type === 'MemberExpression') {
      if (n.property.type === 'Identifier') names.push(n.property.name)
      n = n.object
    } else if (n.type === 'TSNonNullExpression' || n.type === 'ChainExpression') n = n.expression
    else break
  }
  return names
}

const methodName = (call) => call.callee.type === 'MemberExpression' && call.callee.property.type === 'Identifier'
  ? call.callee.property.name
  : call.callee.type === 'Identifier' ? call.callee.name : undefined

export default {
  meta: {
    type: 'problem',
    docs: {
      description: 'Statement shapes a Citus cluster refuses (docs/architecture.md, "Statements Citus accepts")'
    },
    schema: [],
    messages: {
      volatileInCase: '{{fn}} inside {{construct}}: Citus refuses a function that is not IMMUTABLE in CASE ' +
        'or COALESCE ' +
        `of a write (${DOCS}). Pass the time as a parameter computed once, take it from the row (excluded.<column>), ` +
        'or move the function out of the CASE/COALESCE.',
      volatileInConflict: '{{fn}} in ON CONFLICT … DO UPDATE ' +
        'SET: Citus refuses a function that is not IMMUTABLE there ' +
        `(${DOCS}). Take the value from the row (excluded.<column>) or pass it as a parameter computed once.`,
      insertSelect: 'INSERT … SELECT: Citus runs it as a COPY into the shards, which row-level security refuses ' +
        `(${DOCS}). Read the rows and write them as multi-row VALUES (src/platform/db/chunks.ts, rowChunks).`,
      lockWithoutTenant: `{{lock}} on a statement that never names tenant_id (${DOCS}): ` +
        'a row lock must filter the locked table by tenant_id.'
    }
  },

  create (context) {
    const { sourceCode } = context
    const inDoUpdateSet = (node) =>
      sourceCode.getAncestors(node).some((a) => a.type === 'CallExpression' && methodName(a) === 'doUpdateSet')

    /** Scans `parts` (`{ text, start }`: text and its offset in the file) joined with ` $1 ` between them. */
    function check (node, parts, expressions = []) {
      let text = ''
      const starts = []
      for (const part of parts) {
        if (text !== '') text += ' $1 '
        starts.push({ at: text.length, start: part.start })
        text += part.text
      }
      const tenantElsewhere = expressions.some((e) => TENANT.test(sourceCode.getText(e)))
      for (const f of scanSql(text, { conflictSet: inDoUpdateSet(node), tenantElsewhere })) {
        const part = starts.findLast((s) => s.at <= f.at)
        const loc = sourceCode.getLocFromIndex(part.start + f.at - part.at)
        context.report({ node, loc, messageId: f.messageId, data: f.data })
      }
    }

    function checkLiteral (node) {
      if (node.type === 'Literal' && typeof node.value === 'string') {
        check(node, [{ text: node.value, start: node.range[0] + 1 }])
      } else if (node.type === 'TemplateLiteral') {
        const parts = node.quasis.map((q) => ({ text: q.value.cooked ?? q.value.raw, start: q.range[0] + 1 }))
        check(node, parts, node.expressions)
      }
    }

    return {
      TaggedTemplateExpression (node) {
        if (rootName(node.tag) === 'sql') checkLiteral(node.quasi)
      },
      CallExpression (node) {
        const name = methodName(node)
        if ((name === 'raw' && rootName(node.callee) === 'sql') || name === 'query') {
          node.arguments.forEach(checkLiteral)
        }
        if (name === 'expression' && chainMethods(node).includes('insertInto')) {
          context.report({ node: node.callee.property, messageId: 'insertSelect' })
        }
        if (LOCK_METHODS.has(name)) {
          let chain = node
          while (CHAIN_PARENTS.has(chain.parent?.type)) chain = chain.parent
          if (!sourceCode.getTokens(chain).some((t) => TENANT.test(t.value))) {
            const data = { lock: `.${name}()` }
            context.report({ node: node.callee.property ?? node.callee, messageId: 'lockWithoutTenant', data })
          }
        }
      }
    }
  }
}
