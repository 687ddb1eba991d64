/**
 * What an erasure writes in place of a person's values (docs/privacy.md, "Erasure"): pure functions over the JSON and
 * text of the rows that name the person. Two rules, both applied:
 *
 * - a key that holds a person's field (`email`, `first_name`, `phone_primary`, `answers`, `notes` …) is set to null,
 *   whatever its value (the values of a contact merged into this one are known by their keys only);
 * - any string holding one of the person's own values (`PersonalValues`, compared case-insensitively) gets each
 *   occurrence replaced by `[erased]`, so a subject or a body keeps its other words ("[erased] registered").
 *
 * Ids stay: a contact id, an attendee id, an event id are opaque and are what lets sync clients and logs say that
 * something was erased.
 */

export const ERASED = '[erased]'

/** Keys whose value is a person's field, in the payloads, bodies and answers the service writes. */
export const PERSONAL_KEYS: ReadonlySet<string> = new Set([
  'email', 'first_name', 'middle_name', 'last_name', 'nickname', 'name', 'full_name', 'display_name',
  'phone', 'phone_primary', 'phone_secondary', 'phone_work', 'phone_primary_e164', 'phone_secondary_e164',
  'phone_work_e164', 'company', 'job_title', 'address_line1', 'address_line2', 'city', 'state_province',
  'postal_code', 'website', 'avatar_url', 'notes', 'note', 'tags', 'answers', 'recipient'
])

/** The shortest value replaced inside a longer string: shorter ones ("Al", "FR") would hit unrelated words. */
export const MIN_VALUE_LENGTH = 3

/** A person's values, lower-cased, longest first (a longer value is replaced before a part of it). */
export class PersonalValues {
  readonly values: readonly string[]

  constructor (values: Iterable<unknown>) {
    const set = new Set<string>()
    for (const v of values) {
      if (typeof v !== 'string') continue
      const lower = v.trim().toLowerCase()
      if (lower.length >= MIN_VALUE_LENGTH) set.add(lower)
    }
    this.values = [...set].sort((a, b) => b.length - a.length)
  }

  /** `text` with every occurrence of a value replaced by `[erased]` (case-insensitive). */
  scrubText (text: string): string {
    let out = text
    let lower = out.toLowerCase()
    for (const v of this.values) {
      // toLowerCase may change a string's length (rare letters): then the case-insensitive search falls back to a
      // regular expression
      if (lower.length !== out.length) {
        out = out.replace(new RegExp(escapeRegExp(v), 'giu'), ERASED)
        lower = out.toLowerCase()
        continue
      }
      let at = lower.indexOf(v)
      while (at >= 0) {
        out = out.slice(0, at) + ERASED + out.slice(at + v.length)
        lower = out.toLowerCase()
        at = lower.indexOf(v, at + ERASED.length)
      }
    }
    return out
  }

  /** Whether `text` holds one of the values. */
  holds (text: string): boolean {
    const lower = text.toLowerCase()
    return this.values.some(v => lower.includes(v))
  }
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A JSON value with personal keys nulled and personal values replaced (a new value; `value` is not changed). */
export function scrubJson (value: unknown, person: PersonalValues): unknown {
  if (typeof value === 'string') return person.scrubText(value)
  if (Array.isArray(value)) return value.map(v => scrubJson(v, person))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = PERSONAL_KEYS.has(k) && v !== null ? null : scrubJson(v, person)
    }
    return out
  }
  return value
}

/** JSON kept as text (an idempotent answer's body): scrubbed as JSON when it parses, else as text. */
export function scrubJsonText (text: string, person: PersonalValues): string {
  try {
    return JSON.stringify(scrubJson(JSON.parse(text), person))
  } catch {
    return person.scrubText(text)
  }
}

/** The strings of a JSON value (answers of a form: each one is the person's), at any depth. */
export function stringsOf (value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(stringsOf)
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsOf)
  return []
}
