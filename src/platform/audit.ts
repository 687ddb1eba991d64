/**
 * The tenant audit log's writing side (docs/audit.md): every change is recorded in the transaction that makes it,
 * with who made it (the actor), when, from where (request id and address), what (action and resource) and which
 * fields, values of personal data only as keyed hashes.
 *
 * - Domain events are audited where they are written (`emit`, `emitMany` in outbox.ts): one entry per event, its
 *   topic the action, its aggregate the resource.
 * - A change that writes no domain event calls `recordAudit` in its transaction.
 * - A request that wrote in a tenant transaction and recorded neither gets one entry of its own, named after its
 *   route (`withTenant` asks `auditTransaction`): no change a request makes goes unrecorded, even one added later
 *   without thought of the log.
 *
 * Who the actor is comes from the request the work runs for (`registerAuditContext`, an AsyncLocalStorage set
 * before authentication): a user's token, an API key, a guest's link or nobody; work outside requests names itself
 * with `withAuditActor` (automation as its run-as user, retention, the identity provider). The chain is sealed
 * after commit (audit-chain.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import crypto from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type {
  KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, Transaction,
  UnknownRow
} from 'kysely'
import type { Database } from './db/database.ts'
import type { AuditActorKind } from './db/platform.table.ts'

/** A tenant transaction: db/tenant.ts's Tx, named here so that tenant.ts (which runs `auditTransaction`) is not
 * imported back. */
type Tx = Transaction<Database>

export type { AuditActorKind }
export const AUDIT_ACTOR_KINDS = [
  'user', 'api_key', 'guest', 'anonymous', 'identity_provider', 'automation', 'scim', 'system'
] as const satisfies readonly AuditActorKind[]

/** Who made a change. `id`: the user, service account or run-as user; `via`: the key, rule or job it went through. */
export interface AuditActor {
  readonly kind: AuditActorKind
  readonly id: string | null
  readonly via?: string | null
  readonly requestId?: string | null
  readonly address?: string | null
}

/** One change to record. `fields`: the changed fields (values are rendered by `auditFields`). */
export interface AuditChange {
  readonly tenantId: string
  readonly action: string
  readonly resourceType: string
  readonly resourceId: string | number | null
  readonly fields?: Record<string, unknown>
  /** the contact (data subject) the change concerns, when there is one */
  readonly contactId?: string | number | null
  /** who made it, when not the current request's or work's actor */
  readonly actor?: AuditActor
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** who an unauthenticated caller of this route is in the audit log (default `anonymous`) */
    auditActor?: 'guest' | 'identity_provider'
  }
}

/** What one tenant transaction did: whether it wrote, whether it recorded an entry. */
interface TransactionAudit { wrote: boolean, recorded: boolean }

interface AuditStore {
  readonly request?: FastifyRequest
  readonly actor?: AuditActor
  readonly transaction?: TransactionAudit
}

const store = new AsyncLocalStorage<AuditStore>()

/** Makes every request's work know its request (the first onRequest hook, before authentication). */
export function registerAuditContext (app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => { store.run({ request }, done) })
}

/** Runs `fn` as the work of `actor` (background work: automation, retention, the identity provider's resync). */
export async function withAuditActor<T> (actor: AuditActor, fn: () => Promise<T>): Promise<T> {
  const outer = store.getStore()
  return await store.run({ ...outer, actor: { ...actorOfRequest(outer?.request), ...actor } }, fn)
}

function actorOfRequest (request: FastifyRequest | undefined): AuditActor {
  if (request === undefined) return { kind: 'system', id: null }
  const where = { requestId: request.id, address: request.ip }
  const auth = request.optionalAuth
  if (auth !== null && auth !== undefined) {
    const key = auth.apiKey
    if (key !== undefined) return { kind: 'api_key', id: auth.userId, via: `key:${key.keyId}`, ...where }
    return { kind: 'user', id: auth.userId, ...where }
  }
  return { kind: request.routeOptions.config.auditActor ?? 'anonymous', id: null, ...where }
}

/** The actor of the work running now. */
export function currentAuditActor (): AuditActor {
  const s = store.getStore()
  return s?.actor ?? actorOfRequest(s?.request)
}

let valueKey: Buffer = crypto.randomBytes(32)

/**
 * Sets the key of the hashes of personal values (derived from the deployment's TOKEN_SECRET, so every instance hashes
 * a value alike and an export of the log alone cannot be checked against guessed values). Called at start.
 */
export function configureAuditKey (secret: string): void {
  valueKey = Buffer.from(crypto.hkdfSync('sha256', secret, 'collab audit', 'personal values', 32))
}

/** A personal value as the log keeps it: `hmac:` and 22 characters of its keyed hash, per tenant. */
export function auditHash (tenantId: string, value: string): string {
  const mac = crypto.createHmac('sha256', valueKey).update(`${tenantId}\0${value}`)
  return 'hmac:' + mac.digest('base64url').slice(0, 22)
}

/**
 * Keys whose string values are not personal data and are kept as they are: ids, states, kinds, roles, field names,
 * times. Every other string (names, e-mail addresses, phone numbers, titles, answers, notes) is kept as a hash.
 */
const PLAIN_KEY = new RegExp(
  '(^|_)(id|ids|status|state|role|roles|kind|source|scope|scopes|action|topic|visibility|permission|permissions|' +
  'fields|changed|version|template|freq|mode|outcome|type|format|channel|priority|method|route|at|zone|timezone|' +
  'locale|currency|count)$'
)
const MAX_KEYS = 64
const MAX_ITEMS = 50
const MAX_PLAIN = 200

