/**
 * Outbound webhooks (Standard Webhooks): a tenant's subscriptions to the domain events of the
 * outbox, their signing secrets (shown once; rotation keeps the old one signing for a day), the
 * delivery log and each delivery's attempts, redelivery and a ping. Tenant admins only (`webhook:*` →
 * `tenant:admin`). The deliveries themselves happen in the worker (webhooks.delivery.ts), never in the
 * request that caused the event. docs/integrations.md, "Outbound webhooks".
 */
import { Type } from '@sinclair/typebox'
import { defineModule } from '../../platform/app-context.ts'
import { withTenant, type Tx } from '../../platform/db/tenant.ts'
import { error404NotFound } from '../../platform/http/errors.ts'
import { answerPage, noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { KeysetPageQuery } from '../../platform/http/schema.ts'
import { writerOf } from '../automation/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { newMessageId, newSecret, PING_TYPE, ROTATION_OVERLAP_SECONDS } from './webhooks.delivery.ts'
import * as repo from './webhooks.repository.ts'
import {
  CreateWebhookBody, DeliveryParams, PagedBodyWebhookDelivery, PagedBodyWebhookDeliveryAttempt,
  PagedBodyWebhookSubscription, PatchWebhookBody, WebhookDelivery, WebhookParams, WebhookSubscription,
  WebhookSubscriptionWithSecret
} from './webhooks.schemas.ts'
import { checkEventTypes, checkUrl } from './webhooks.service.ts'
import { WEBHOOK_EVENT_SCHEMAS } from './webhooks.event-schemas.ts'

const operation = operationsTagged('Webhooks')

async function existing (trx: Tx, tenantId: string, id: string) {
  const row = await repo.lockSubscription(trx, tenantId, id)
  if (row === undefined) throw error404NotFound('webhook subscription not found')
  return row
}

export const webhooksModule = defineModule(async (app, ctx) => {
  const { db } = ctx
  const { allow } = ctx.engines.webhooks

  // the versioned payload schema of each event type (webhooks.event-schemas.ts): public and outside the OpenAPI
  // document, like /schemas/{name}
  app.get('/schemas/webhooks/:name', {
    schema: {
      hide: true,
      operationId: 'get-webhook-event-schema',
      summary: 'JSON Schema of a webhook event type: WebhookEvent.<type>.v1.json',
      tags: ['Meta'],
      params: Type.Object({
        name: Type.String({ pattern: '^WebhookEvent\\.[a-z0-9_.]+\\.v1\\.json$', maxLength: 200 })
      })
    },
    config: { auth: 'none' }
  }, async (request, reply) => {
    const type = request.params.name.replace(/^WebhookEvent\./, '').replace(/\.v1\.json$/, '')
    const schema = WEBHOOK_EVENT_SCHEMAS.get(type)
    if (schema === undefined) throw error404NotFound(`no webhook event type ${type}`)
    return await reply.type('application/schema+json').send(JSON.stringify({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `${ctx.config.baseUrl}/schemas/webhooks/${request.params.name}`,
      ...schema
    }))
  })

  app.post('/api/v1/webhooks', operation('create-webhook',
    'Subscribe a URL to domain events; the secret is shown only here', {
      description: 'Subscribes an HTTPS URL to domain events, delivered signed (Standard Webhooks). The signing ' +
        'secret is shown only in this answer.',
      body: CreateWebhookBody,
      response: { 201: WebhookSubscriptionWithSecret }
    }, requirePolicy('webhook', 'write')), async (request, reply) => {
    const b = request.body
    const url = await checkUrl(b.url, allow, 'body.url')
    const eventTypes = checkEventTypes(b.event_types, 'body.event_types')
    const secret = newSecret()
    const auth = request.auth
    const row = await withTenant(db, auth, trx => repo.insertSubscription(trx, auth.tenantId, {
      url,
      event_types: eventTypes,
      description: b.description ?? null,
      enabled: b.enabled ?? true,
      secret,
      created_by: auth.userId,
      created_by_email: auth.email,
      // whom the subscription reads as (the outbound rule): the creator's roles and organization of now
      created_by_roles: writerOf(auth).roles,
      created_by_org: auth.orgId
    }))
    return await reply.code(201).header('location', `/api/v1/webhooks/${row.id}`).send({ ...row, secret })
  })

  app.get('/api/v1/webhooks', operation('list-webhooks', "List the tenant's webhook subscriptions, newest first", {
    description: 'The tenant\'s webhook subscriptions, newest first, without their secrets.',
    querystring: KeysetPageQuery,
    response: { 200: PagedBodyWebhookSubscription }
  }, requirePolicy('webhook', 'read')), async request =>
    await answerPage(db, request, (trx, q, auth) => repo.listSubscriptions(trx, auth.tenantId, q)))

  app.get('/api/v1/webhooks/:id', operation('get-webhook',
    'Get a webhook subscription, with its pending and failing deliveries and last success', {
      description: 'The subscription (never its secret) and, in `deliveries`, how many of its deliveries are ' +
        'pending, how many of those failed their last attempt, and when one last succeeded.',
      params: WebhookParams,
      response: { 200: WebhookSubscription }
    }, requirePolicy('webhook', 'read')), async request => {
    const { tenantId } = request.auth
    return await withTenant(db, request.auth, async trx => {
      const row = await repo.findSubscription(trx, tenantId, request.params.id)
      if (row === undefined) throw error404NotFound('webhook subscription not found')
      return { ...row, deliveries: await repo.deliveryFigures(trx, tenantId, row.id) }
    })
  })

  app.patch('/api/v1/webhooks/:id', operation('patch-webhook',
    'Merge-patch a webhook subscription (enabled: true re-enables it)', {
      description: 'Changes the URL, event types, description or state of a subscription; `enabled: true` re-enables ' +
        'one disabled after failures.',
      params: WebhookParams,
      body: PatchWebhookBody,
      response: { 200: WebhookSubscription }
    }, requirePolicy('webhook', 'write')), async request => {
    const b = request.body
    const auth = request.auth
    // 404 before any check of the body
    if (await withTenant(db, auth, trx => repo.findSubscription(trx, auth.tenantId, request.params.id)) === undefined) {
      throw error404NotFound('webhook subscription not found')
    }
    const url = b.url === undefined ? undefined : await checkUrl(b.url, allow, 'body.url')
    const eventTypes = b.event_types === undefined ? undefined : checkEventTypes(b.event_types, 'body.event_types')
    return await withTenant(db, auth, async trx => {
      await existing(trx, auth.tenantId, request.params.id)
      return await repo.updateSubscription(trx, auth.tenantId, request.params.id, {
        ...(url !== undefined ? { url } : {}),
        ...(eventTypes !== undefined ? { event_types: eventTypes } : {}),
        ...(b.description !== undefined ? { description: b.description } : {}),
        ...(b.enabled !== undefined ? { enabled: b.enabled } : {})
      })
    })
  })

  noContentRoute(app, db, 'delete', '/api/v1/webhooks/:id', operation('delete-webhook',
    'Delete a webhook subscription and its delivery log', {
      description: 'Deletes a subscription with its delivery log; nothing more is delivered to it.',
      params: WebhookParams
    }, requirePolicy('webhook', 'write')), async (trx, request) => {
    if (!(await repo.deleteSubscription(trx, request.auth.tenantId, request.params.id))) {
      throw error404NotFound('webhook subscription not found')
    }
  })

  app.post('/api/v1/webhooks/:id/rotate-secret', operation('rotate-webhook-secret',
    'Replace the signing secret; the old one keeps signing for 24 hours', {
      description: 'Makes a new signing secret, shown only in this answer; deliveries carry signatures of both for ' +
        '24 hours. Use it to change the secret without losing deliveries.',
      params: WebhookParams,
      response: { 200: WebhookSubscriptionWithSecret }
    }, requirePolicy('webhook', 'write')), async request => {
    const auth = request.auth
    const secret = newSecret()
    const row = await withTenant(db, auth, async trx => {
      await existing(trx, auth.tenantId, request.params.id)
      return await repo.rotateSecret(trx, auth.tenantId, request.params.id, secret, ROTATION_OVERLAP_SECONDS)
    })
    return { ...row, secret }
  })

  app.get('/api/v1/webhooks/:id/deliveries', operation('list-webhook-deliveries',
    'The delivery log of a subscription, newest first', {
      description: 'The delivery log of a subscription, newest first: attempts, status codes and errors.',
      params: WebhookParams,
      querystring: KeysetPageQuery,
      response: { 200: PagedBodyWebhookDelivery }
    }, requirePolicy('webhook', 'read')), async request =>
    await answerPage(db, request, async (trx, q, auth) => {
      if (await repo.findSubscription(trx, auth.tenantId, request.params.id) === undefined) {
        throw error404NotFound('webhook subscription not found')
      }
      return await repo.listDeliveries(trx, auth.tenantId, request.params.id, q)
    }))

  app.get('/api/v1/webhooks/:id/deliveries/:delivery_id/attempts', operation('list-webhook-delivery-attempts',
    "A delivery's attempts, newest first: time, latency, status or error kind, the start of the answer", {
      description: 'Every attempt of the delivery kept (RETENTION_WEBHOOK_ATTEMPTS, 30 days by default): when it ' +
        'started, how long it took, the HTTP status or why there was none, and the first KiB of a text answer. A ' +
        'delivery of another subscription answers 404.',
      params: DeliveryParams,
      querystring: KeysetPageQuery,
      response: { 200: PagedBodyWebhookDeliveryAttempt }
    }, requirePolicy('webhook', 'read')), async request =>
    await answerPage(db, request, async (trx, q, auth) => {
      const { id, delivery_id: deliveryId } = request.params
      if (await repo.findDelivery(trx, auth.tenantId, id, deliveryId) === undefined) {
        throw error404NotFound('webhook delivery not found')
      }
      return await repo.listAttempts(trx, auth.tenantId, deliveryId, q)
    }))

  app.post('/api/v1/webhooks/:id/deliveries/:delivery_id/redeliver', operation('redeliver-webhook',
    'Deliver again now, with the same webhook-id (a fresh run of attempts)', {
      description: 'Delivers an event again now with the same `webhook-id`, as a fresh run of attempts. Use it after ' +
        'fixing a receiver.',
      params: DeliveryParams,
      response: { 202: WebhookDelivery }
    }, requirePolicy('webhook', 'write')), async (request, reply) => {
    const auth = request.auth
    const row = await withTenant(db, auth, async trx => {
      await existing(trx, auth.tenantId, request.params.id)
      return await repo.redeliver(trx, auth.tenantId, request.params.id, request.params.delivery_id)
    })
    if (row === undefined) throw error404NotFound('webhook delivery not found')
    return await reply.code(202).send(row)
  })

  app.post('/api/v1/webhooks/:id/ping', operation('ping-webhook',
    'Queue a `webhook.ping` test event to the subscription', {
      description: 'Queues a `webhook.ping` test event to the subscription, to check a receiver and its signature ' +
        'check.',
      params: WebhookParams,
      response: { 202: WebhookDelivery }
    }, requirePolicy('webhook', 'write')), async (request, reply) => {
    const auth = request.auth
    const row = await withTenant(db, auth, async trx => {
      const sub = await existing(trx, auth.tenantId, request.params.id)
      return await repo.insertDelivery(trx, {
        tenantId: auth.tenantId,
        subscriptionId: sub.id,
        outboxId: null,
        msgId: newMessageId(),
        eventType: PING_TYPE,
        body: { type: PING_TYPE, timestamp: new Date().toISOString(), data: { subscription_id: sub.id } }
      })
    })
    if (row === undefined) throw new Error('ping delivery not created')
    return await reply.code(202).send(row)
  })
})
