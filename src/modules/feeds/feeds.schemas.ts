/** Wire shapes of the calendar feeds and their tokens (docs/integrations.md, "Calendar feeds (RFC 5545)"). */
import { Type, type Static } from '@sinclair/typebox'
import { body, IdParams, IntId, model, Nullable, StringEnum, Timestamp } from '../../platform/http/schema.ts'

export const FEED_SCOPES = ['space', 'personal', 'series'] as const

/** What a feed token reads, when it was made and last used; never the token itself. */
const tokenFields = {
  id: Type.Integer({ description: 'Id of the feed token' }),
  scope: StringEnum(FEED_SCOPES, {
    description: 'space: the feed of one space; personal: the events the caller created, manages or attends; ' +
      'series: the occurrences of one series'
  }),
  space_id: Nullable(Type.Integer({ description: 'The space of a `space` token' })),
  series_id: Nullable(Type.Integer({ description: 'The series of a `series` token' })),
  created_at: Timestamp('When the token was made (or last rotated: the id stays)'),
  last_used_at: Nullable(Timestamp('When a feed was last read with it (to the hour)'))
}

export const FeedToken = model('FeedToken', tokenFields, {
  examples: [{
    id: 7, scope: 'space', space_id: 42, series_id: null, created_at: '2026-11-01T09:00:00Z', last_used_at: null
  }]
})

export const CreatedFeedToken = model('CreatedFeedToken', {
  ...tokenFields,
  token: Type.String({ description: 'The secret, shown this once: only its SHA-256 is kept' }),
  url: Type.String({ description: 'The feed address with the token, for a calendar app to subscribe to' })
}, {
  examples: [{
    id: 7,
    scope: 'personal',
    space_id: null,
    series_id: null,
    created_at: '2026-11-01T09:00:00Z',
    last_used_at: null,
    token: 'q4c1mX3v…',
    url: 'https://collab.example.org/api/v1/me/calendar.ics?token=q4c1mX3v…'
  }]
})

export const FeedTokenList = model('FeedTokenList', {
  items: Type.Array(FeedToken, { description: "The caller's live feed tokens, oldest first" })
})

export const CreateFeedTokenBody = body({
  scope: StringEnum(FEED_SCOPES, { description: 'space (then `space_id`), personal, or series (then `series_id`)' }),
  space_id: Type.Optional(IntId),
  series_id: Type.Optional(IntId)
}, { examples: [{ scope: 'space', space_id: 42 }, { scope: 'personal' }, { scope: 'series', series_id: 7 }] })
export type CreateFeedTokenBody = Static<typeof CreateFeedTokenBody>

export const FeedTokenParams = IdParams

/** A feed token in a feed's address: base64url of 32 random bytes (43 characters). */
const TokenParam = Type.String({ minLength: 1, maxLength: 200, description: 'The feed token' })

export const SpaceFeedQuery = Type.Object({
  token: Type.Optional(TokenParam)
}, { additionalProperties: false })

export const PersonalFeedQuery = Type.Object({ token: TokenParam }, { additionalProperties: false })

export const SeriesFeedQuery = PersonalFeedQuery

export const SeriesFeedParams = IdParams
