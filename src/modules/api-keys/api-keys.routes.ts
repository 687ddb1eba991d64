/**
 * Service accounts and their API keys (docs/api-keys.md): machines' callers of a tenant, each with a role and optional
 * scopes, and the keys they authenticate with (`Authorization: Bearer cbk_…`, checked by api-keys.auth.ts through the
 * authentication plugin). Tenant admins only (`tenant:admin`). Owns the tables `service_accounts` and `api_keys`.
 *
 * A key is shown once, in the answer that makes it (creation, rotation); only its SHA-256 is kept. Those two routes
 * refuse `Idempotency-Key`: a replay would have to keep the key in the clear.
 */
import type { preValidationAsyncHookHandler } from 'fastify'
import { defineModule } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error404NotFound, invalidField } from '../../platform/http/errors.ts'
import { answerPage, operationsTagged } from '../../platform/http/routes.ts'
import { NoContent } from '../../platform/http/schema.ts'
import { requirePolicy } from '../policy/index.ts'
import { accountUserId } from './api-keys.auth.ts'
import * as repo from './api-keys.repository.ts'
import {
  ApiKeyParams, CreateApiKeyBody, CreatedApiKey, CreateServiceAccountBody, DEFAULT_EXPIRES_IN_DAYS,
  DEFAULT_OVERLAP_HOURS, ListQuery, PagedBodyApiKey, PagedBodyServiceAccount, PatchServiceAccountBody,
  RotateApiKeyBody, ServiceAccount, ServiceAccountParams, type Scope
} from './api-keys.schemas.ts'
import * as service from './api-keys.service.ts'

const operation = operationsTagged('Service accounts')

/** A service account as the API shows it (its scopes were checked against SCOPES when written). */
export const accountOut = (a: repo.AccountView) => ({
  ...a, scopes: a.scopes as Scope[] | null, user_id: accountUserId(a.id), disabled: a.disabled_at !== null
})

/** A key as the API shows it (never its hash), with its status at `now`. */
export const keyOut = (k: repo.KeyView, now = Date.now()) => ({
  ...k,
  status: k.revoked_at !== null
    ? 'revoked' as const
    : k.expires_at.getTime() <= now ? 'expired' as const : 'active' as const
})

/** The routes that answer a key refuse Idempotency-Key (the stored answer would hold it); no body means `{}`. */
const keyAnswering: preValidationAsyncHookHandler = async request => {
  if (request.headers['idempotency-key'] !== undefined) {
    throw invalidField('header.idempotency-key',
      'not accepted here: the answer holds a key shown once, which is never stored; retry without it (an extra ' +
      'key can be revoked)')
  }
  request.body ??= {}
}

