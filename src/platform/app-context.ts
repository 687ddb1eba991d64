/**
 * What a module receives: configuration and the database, passed in explicitly (no globals,
 * nothing read from the environment at import time).
 */
import type { FastifyInstance, FastifyPluginAsync, RawServerDefault } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Kysely } from 'kysely'
import type { FastifyBaseLogger } from 'fastify/types/logger.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Config } from '../config.ts'
import type { Database, DatabaseKind } from './db/database.ts'
import type { UserGate } from './auth/plugin.ts'
import type { TenantWrites } from './tenant-writes.ts'
import type { RowJsonCache } from './db/row-json-cache.ts'

export interface AppContext {
  readonly config: Config
  /** request traffic (withTenant); its login may be confined by row-level security (DATABASE_APP_URL) */
  readonly db: Kysely<Database>
  /**
   * work across tenants (background workers, job queues): the DATABASE_WORKER_URL login (else
   * DATABASE_URL's), which passes row-level security. `withSystem(ctx.db, …)` uses it already.
   */
  readonly systemDb: Kysely<Database>
  readonly dbKind: DatabaseKind
  /** set by the identity module: refuses tokens of removed or inactive users */
  readonly userGate: { current: UserGate | undefined }
  /** the writes this process answers, by tenant, for the caches it keeps (tenant-writes.ts) */
  readonly writes: TenantWrites
  /** Event bodies rendered by PostgreSQL, per row version (src/modules/events/events.bodies.repository.ts) */
  readonly eventBodies: RowJsonCache
  /** the engines of the background work (made in app.ts, started by src/workers.ts; tests drive them step by step) */
  readonly engines: Engines
}

/**
 * The engines the modules keep, each declared by its module (`declare module` of this file, so the platform names
 * no module): `automation` (automation.engine.ts), `webhooks` (webhooks.delivery.ts).
 */
export interface Engines {}

/** A Fastify instance typed by TypeBox schemas. */
export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/** A feature module: one Fastify plugin that receives the app context. */
export type Module = (ctx: AppContext) => FastifyPluginAsync

/**
 * Declares a module's routes with TypeBox typing.
 *
 * @example
 *   export const contactsModule = defineModule(async (app, ctx) => { app.get('/api/v1/contacts', …) })
 */
export function defineModule (register: (app: App, ctx: AppContext) => Promise<void>): Module {
  return (ctx) => async (instance) => { await register(instance.withTypeProvider<TypeBoxTypeProvider>(), ctx) }
}
