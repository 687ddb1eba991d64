/**
 * The domain events of series (docs/series.md, "Domain events"), one builder per topic, for
 * `emit(trx, …)`: aggregate type `series`, the caller as actor; every payload carries the series'
 * id, title, status and template, then what the topic adds.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { DomainEvent } from '../../platform/outbox.ts'
import type { Scope } from './series.rule.ts'
import type { SeriesRow } from './series.table.ts'

type Caller = Pick<AuthContext, 'tenantId' | 'userId'>
type Series = Pick<SeriesRow, 'id' | 'title' | 'status' | 'template'>

function seriesEvent (auth: Caller, s: Series, topic: string, extra: Record<string, unknown>): DomainEvent {
  return {
    tenantId: auth.tenantId,
    topic,
    aggregateType: 'series',
    aggregateId: s.id,
    actorId: auth.userId,
    payload: { series_id: s.id, title: s.title, status: s.status, template: s.template, ...extra }
  }
}

/** A series made from its anchor, with the occurrences materialised. */
export const seriesCreated = (auth: Caller, s: Series, anchorEventId: number, occurrences: number) =>
  seriesEvent(auth, s, 'series.created', { anchor_event_id: anchorEventId, occurrences })

/** A series patch: the columns written, the occurrences removed (ids) and how many were added. */
export const seriesUpdated = (auth: Caller, s: Series, fields: string[], removed: number[], added: number) =>
  seriesEvent(auth, s, 'series.updated', { fields, removed_occurrences: removed, added_occurrences: added })

/** `next`, split from series `fromSeriesId` at position `atIndex`. */
export const seriesSplit = (auth: Caller, next: Series, fromSeriesId: number, atIndex: number) =>
  seriesEvent(auth, next, 'series.split', { from_series_id: fromSeriesId, at_index: atIndex })

/** Occurrences deleted by scope, from the addressed one (`eventId` at position `seriesIndex`). */
export const occurrencesDeleted = (auth: Caller, s: Series, scope: Scope, eventId: number, seriesIndex: number) =>
  seriesEvent(auth, s, 'series.occurrences_deleted', { scope, event_id: eventId, series_index: seriesIndex })

export const seriesPublished = (auth: Caller, s: Series & Pick<SeriesRow, 'version'>, notify: boolean) =>
  seriesEvent(auth, s, 'series.published', { version: s.version, notify })

export const managerInvited = (auth: Caller, s: Series, email: string) =>
  seriesEvent(auth, s, 'series.manager_invited', { email })
