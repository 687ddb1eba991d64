/**
 * A feed's instances as two independent calendar parsers see them: ical.js (Mozilla's, used by Thunderbird) and
 * node-ical (whose recurrence is rrule-temporal). Each expands every recurring VEVENT with its EXDATE, RDATE and
 * RECURRENCE-ID overrides, and lists single VEVENTs as they are, so a test compares what a calendar app would show
 * with what the API says.
 */
import assert from 'node:assert/strict'
import ICAL from 'ical.js'
import nodeIcal from 'node-ical'

export interface Instance {
  uid: string
  summary: string
  start: Date
  end: Date
  status: string
  /** an override (RECURRENCE-ID) of a recurring VEVENT */
  override: boolean
}

const byStart = (a: Instance, b: Instance): number => a.start.getTime() - b.start.getTime() ||
  a.summary.localeCompare(b.summary)

/** Instances by ical.js: VTIMEZONEs registered, each UID's master related to its exceptions, iterated. */
export function icalJsInstances (raw: string, max = 2000): Instance[] {
  const cal = new ICAL.Component(ICAL.parse(raw))
  for (const tz of cal.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(tz)
  const byUid = new Map<string, ICAL.Component[]>()
  for (const v of cal.getAllSubcomponents('vevent')) {
    const uid = String(v.getFirstPropertyValue('uid'))
    byUid.set(uid, [...(byUid.get(uid) ?? []), v])
  }
  const out: Instance[] = []
  for (const [uid, comps] of byUid) {
    const master = comps.find(c => c.getFirstPropertyValue('recurrence-id') === null)
    const exceptions = comps.filter(c => c !== master)
    if (master === undefined || master.getFirstPropertyValue('rrule') === null) {
      for (const c of comps) {
        const e = new ICAL.Event(c)
        out.push({
          uid,
          summary: e.summary,
          start: e.startDate.toJSDate(),
          end: e.endDate.toJSDate(),
          status: String(c.getFirstPropertyValue('status') ?? ''),
          override: false
        })
      }
      continue
    }
    const event = new ICAL.Event(master)
    for (const x of exceptions) event.relateException(new ICAL.Event(x))
    const it = event.iterator()
    for (let next = it.next(), n = 0; next !== null && next !== undefined && n < max; next = it.next(), n++) {
      const d = event.getOccurrenceDetails(next)
      out.push({
        uid,
        summary: d.item.summary,
        start: d.startDate.toJSDate(),
        end: d.endDate.toJSDate(),
        status: String(d.item.component.getFirstPropertyValue('status') ?? ''),
        override: d.item !== event
      })
    }
  }
  return out.sort(byStart)
}

const text = (v: unknown): string =>
  typeof v === 'object' && v !== null && 'val' in v ? String((v as { val: unknown }).val) : String(v ?? '')

/** Instances by node-ical: `expandRecurringEvent` over the years around the feed, overrides applied. */
export function nodeIcalInstances (
  raw: string, from = new Date('1900-01-01'), to = new Date('2999-12-31')
): Instance[] {
  const parsed = nodeIcal.sync.parseICS(raw)
  const out: Instance[] = []
  for (const c of Object.values(parsed)) {
    if (c === undefined || c.type !== 'VEVENT') continue
    const e = c
    if (e.rrule === undefined) {
      out.push({
        uid: e.uid,
        summary: text(e.summary),
        start: new Date(e.start),
        end: new Date(e.end ?? e.start),
        status: String(e.status ?? ''),
        override: false
      })
      continue
    }
    for (const i of nodeIcal.expandRecurringEvent(e, { from, to })) {
      out.push({
        uid: e.uid,
        summary: text(i.summary),
        start: new Date(i.start),
        end: new Date(i.end),
        status: String(i.event.status ?? ''),
        override: i.isOverride
      })
    }
  }
  return out.sort(byStart)
}

/**
 * The instances of a feed as both parsers agree on them (start, end, title, status and UID; asserted), as ical.js
 * gives them: for a test to read a feed as every calendar app would.
 */
export function agreedInstances (raw: string): Instance[] {
  const key = (i: Instance): string =>
    `${i.start.toISOString()} ${i.end.toISOString()} ${i.summary} ${i.status} ${i.uid}`
  const byIcalJs = icalJsInstances(raw)
  assert.deepEqual(nodeIcalInstances(raw).map(key).sort(), byIcalJs.map(key).sort(), `ical.js and node-ical:\n${raw}`)
  return byIcalJs
}