function renderValue (tenantId: string, key: string, value: unknown, depth: number): unknown {
  if (value === null || value === undefined) return null
  if (typeof value === 'number' || typeof value === 'boolean') return value
  if (value instanceof Date) return value.toISOString()
  if (typeof value === 'string') {
    return PLAIN_KEY.test(key) && value.length <= MAX_PLAIN ? value : auditHash(tenantId, value)
  }
  if (Array.isArray(value)) {
    return value.slice(0, MAX_ITEMS).map(v => renderValue(tenantId, key, v, depth + 1))
  }
  if (typeof value === 'object') {
    if (depth >= 3) return auditHash(tenantId, JSON.stringify(value))
    return auditFields(tenantId, value as Record<string, unknown>, depth + 1)
  }
  return auditHash(tenantId, String(value))
}

/** The fields of a change as the log keeps them: names, and values hashed where they may be personal data. */
export function auditFields (tenantId: string, fields: Record<string, unknown>, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields).slice(0, MAX_KEYS)) {
    out[key] = renderValue(tenantId, key.toLowerCase(), value, depth)
  }
  return out
}

function rowOf (change: AuditChange, actor: AuditActor) {
  return {
    tenant_id: change.tenantId,
    actor_type: actor.kind,
    actor_id: actor.id,
    via: actor.via ?? null,
    request_id: actor.requestId ?? null,
    address: actor.address ?? null,
    action: change.action,
    resource_type: change.resourceType,
    resource_id: change.resourceId === null ? null : String(change.resourceId),
    contact_id: change.contactId === undefined || change.contactId === null ? null : String(change.contactId),
    fields: JSON.stringify(auditFields(change.tenantId, change.fields ?? {}))
  }
}

/** Bind parameters of one audit row (the columns of rowOf). */
const PARAMS_PER_ROW = 11
const ROWS_PER_STATEMENT = Math.floor(65_535 / PARAMS_PER_ROW)

/**
 * Records changes in the audit log, in the transaction that makes them.
 *
 * @example
 *   await recordAudit(trx, { tenantId, action: 'api_key.revoked', resourceType: 'api_key', resourceId: key.id })
 */
export async function recordAudit (trx: Tx, changes: AuditChange | readonly AuditChange[]): Promise<void> {
  const list = Array.isArray(changes) ? changes as readonly AuditChange[] : [changes as AuditChange]
  if (list.length === 0) return
  const current = currentAuditActor()
  const rows = list.map(c => rowOf(c, c.actor ?? current))
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    await trx.insertInto('audit_log').values(rows.slice(i, i + ROWS_PER_STATEMENT)).execute()
  }
  const t = store.getStore()?.transaction
  if (t !== undefined) t.recorded = true
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])
const WRITE_NODES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode'])
const RAW_WRITE = /^\s*(insert|update|delete|merge)\b|^\s*with\b[\s\S]*\b(insert\s+into|update\s+\w|delete\s+from)\b/i

/**
 * Notes that a transaction wrote: an INSERT, UPDATE, DELETE or MERGE it ran through Kysely that changed a row (a
 * statement that matched none, as a refused update by id does, changed nothing).
 */
class WriteTracker implements KyselyPlugin {
  readonly #writes = new WeakSet<object>()

  constructor (private readonly state: TransactionAudit) {}

  transformQuery ({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    if (!this.state.wrote && (WRITE_NODES.has(node.kind) ||
      (node.kind === 'RawNode' && RAW_WRITE.test(node.sqlFragments.join(' '))))) {
      this.#writes.add(queryId)
    }
    return node
  }

  async transformResult ({ result, queryId }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#writes.has(queryId) && ((result.numAffectedRows ?? 0n) > 0n || result.rows.length > 0)) {
      this.state.wrote = true
    }
    return result
  }
}

/** The entry of a request's write that recorded none: its route, its resource (the route's last parameter). */
function requestEntry (tenantId: string, request: FastifyRequest): AuditChange {
  const route = request.routeOptions.url ?? request.url.split('?')[0] ?? ''
  const params = (request.params ?? {}) as Record<string, unknown>
  const names = [...route.matchAll(/:([A-Za-z_]+)/g)].map(m => m[1] as string)
  const last = names.at(-1)
  const segments = route.split('/').filter(s => s !== '' && !s.startsWith(':'))
  const before = last === undefined
    ? undefined
    : route.slice(0, route.indexOf(`:${last}`)).split('/').filter(Boolean).at(-1)
  const body = request.body
  const bodyFields = body !== null && typeof body === 'object' && !Buffer.isBuffer(body) && !Array.isArray(body)
    ? Object.keys(body).slice(0, MAX_KEYS)
    : []
  return {
    tenantId,
    action: `${request.method} ${route}`,
    resourceType: before ?? segments.at(-1) ?? 'request',
    resourceId: last === undefined ? null : String(params[last] ?? ''),
    fields: { method: request.method, route, fields: bodyFields }
  }
}

/**
 * Runs one tenant transaction's work (`withTenant`): in a request that may write, the transaction's writes are
 * watched, and one that wrote without recording an entry gets its request's entry before it commits. A transaction of
 * bookkeeping (`TenantScope.bookkeeping`) is not watched.
 */
export async function auditTransaction<T> (
  tenantId: string, trx: Tx, fn: (trx: Tx) => Promise<T>, bookkeeping = false
): Promise<T> {
  const outer = store.getStore()
  const request = outer?.request
  if (request === undefined || bookkeeping || READS.has(request.method)) return await fn(trx)
  const state: TransactionAudit = { wrote: false, recorded: false }
  return await store.run({ ...outer, transaction: state }, async () => {
    const result = await fn(trx.withPlugin(new WriteTracker(state)))
    if (state.wrote && !state.recorded) await recordAudit(trx, requestEntry(tenantId, request))
    return result
  })
}
