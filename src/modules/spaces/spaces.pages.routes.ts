/**
 * The lists of what a space holds (members, managers, contacts, children, activity, events): one route form for
 * all, registered by the routes file of each part.
 */
import type { TSchema } from '@sinclair/typebox'
import type { Kysely } from 'kysely'
import type { App } from '../../platform/app-context.ts'
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Database } from '../../platform/db/database.ts'
import { countingOf, type Counting } from '../../platform/db/kept-counts.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import { answerPage, operationsTagged } from '../../platform/http/routes.ts'
import { KeysetPageQuery } from '../../platform/http/schema.ts'
import { requirePolicy } from '../policy/index.ts'
import { SpaceParams } from './spaces.schemas.ts'
import { visibleOr404 } from './spaces.service.ts'

const operation = operationsTagged('Spaces')

/** A space the caller sees. */
export type VisibleSpace = Awaited<ReturnType<typeof visibleOr404>>

/**
 * `GET /api/v1/spaces/{id}/<what>`: a page of what a space holds (members, managers, contacts, children, activity,
 * events), for whoever sees the space (404 otherwise); `list` gets the visible space, and how its total is counted
 * when `keptBy` names the trigger that keeps it (kept-counts.ts; 'rows' otherwise).
 */
export function spacePageRoute (
  app: App,
  db: Kysely<Database>,
  what: string,
  operationId: string,
  summary: string,
  description: string,
  page: TSchema,
  list: (trx: Tx, auth: AuthContext, space: VisibleSpace, q: KeysetPageQuery, counting: Counting) => Promise<object>,
  keptBy?: string
): void {
  app.get(`/api/v1/spaces/:id/${what}`, operation(operationId, summary, {
    description,
    params: SpaceParams,
    querystring: KeysetPageQuery,
    response: { 200: page }
  }, requirePolicy('space', 'read')), async request => {
    // before the transaction: PGlite has one connection, which the transaction holds
    const counting = keptBy === undefined ? 'rows' : await countingOf(db, keptBy)
    return await answerPage(db, request, async trx =>
      await list(trx, request.auth, await visibleOr404(trx, request.auth, request.params.id), request.query, counting)
    )
  })
}
