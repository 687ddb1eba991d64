/**
 * Occurrence rows from the rule: the content new occurrences share, making the live rows match the
 * rule (kept, moved, retimed, removed, added) and cascading the series' content onto them. Which rows
 * and positions is decided in series.rule.ts; the statements are series.occurrences.repository.ts.
 */
import type { Tx } from '../../platform/db/tenant.ts'
import {
  type EventRow, type EventUpdate, findTemplate, latestTemplate, tellPublishedChanges
} from '../events/index.ts'
import * as occurrences from './series.occurrences.repository.ts'
import { matchRows, syncTargets, withoutStorageKeys, type RemovedOccurrence } from './series.rule.ts'
import type { SeriesRow } from './series.table.ts'

/** What the new occurrences of a series share: its content (the template's initial state, the metadata's JSON). */
export function occurrenceContent (s: SeriesRow): occurrences.OccurrenceContent {
  const template = findTemplate(s.template, s.template_version) ?? latestTemplate(s.template)
  return {
    org_id: s.org_id,
    creator_id: s.creator_id,
    title: s.title,
    description: s.description,
    address: s.address,
    latitude: s.latitude,
    longitude: s.longitude,
    timezone: s.timezone,
    keywords: s.keywords,
    metadata: JSON.stringify(withoutStorageKeys(s.metadata)),
    visibility: s.visibility,
    status: s.status,
    published_at: s.status === 'published' ? (s.published_at ?? new Date()) : null,
    version: s.version,
    template: s.template,
    template_version: s.template_version,
    state: template?.state_machine?.initial ?? null,
    // a cover belongs to one event: a new occurrence has none (PUT /events/{id}/cover gives it its own)
    cover_image_key: null,
    series_id: s.id
  }
}

export interface SyncResult {
  rows: EventRow[]
  removed: RemovedOccurrence[]
  added: number
}

/**
 * Makes the live occurrences of `s` match its rule from `from` on (`old`: the series before the
 * change; matchRows says which row keeps, takes or loses which position). Unmatched rows are
 * soft-deleted and reported; new positions get rows. Only rows from the first slot at or after
 * `from` are read and returned (`rows`); at most MAX_CREATE_PER_REQUEST positions may be wanted
 * (the callers cap rule and window first).
 */
export async function syncOccurrences (trx: Tx, s: SeriesRow, old: SeriesRow, from: Date): Promise<SyncResult> {
  const tenantId = s.tenant_id
  const targets = syncTargets(s, old, from)
  const rows = await occurrences.lockOccurrenceRows(trx, tenantId, s.id, targets.fromIndex)
  const { removed, moves, added } = matchRows(s, old, targets, rows, from)
  // the rows are locked: the live rows after the writes are the locked ones less the removed,
  // the moved ones as written and the new ones (no second read)
  await occurrences.deleteOccurrences(trx, tenantId, removed.map(r => r.id))
  const written = await occurrences.moveOccurrences(trx, tenantId, moves)
  const inserted = await occurrences.insertOccurrences(trx, tenantId, occurrenceContent(s), added)
  // guests of an occurrence that moved are told (docs/guests.md)
  await tellPublishedChanges(trx, written)
  const live = new Map(rows.map(r => [r.id, r]))
  for (const r of removed) live.delete(r.id)
  for (const r of [...written, ...inserted]) live.set(r.id, r)
  return { rows: [...live.values()].sort(bySeriesIndex), removed, added: inserted.length }
}

/** The order of lockOccurrenceRows: series_index (nulls last), then id. */
function bySeriesIndex (a: EventRow, b: EventRow): number {
  const ia = a.series_index ?? Infinity
  const ib = b.series_index ?? Infinity
  return ia !== ib ? ia - ib : a.id - b.id
}

/**
 * Writes the series' content onto its occurrences; title, description and metadata skip overridden ones; covers are
 * never written.
 */
export async function cascadeContent (trx: Tx, s: SeriesRow, fields: ReadonlySet<string>): Promise<void> {
  const all: EventUpdate = {}
  for (const f of ['address', 'latitude', 'longitude', 'keywords', 'visibility'] as const) {
    if (fields.has(f)) (all as Record<string, unknown>)[f] = s[f]
  }
  if (Object.keys(all).length > 0) await occurrences.updateLiveOccurrences(trx, s.tenant_id, s.id, all)
  if (fields.has('title')) await occurrences.setTitleUnlessOverridden(trx, s.tenant_id, s.id, s.title)
  if (fields.has('description')) {
    await occurrences.setDescriptionUnlessOverridden(trx, s.tenant_id, s.id, s.description)
  }
  if (fields.has('metadata')) {
    await occurrences.setSharedMetadata(trx, s.tenant_id, s.id, JSON.stringify(withoutStorageKeys(s.metadata)))
  }
  // guests of the occurrences whose place or title changed are told (docs/guests.md)
  if (fields.has('address') || fields.has('title')) {
    await tellPublishedChanges(trx, await occurrences.liveOccurrenceRows(trx, s.tenant_id, s.id))
  }
}
