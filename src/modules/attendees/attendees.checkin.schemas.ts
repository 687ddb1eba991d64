/** Wire schemas of check-in, check-out and check-in tokens (docs/check-in.md). */
import { Type } from '@sinclair/typebox'
import { body, model, StringEnum, Timestamp } from '../../platform/http/schema.ts'
import { Attendee } from './attendees.schemas.ts'
import { CHECK_IN_METHODS } from './attendees.table.ts'

/** Bound of the scanned text: a token is 43 characters, its QR payload about 80 (docs/check-in.md). */
export const SCANNED_TOKEN_MAX = 200

/** What a QR payload starts with: `collab-checkin:v1:<event id>:<token>`. */
export const QR_PREFIX = 'collab-checkin:v1:'

const Method = (fallback: string) => StringEnum(CHECK_IN_METHODS, {
  description: `How the attendee was checked in: manual, scan or api (default ${fallback})`
})

export const CheckInBody = body({ method: Type.Optional(Method('manual')) }, { examples: [{ method: 'manual' }] })

export const CheckInResult = model('CheckInResult', {
  already_checked_in: Type.Boolean({
    description: 'True when the attendee was inside already: nothing was changed'
  }),
  attendee: Attendee
})

export const CheckInToken = model('CheckInToken', {
  token: Type.String({ description: 'The plain token, shown once (only its SHA-256 is stored)' }),
  qr_payload: Type.String({
    description: `What the badge's QR code carries: ${QR_PREFIX}<event id>:<token>`
  }),
  issued_at: Timestamp('When the token was issued; any earlier token of the attendee no longer checks in')
}, {
  examples: [{
    token: 'q3Hk0yXn2bVtR8wL5mZp7sA1cD4eF6gH9jK0lM2nO3P',
    qr_payload: 'collab-checkin:v1:42:q3Hk0yXn2bVtR8wL5mZp7sA1cD4eF6gH9jK0lM2nO3P',
    issued_at: '2026-11-27T09:00:00.000Z'
  }]
})

export const CheckInByTokenBody = body({
  token: Type.String({
    minLength: 1,
    maxLength: SCANNED_TOKEN_MAX,
    description: `A check-in token, or the whole QR payload (${QR_PREFIX}<event id>:<token>)`
  }),
  method: Type.Optional(Method('scan'))
}, { examples: [{ token: 'collab-checkin:v1:42:q3Hk0yXn2bVtR8wL5mZp7sA1cD4eF6gH9jK0lM2nO3P', method: 'scan' }] })
