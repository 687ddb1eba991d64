/**
 * Named (prepared) statements, by text: parsed once per connection, and planned once when
 * PostgreSQL finds its generic plan as good as the custom ones. Bounded: at most NAMES_MAX texts
 * (each connection keeps those it used), none with more than PARAMS_MAX parameters (lists of ids
 * and bulk inserts, whose text varies with their length). What it relies on of `pg`: pipeline.ts.
 */
import type pg from 'pg'

const NAMES = new Map<string, string>()
const NAMES_MAX = 500
// a member's events list (its page and total in one statement, every branch naming the tenant) has 84 – 96; planned
// afresh for each request, that statement cost more than running it
const PARAMS_MAX = 128
let generation = 0

/** The text alone (unnamed), or a query config naming it: the same name for the same text. */
function named (text: string, values: unknown[] | undefined): string | pg.QueryConfig {
  if (values === undefined || values.length === 0 || values.length > PARAMS_MAX) return text
  let name = NAMES.get(text)
  if (name === undefined) {
    if (NAMES.size >= NAMES_MAX) return text
    name = `k${generation}_${NAMES.size}`
    NAMES.set(text, name)
  }
  return { name, text, values }
}

/**
 * After a schema change under a running process ("cached plan must not change result type"): new names, parsed again.
 */
function forgetStatement (text: string, err: unknown): void {
  if ((err as { code?: string }).code === '0A000' && NAMES.delete(text)) generation++
}

/**
 * Sends a statement, named when it has parameters; the call that meets 0A000 fails, and the next one of the same
 * text is prepared again under a new name.
 */
export function sendPrepared (
  client: pg.PoolClient, text: string, parameters: readonly unknown[] | undefined
): Promise<pg.QueryResult> {
  const q = named(text, parameters as unknown[] | undefined)
  if (typeof q === 'string') return client.query(q, parameters as unknown[])
  const sent = client.query(q)
  sent.catch((err: unknown) => { forgetStatement(text, err) })
  return sent
}
