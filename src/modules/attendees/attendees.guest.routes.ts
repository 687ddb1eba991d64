/**
 * The organiser's side of guests (docs/guests.md): invitation mails to invited attendees (each with the guest's own
 * link to answer), a guest's new link (the old ones stop), and the tenant's default language of guest texts. The
 * links themselves only ever leave by mail: no answer of the API carries one.
 */
import { Type } from '@sinclair/typebox'
import type { App, AppContext } from '../../platform/app-context.ts'
import { withTenant } from '../../platform/db/tenant.ts'
import { error404NotFound } from '../../platform/http/errors.ts'
import { noContentRoute, operationsTagged } from '../../platform/http/routes.ts'
import { body, model, Nullable, StringEnum, Timestamp, UuidString } from '../../platform/http/schema.ts'
import { isLocale, LOCALES } from '../../platform/i18n/i18n.ts'
import { EventParams, lockEventForWrite, rootEventId } from '../events/index.ts'
import { requirePolicy } from '../policy/index.ts'
import { mailGuests } from './attendees.guest-mail.ts'
import { revokeGuestTokens } from './attendees.guest-tokens.repository.ts'
import { INVITATIONS_MAX, sendInvitations } from './attendees.guest.ts'
import * as guestRepo from './attendees.guest.repository.ts'
import * as repo from './attendees.repository.ts'
import { AttendeeParams, BULK_MAX } from './attendees.schemas.ts'

const operation = operationsTagged('Guests')

const InvitationsBody = body({
  contact_ids: Type.Optional(Type.Array(UuidString, {
    minItems: 1,
    maxItems: BULK_MAX,
    description: `Only these attendees (1 to ${BULK_MAX}); default: every invited attendee of the event`
  }))
}, { examples: [{}, { contact_ids: ['0b9f2c1e-7d4a-4c55-9a7e-3f1c2d4b5a69'] }] })

const InvitationsSent = model('InvitationsSent', {
  invited: Type.Integer({ description: 'Attendees in status `invited` the request named (or the event has)' }),
  mailed: Type.Integer({ description: 'Invitations queued: those invited whose contact has an e-mail address' })
}, { examples: [{ invited: 40, mailed: 38 }] })

const GuestSettings = model('GuestSettings', {
  default_locale: Nullable(StringEnum(LOCALES, {
    description: 'The language of guest texts when a guest has none (null: the deployment\'s DEFAULT_LOCALE)'
  })),
  updated_at: Nullable(Timestamp())
}, { examples: [{ default_locale: 'de', updated_at: '2027-04-01T09:00:00.000Z' }] })

const PutGuestSettingsBody = body({
  default_locale: Nullable(StringEnum(LOCALES, { description: 'en, de, fr or es; null: the deployment\'s' }))
}, { examples: [{ default_locale: 'fr' }] })

/** The stored settings as answered (none stored yet: the defaults). */
const shown = (row: { default_locale: string | null, updated_at: Date } | undefined) => ({
  default_locale: isLocale(row?.default_locale) ? row.default_locale : null,
  updated_at: row?.updated_at ?? null
})

export async function guestOrganiserRoutes (app: App, { db }: AppContext): Promise<void> {
  app.post('/api/v1/events/:id/invitations', operation('send-event-invitations',
    `Mail invited attendees (at most ${INVITATIONS_MAX} a request) an invitation with their own link to answer`, {
      description: 'Mails the invited attendees (or the ones listed) an invitation with their own link to answer.',
      params: EventParams,
      body: InvitationsBody,
      response: { 200: InvitationsSent }
    }, requirePolicy('attendee', 'invite'), { config: { idempotency: 'transaction' }, optionalBody: true }),
  async request => {
    const { auth, params, body: b } = request
    return await withTenant(db, auth, async trx => {
      const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write', { includeDraftClones: false })
      return await sendInvitations(trx, event, b.contact_ids ?? null)
    })
  })

  noContentRoute(app, db, 'post', '/api/v1/events/:id/attendees/:contact_id/guest-link', operation(
    'renew-attendee-guest-link',
    "Stop every link of an attendee's guest and mail them a new one", {
      description: 'Stops every link the attendee\'s guest holds and mails them a new one. Use it when a link was ' +
        'forwarded or leaked.',
      params: AttendeeParams
    }, requirePolicy('attendee', 'invite')), async (trx, { auth, params }) => {
    const event = await lockEventForWrite(trx, auth, params.id, 'attendees:write', { includeDraftClones: false })
    const [attendee] = await repo.attendeesOf(trx, auth.tenantId, rootEventId(event), [params.contact_id])
    if (attendee === undefined) throw error404NotFound('attendee not found')
    await revokeGuestTokens(trx, auth.tenantId, [attendee.id])
    await mailGuests(trx, event, [attendee.id], 'new_link')
  })

  app.get('/api/v1/guest-settings', operation('get-guest-settings',
    "The tenant's guest settings (the default language of guest texts)", {
      description: 'The tenant\'s guest settings, such as the default language of mails and pages for guests.',
      response: { 200: GuestSettings }
    }, requirePolicy('guest', 'settings')), async request =>
    await withTenant(db, request.auth, async trx =>
      shown(await guestRepo.readGuestSettings(trx, request.auth.tenantId))))

  app.put('/api/v1/guest-settings', operation('put-guest-settings',
    "Set the tenant's guest settings (tenant administrators)", {
      description: 'Replaces the tenant\'s guest settings. Tenant administrators only.',
      body: PutGuestSettingsBody,
      response: { 200: GuestSettings }
    }, requirePolicy('guest', 'configure')), async request =>
    await withTenant(db, request.auth, async trx =>
      shown(await guestRepo.writeGuestSettings(trx, request.auth.tenantId, request.body.default_locale))))
}
