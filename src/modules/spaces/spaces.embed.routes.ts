/**
 * Which sites may embed the public pages of a space's events (docs/guests.md, "Embedding the page"): a list of
 * origins per space, none by default. The public page of an event answers with `Content-Security-Policy:
 * frame-ancestors` set to the union of the lists of its public spaces, so a browser shows it in an `<iframe>` only on
 * those sites. Anyone who sees the space reads the list (it is public anyway, in every page's header); a manager
 * with `space:edit` sets it.
 */
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error409Conflict, invalidField } from '../../platform/http/errors.ts'
import { operationsTagged } from '../../platform/http/routes.ts'
import { requirePolicy } from '../policy/index.ts'
import { embedOrigin } from './spaces.embed.origins.ts'
import { embedOriginsOf, setEmbedOrigins } from './spaces.embed.repository.ts'
import { EmbedOrigins, EmbedOriginsBody, SpaceParams } from './spaces.schemas.ts'
import { lockManageable, visibleOr404 } from './spaces.service.ts'

const operation = operationsTagged('Spaces')

/** The origins of a body in their normal form, each once: a 400 naming the first that is none. */
function originsOf (raw: readonly string[]): string[] {
  const out = new Set<string>()
  for (const [i, value] of raw.entries()) {
    const origin = embedOrigin(value)
    if (origin === undefined) {
      throw invalidField(`body.origins[${i}]`,
        'expected an origin: https://host[:port] (http only for localhost, 127.0.0.1 or [::1]), without a path', value)
    }
    out.add(origin)
  }
  return [...out]
}

export function registerEmbedRoutes (app: App, { db }: AppContext): void {
  app.get('/api/v1/spaces/:id/embed-origins', operation('get-space-embed-origins',
    'The sites that may embed the public pages of the space\'s events', {
      description: 'The sites allowed to embed the public pages of the space\'s events in a frame. None by default.',
      params: SpaceParams,
      response: { 200: EmbedOrigins }
    }, requirePolicy('space', 'read')), async request =>
    await withTenant(db, request.auth, async trx => {
      await visibleOr404(trx, request.auth, request.params.id)
      return { origins: await embedOriginsOf(trx, request.auth.tenantId, request.params.id) }
    })
  )

  app.put('/api/v1/spaces/:id/embed-origins', operation('set-space-embed-origins',
    'Set the sites that may embed the public pages of the space\'s events (frame-ancestors; none by default)', {
      description: 'Replaces the list of sites that may embed the public pages of the space\'s events ' +
        '(`frame-ancestors`). An empty list forbids embedding again.',
      params: SpaceParams,
      body: EmbedOriginsBody,
      response: { 200: EmbedOrigins }
    }, requirePolicy('space', 'embed')), async request =>
    await withTenant(db, request.auth, async trx => {
      const space = await lockManageable(trx, request.auth, request.params.id, 'space:edit')
      if (space.status === 'archived') {
        throw error409Conflict('an archived space cannot be changed', [], 'space_archived')
      }
      const origins = originsOf(request.body.origins)
      await setEmbedOrigins(trx, request.auth.tenantId, space.id, origins)
      return { origins }
    })
  )
}