export const apiKeysModule = defineModule(async (app, { db, engines }) => {
  // the bearer check's trust in keys, dropped here when they change (closed by app.ts, before the database)
  const keys = engines.apiKeys

  app.post('/api/v1/service-accounts', operation('create-service-account',
    'Create a service account: a machine caller with a role and optional scopes', {
      description: 'Creates a machine caller with a role and optional scopes. Give it API keys to call the API.',
      body: CreateServiceAccountBody,
      response: { 201: ServiceAccount }
    }, requirePolicy('service_account', 'write')), async (request, reply) => {
    const row = await withTenant(db, request.auth, trx =>
      service.createAccount(trx, request.auth, request.body, new Date()))
    return await reply.code(201).header('location', `/api/v1/service-accounts/${row.id}`).send(accountOut(row))
  })

  app.get('/api/v1/service-accounts', operation('list-service-accounts',
    "List the tenant's service accounts, newest first", {
      description: 'The tenant\'s service accounts, newest first.',
      querystring: ListQuery,
      response: { 200: PagedBodyServiceAccount }
    }, requirePolicy('service_account', 'read')), async request => {
    const page = await answerPage(db, request, (trx, q, auth) => repo.listAccounts(trx, auth.tenantId, q))
    return { ...page, items: page.items.map(accountOut) }
  })

  app.get('/api/v1/service-accounts/:id', operation('get-service-account', 'Get a service account', {
    description: 'One service account with its role and scopes.',
    params: ServiceAccountParams,
    response: { 200: ServiceAccount }
  }, requirePolicy('service_account', 'read')), async request => {
    const row = await withTenant(db, request.auth, trx =>
      repo.findAccount(trx, request.auth.tenantId, request.params.id))
    if (row === undefined) throw error404NotFound('service account not found')
    return accountOut(row)
  })

  app.patch('/api/v1/service-accounts/:id', operation('patch-service-account',
    'Merge-patch a service account: name, role, scopes, disabled (its keys follow within seconds)', {
      description: 'Changes the name, role, scopes or state of a service account; its keys follow within seconds.',
      params: ServiceAccountParams,
      body: PatchServiceAccountBody,
      response: { 200: ServiceAccount }
    }, requirePolicy('service_account', 'write')), async request => {
    const { auth, params } = request
    const row = await withTenant(db, auth, trx => service.patchAccount(trx, auth, params.id, request.body, new Date()))
    keys.forgetAccount(auth.tenantId, params.id)
    return accountOut(row)
  })

  app.delete('/api/v1/service-accounts/:id', operation('delete-service-account',
    'Delete a service account and revoke every key of it', {
      description: 'Deletes a service account and revokes every key of it.',
      params: ServiceAccountParams,
      response: { 204: NoContent }
    }, requirePolicy('service_account', 'write')), async (request, reply) => {
    const { auth, params } = request
    await withTenant(db, auth, trx => service.deleteAccount(trx, auth, params.id, new Date()))
    keys.forgetAccount(auth.tenantId, params.id)
    return await reply.code(204).send(null)
  })

  app.post('/api/v1/service-accounts/:id/keys', {
    ...operation('create-api-key', 'Make an API key of a service account (its secret is shown only here)', {
      description: 'Makes an API key of a service account; its secret is shown only in this answer.',
      params: ServiceAccountParams,
      body: CreateApiKeyBody,
      response: { 201: CreatedApiKey }
    }, requirePolicy('service_account', 'keys'), { optionalBody: true }),
    preValidation: keyAnswering
  }, async (request, reply) => {
    const { auth, params } = request
    const days = request.body.expires_in_days ?? DEFAULT_EXPIRES_IN_DAYS
    const issued = await withTenant(db, auth, trx => service.createKey(trx, auth, params.id, days, new Date()))
    return await reply.code(201).send({ ...keyOut(issued.view), secret: issued.secret })
  })

  app.get('/api/v1/service-accounts/:id/keys', operation('list-api-keys',
    'The keys of a service account, newest first (never a secret)', {
      description: 'The keys of a service account, newest first, without secrets.',
      params: ServiceAccountParams,
      querystring: ListQuery,
      response: { 200: PagedBodyApiKey }
    }, requirePolicy('service_account', 'read')), async request => {
    const page = await answerPage(db, request, async (trx, q, auth) => {
      if (await repo.findAccount(trx, auth.tenantId, request.params.id) === undefined) {
        throw error404NotFound('service account not found')
      }
      return await repo.listKeys(trx, auth.tenantId, request.params.id, q)
    })
    const now = Date.now()
    return { ...page, items: page.items.map(k => keyOut(k, now)) }
  })

  app.post('/api/v1/service-accounts/:id/keys/:key_id/rotate', {
    ...operation('rotate-api-key',
      'Replace an API key: a new key (shown only here); the old one works until the overlap ends', {
        description: 'Makes a new key (shown only in this answer) to replace this one; the old key works until the ' +
          'overlap ends.',
        params: ApiKeyParams,
        body: RotateApiKeyBody,
        response: { 201: CreatedApiKey }
      }, requirePolicy('service_account', 'keys'), { optionalBody: true }),
    preValidation: keyAnswering
  }, async (request, reply) => {
    const { auth, params, body } = request
    const issued = await withTenant(db, auth, trx => service.rotateKey(trx, auth, params.id, params.key_id,
      body.overlap_hours ?? DEFAULT_OVERLAP_HOURS, body.expires_in_days ?? DEFAULT_EXPIRES_IN_DAYS, new Date()))
    keys.forgetKey(auth.tenantId, params.key_id)
    return await reply.code(201).send({ ...keyOut(issued.view), secret: issued.secret })
  })

  app.delete('/api/v1/service-accounts/:id/keys/:key_id', operation('revoke-api-key',
    'Revoke an API key: refused from now on', {
      description: 'Revokes an API key: it is refused from now on.',
      params: ApiKeyParams,
      response: { 204: NoContent }
    }, requirePolicy('service_account', 'keys')), async (request, reply) => {
    const { auth, params } = request
    await withTenant(db, auth, trx => service.revokeKey(trx, auth, params.id, params.key_id, new Date()))
    keys.forgetKey(auth.tenantId, params.key_id)
    return await reply.code(204).send(null)
  })
})
