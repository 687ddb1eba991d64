/**
 * modules/index-only: a module's public face is its `index.ts` (docs/architecture.md, "Modules and their public
 * faces"). In `src/`:
 *
 * 1. A file of `src/modules/<m>/` imports (or re-exports from) another module `src/modules/<n>/` only through
 *    `src/modules/<n>/index.ts`.
 * 2. `src/app.ts`, `src/workers.ts` and `src/server.ts` reach any module only through its index.
 * 3. `src/platform/` imports no module, with one exception: `platform/db/database.ts` assembles the `Database` type
 *    from the modules' table types (`import type` of a `*.table.ts`).
 *
 * Tests and their fixtures (`*.test.ts`, `*.fixtures.ts`) may reach into any module. Paths are resolved from the
 * importing file, so the rule needs no configuration.
 */
import path from 'node:path'

const DOCS = 'docs/architecture.md, "Modules and their public faces"'

/** The module a path of `src/modules/<m>/…` belongs to, and whether it is its index; undefined outside. */
function moduleOf (file) {
  const parts = file.split(path.sep)
  const at = parts.lastIndexOf('modules')
  if (at < 1 || parts[at - 1] !== 'src' || parts.length < at + 3) return undefined
  return { name: parts[at + 1], index: parts.length === at + 3 && parts[at + 2] === 'index.ts' }
}

function srcPart (file) {
  const parts = file.split(path.sep)
  const at = parts.lastIndexOf('src')
  return at < 0 ? undefined : parts.slice(at + 1)
}

export default {
  meta: {
    type: 'problem',
    docs: { description: "a module's files are reached from outside it only through its index.ts" },
    schema: [],
    messages: {
      notIndex: "'{{source}}' is a file of the {{target}} module: import it through '{{index}}' ({{docs}})",
      platform: "the platform imports no module ('{{source}}'): take what it needs as a parameter ({{docs}})"
    }
  },
  create (context) {
    const file = context.filename ?? context.getFilename()
    if (/\.(test|fixtures)\.ts$/.test(file)) return {}
    const inSrc = srcPart(file)
    if (inSrc === undefined) return {}
    const own = moduleOf(file)
    const check = (node, sourceNode, typeOnly) => {
      const source = sourceNode?.value
      if (typeof source !== 'string' || !source.startsWith('.')) return
      const target = moduleOf(path.resolve(path.dirname(file), source))
      if (target === undefined) return
      if (own !== undefined && own.name === target.name) return
      if (inSrc[0] === 'platform') {
        const assembles = inSrc.join('/') === 'platform/db/database.ts' && typeOnly && source.endsWith('.table.ts')
        if (!assembles) context.report({ node, messageId: 'platform', data: { source, docs: DOCS } })
        return
      }
      if (target.index) return
      const resolved = path.resolve(path.dirname(file), source)
      const index = path.relative(path.dirname(file), path.join(path.dirname(resolved), 'index.ts'))
      context.report({
        node,
        messageId: 'notIndex',
        data: { source, target: target.name, index: index.startsWith('.') ? index : `./${index}`, docs: DOCS }
      })
    }
    return {
      ImportDeclaration: node => check(node, node.source, node.importKind === 'type'),
      ExportNamedDeclaration: node => check(node, node.source, node.exportKind === 'type'),
      ExportAllDeclaration: node => check(node, node.source, node.exportKind === 'type'),
      ImportExpression: node => check(node, node.source, false)
    }
  }
}
