import type { Generated, Selectable } from 'kysely'
import type { Timestamp } from '../../platform/db/platform.table.ts'

export type FeedScope = 'space' | 'personal' | 'series'

/** A calendar feed token (migrations/0024_feed_tokens.sql): only the SHA-256 of the token is stored. */
export interface FeedTokensTable {
  tenant_id: string
  id: Generated<number>
  user_id: string
  scope: FeedScope
  space_id: number | null
  /** the series of a `series` token (migration 0042) */
  series_id: number | null
  org_id: string | null
  token_hash: string
  created_at: Timestamp
  last_used_at: Timestamp | null
  revoked_at: Timestamp | null
}

export type FeedTokenRow = Selectable<FeedTokensTable>
export type NewFeedToken =
  Pick<FeedTokensTable, 'tenant_id' | 'user_id' | 'scope' | 'space_id' | 'series_id' | 'org_id' | 'token_hash'>

// a type, not an interface: Kysely's withTables asks for an index signature
export type FeedsTables = { feed_tokens: FeedTokensTable }
