/**
 * Watches the statements (text and parameters) this process sends to a test app's database, where they leave for
 * it: every `pg` client query on PostgreSQL (BEGIN, the tenant scope and COMMIT included; the text of BEGIN and the
 * scope that leave together reported statement by statement), every PGlite query, and the BEGIN and COMMIT PGlite
 * sends itself around a transaction (reported as `begin` and `commit`).
 *
 * @example
 *   const watch = watchStatements(t, text => texts.push(text))
 *   try { await t.as(token, { method: 'GET', url }) } finally { watch.restore() }
 */
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import type { TestApp } from './build-app.ts'

export interface StatementWatch { restore (): void }

const textOf = (arg: unknown): string =>
  typeof arg === 'string' ? arg : String((arg as { text?: string } | undefined)?.text ?? '')

/** The parameters of a query call: `(text, values)` or `({ text, values })`. */
const valuesOf = (args: unknown[]): unknown[] => {
  if (Array.isArray(args[1])) return args[1]
  const values = (args[0] as { values?: unknown } | undefined)?.values
  return typeof args[0] !== 'string' && Array.isArray(values) ? values : []
}

export function watchStatements (t: TestApp, seen: (text: string, values: unknown[]) => void): StatementWatch {
  if (t.kind !== 'pglite') {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
    const original = proto.query
    proto.query = function (this: unknown, ...args: unknown[]) {
      const text = textOf(args[0])
      const values = valuesOf(args)
      // BEGIN and `SET LOCAL`s held until the next statement leave as one text (`begin; set local …`,
      // src/platform/db/deferred-scope.ts): each of its statements reported as PGlite's are
      if (values.length === 0 && /^(begin;|set local )/.test(text) && text.includes('; ')) {
        for (const part of text.split('; ')) seen(part, [])
      } else {
        seen(text, values)
      }
      return original.apply(this, args)
    }
    return { restore: () => { proto.query = original } }
  }
  const lite = t.database.pglite as PGlite
  const query = lite.query.bind(lite)
  const transaction = lite.transaction.bind(lite)
  lite.query = (async (...args: Parameters<PGlite['query']>) => {
    seen(textOf(args[0]), valuesOf(args))
    return await query(...args)
  }) as PGlite['query']
  lite.transaction = (async (fn: Parameters<PGlite['transaction']>[0]) => {
    seen('begin', [])
    const result = await transaction(async (tx) => {
      const txQuery = tx.query.bind(tx)
      tx.query = (async (...args: Parameters<typeof tx.query>) => {
        seen(textOf(args[0]), valuesOf(args))
        return await txQuery(...args)
      }) as typeof tx.query
      return await fn(tx)
    })
    seen('commit', [])
    return result
  }) as PGlite['transaction']
  return {
    restore: () => {
      lite.query = query as PGlite['query']
      lite.transaction = transaction as PGlite['transaction']
    }
  }
}
