/**
 * `POST /api/v1/integrations/idp/webhook`: lifecycle events of the identity provider (ZITADEL),
 * authenticated by their HMAC signature only (no token, no tenant header). Registered as its own
 * encapsulated plugin: the raw-body parsers below apply to this route alone, the rest of the
 * application keeps its JSON parsing.
 *
 * The provider does not retry a failed delivery, so the handler makes no outbound call and answers
 * as soon as its one transaction commits; docs/identity.md describes the resync for anything lost.
 */
import { defineModule } from '../../platform/app-context.ts'
import { ApiError, error503ServiceUnavailable, ErrorModel } from '../../platform/http/errors.ts'
import { IDP_WEBHOOK_BODY_LIMIT, IdpWebhookResult } from './identity.schemas.ts'
import { applyDelivery, parseEvent } from './identity.idp-webhook.ts'
import { SIGNATURE_HEADERS, verifySignature } from './identity.idp-signature.ts'
import type { UserGateCache } from './identity.user-gate.ts'

const headerValue = (v: string | string[] | undefined): string | undefined => Array.isArray(v) ? v.join(',') : v

export const idpWebhookRoutes = (gate: UserGateCache) => defineModule(async (app, { config, db }) => {
  // Only this scope: the body arrives as bytes, because the signature covers the exact bytes sent.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    ['application/json', 'application/octet-stream'],
    { parseAs: 'buffer', bodyLimit: IDP_WEBHOOK_BODY_LIMIT },
    (_request, body, done) => {
      done(null, body)
    }
  )

  app.post('/api/v1/integrations/idp/webhook', {
    schema: {
      operationId: 'post-idp-webhook',
      summary: 'Receive a lifecycle event of the identity provider',
      tags: ['Identity'],
      description:
        'Body: a ZITADEL event (aggregateID, aggregateType, resourceOwner, instanceID, sequence, event_type, ' +
        'event_payload as object or base64), sent as application/json or application/octet-stream, at most 256 KiB. ' +
        'Authenticated by `IDP-Signature` or `ZITADEL-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, ' +
        '"<t>.<raw body>")>`, within 300 s. ' +
        'A delivery seen before answers 200 without effect.',
      response: {
        200: IdpWebhookResult,
        401: { ...ErrorModel, description: 'Missing, malformed, wrong or stale signature' }
      }
    },
    bodyLimit: IDP_WEBHOOK_BODY_LIMIT,
    config: { auth: 'none', auditActor: 'identity_provider' }
  }, async request => {
    const secrets = [config.idpWebhookSecret, config.idpWebhookSecretPrevious].filter(
      (s): s is string => s !== undefined
    )
    if (config.idpWebhookSecret === undefined) {
      throw error503ServiceUnavailable('the identity-provider webhook is not configured (IDP_WEBHOOK_SECRET)')
    }
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
    const check = verifySignature(
      SIGNATURE_HEADERS.map(h => headerValue(request.headers[h])),
      raw,
      secrets,
      Date.now() / 1000
    )
    if (!check.ok) throw new ApiError(401, check.reason)

    const event = parseEvent(raw)
    const delivery = await applyDelivery(db, event)
    if (delivery.status !== 'duplicate') gate.invalidate(delivery.tenantId, delivery.userId)
    request.log.info(
      { event_type: event.event_type, sequence: event.sequence, status: delivery.status },
      'identity-provider delivery'
    )
    return { status: delivery.status }
  })
})
