/**
 * What a calendar feed needs of the series its occurrences belong to (the feeds module writes a series as one
 * VEVENT with RRULE, EXDATE and RDATE and its changed occurrences as VEVENTs with RECURRENCE-ID;
 * docs/integrations.md, "Series in feeds"): the series' rule and the positions its occurrences hold. Nothing of a
 * series' content leaves here: a feed shows what its reader may read of the occurrences themselves.
 */
import type { AuthContext } from '../../platform/auth/verify.ts'
import type { Tx } from '../../platform/db/tenant.ts'
import * as occurrences from './series.occurrences.repository.ts'
import * as repo from './series.repository.ts'
import type { SeriesRow } from './series.table.ts'
import { formatRrule, parseRrule, withEnd } from './series.rrule.ts'
import { anchorOnItsRule, positionsOf, rruleOfSeries } from './series.rule.ts'

export interface SeriesSlot {
  start: Date
  end: Date
  /** an added date (RDATE), not one of the rule's */
  added: boolean
}

export interface SeriesRecurrence {
  id: number
  /** the UID an import kept (docs/calendar-import.md): a feed writes it instead of its own */
  uid: string | null
  timezone: string
  /** the RFC 5545 rule without COUNT and UNTIL: a feed ends it at the last occurrence it shows */
  rrule: string
  /** the positions of the series, by `series_index` */
  slots: readonly SeriesSlot[]
}

/**
 * The title of the first occurrence of a series that `auth` may see (`eventVisibleTo`, the rules of every event
 * read): what a series feed is named; undefined when they see none (the series is not theirs to subscribe to).
 */
export async function visibleSeriesTitle (trx: Tx, auth: AuthContext, id: number): Promise<string | undefined> {
  return await occurrences.firstVisibleTitle(trx, auth, id)
}

/** The rule and positions of a series (pure). */
export function recurrenceOf (
  s: Pick<SeriesRow, 'id' | 'timezone' | 'start_dt' | 'end_dt' | 'window_end' | 'rdates' | 'freq' | 'interval' |
  'repeat_days' | 'ends_on' | 'end_count' | 'end_date' | 'rrule'>,
  uid: string | null = null
): SeriesRecurrence {
  const added = new Set(s.rdates.map(d => new Date(d).getTime()))
  // position 0 is the anchor whatever its day: off the rule, it is written as an added date
  if (!anchorOnItsRule(s)) added.add(new Date(s.start_dt).getTime())
  return {
    id: s.id,
    uid,
    timezone: s.timezone,
    rrule: formatRrule(withEnd(parseRrule(rruleOfSeries(s)), null)),
    slots: positionsOf(s).map(p => ({ start: p.start, end: p.end, added: added.has(p.start.getTime()) }))
  }
}

/** The rules and positions of the series `ids` of a tenant (deleted ones too: their occurrences show cancelled). */
export async function seriesRecurrences (
  trx: Tx,
  tenantId: string,
  ids: readonly number[]
): Promise<Map<number, SeriesRecurrence>> {
  const rows = await repo.seriesByIds(trx, tenantId, [...new Set(ids)])
  return new Map(rows.map(s => [s.id, recurrenceOf(s, s.uid)]))
}
