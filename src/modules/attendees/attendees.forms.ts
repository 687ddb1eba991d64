/**
 * Registration questions (docs/guests.md, "Questions"): the form an organiser defines per event or per series (an
 * occurrence follows its series' form while it has none of its own), what a question may be, and the server-side
 * validation of a guest's answers, whose refusals name the question (`body.answers.<id>`) in the guest's language.
 *
 * A form changes by versions: each PUT stores a new version, the earlier ones stay. An answer is stored with the
 * version it answered, so a removed question's answers are kept (and exported); a question id keeps its type across
 * versions (a changed question takes a new id), so no stored answer ever means something else.
 */
import { Type, type Static } from '@sinclair/typebox'
import { parsePhoneNumberFromString } from 'libphonenumber-js/min'
import { ApiError, fieldError, type ErrorDetail } from '../../platform/http/errors.ts'
import { body, StringEnum } from '../../platform/http/schema.ts'
import { message, type Locale, type MessageKey } from '../../platform/i18n/i18n.ts'
import { isEmailAddress } from '../../platform/notifications/notifications.ts'

export const QUESTION_TYPES = [
  'short_text', 'long_text', 'single_choice', 'multiple_choice', 'checkbox', 'number', 'date', 'phone', 'email'
] as const
export type QuestionType = typeof QUESTION_TYPES[number]

export const QUESTIONS_MAX = 50
export const OPTIONS_MAX = 50
/** The longest text a text answer may hold when the question sets no limit. */
const TEXT_MAX: Record<'short_text' | 'long_text', number> = { short_text: 200, long_text: 5000 }
const KEY = '^[a-z0-9][a-z0-9_-]{0,39}$'

export const Question = Type.Object({
  id: Type.String({ pattern: KEY, description: 'Stable across versions; its answers keep it' }),
  type: StringEnum(QUESTION_TYPES, {
    description: 'short_text, long_text, single_choice, multiple_choice, checkbox (consent), number, date, phone, email'
  }),
  label: Type.String({ minLength: 1, maxLength: 300 }),
  help: Type.Optional(Type.String({ maxLength: 1000 })),
  required: Type.Optional(Type.Boolean({ description: 'A checkbox that is required must be ticked (consent)' })),
  min_length: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000 })),
  max_length: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000 })),
  min: Type.Optional(Type.Number({ description: 'number: the smallest value' })),
  max: Type.Optional(Type.Number({ description: 'number: the largest value' })),
  min_date: Type.Optional(Type.String({ format: 'date' })),
  max_date: Type.Optional(Type.String({ format: 'date' })),
  options: Type.Optional(Type.Array(Type.Object({
    id: Type.String({ pattern: KEY }),
    label: Type.String({ minLength: 1, maxLength: 200 })
  }, { additionalProperties: false }), { minItems: 1, maxItems: OPTIONS_MAX })),
  consent_text: Type.Optional(Type.String({
    minLength: 1, maxLength: 2000, description: 'checkbox: the text agreed to, kept with each answer as answered'
  }))
}, { additionalProperties: false })
export type Question = Static<typeof Question>

/** A form as the OpenAPI document shows it. */
export const FORM_EXAMPLE: Question[] = [
  {
    id: 'diet',
    type: 'single_choice',
    label: 'Diet',
    required: true,
    options: [{ id: 'any', label: 'Anything' }, { id: 'veg', label: 'Vegetarian' }]
  },
  { id: 'photos', type: 'checkbox', label: 'Photos', consent_text: 'I agree to be photographed.' }
]

export const PutFormBody = body({
  questions: Type.Array(Question, { maxItems: QUESTIONS_MAX, description: `At most ${QUESTIONS_MAX}; [] removes all` })
}, {
  examples: [{ questions: FORM_EXAMPLE }]
})

const CHOICE = new Set<QuestionType>(['single_choice', 'multiple_choice'])

/**
 * Refusals of a form (400 naming `body.questions[i].<field>`): ids repeated, options on a question that takes none
 * or missing on a choice, bounds the wrong way round, a question id whose type differs from an earlier version's.
 */
export function formErrors (questions: readonly Question[], earlierTypes: ReadonlyMap<string, string>): ErrorDetail[] {
  const errors: ErrorDetail[] = []
  const seen = new Set<string>()
  questions.forEach((q, i) => {
    const at = (field: string) => `body.questions[${i}].${field}`
    if (seen.has(q.id)) errors.push(fieldError(at('id'), 'the id of another question of the form', q.id))
    seen.add(q.id)
    const before = earlierTypes.get(q.id)
    if (before !== undefined && before !== q.type) {
      errors.push(fieldError(at('type'),
        `question "${q.id}" was a ${before}: a question keeps its type (give a changed question a new id)`, q.type))
    }
    if (CHOICE.has(q.type) && q.options === undefined) errors.push(fieldError(at('options'), 'a choice needs options'))
    if (!CHOICE.has(q.type) && q.options !== undefined) {
      errors.push(fieldError(at('options'), `a ${q.type} question takes no options`))
    }
    const optionIds = new Set<string>()
    q.options?.forEach((o, j) => {
      if (optionIds.has(o.id)) errors.push(fieldError(`${at('options')}[${j}].id`, 'repeated option id', o.id))
      optionIds.add(o.id)
    })
    if (q.consent_text !== undefined && q.type !== 'checkbox') {
      errors.push(fieldError(at('consent_text'), 'only a checkbox has a consent text'))
    }
    if (q.min_length !== undefined && q.max_length !== undefined && q.min_length > q.max_length) {
      errors.push(fieldError(at('min_length'), 'above max_length', q.min_length))
    }
    if (q.min !== undefined && q.max !== undefined && q.min > q.max) {
      errors.push(fieldError(at('min'), 'above max', q.min))
    }
    if (q.min_date !== undefined && q.max_date !== undefined && q.min_date > q.max_date) {
      errors.push(fieldError(at('min_date'), 'after max_date', q.min_date))
    }
  })
  return errors
}

/** A stored answer: the value as validated (a consent also keeps the text agreed to). */
export type StoredAnswer = string | number | boolean | string[] | { value: boolean, text: string }

const isDate = (v: string): boolean => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) return false
  const d = new Date(`${v}T00:00:00Z`)
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v
}

/** One answer checked against its question: the value to store, or the refusal's message key and values. */
type Checked = { value: StoredAnswer } | { key: MessageKey, values?: Record<string, number> }

function checkAnswer (q: Question, raw: unknown): Checked {
  switch (q.type) {
    case 'short_text':
    case 'long_text':
    case 'email':
    case 'phone':
    case 'date': {
      if (typeof raw !== 'string') return { key: 'error.required' }
      const text = raw.trim()
      if (q.type === 'email') return isEmailAddress(text) ? { value: text } : { key: 'error.email_invalid' }
      if (q.type === 'phone') {
        const phone = parsePhoneNumberFromString(text)
        return phone?.isValid() === true ? { value: phone.number } : { key: 'error.phone_invalid' }
      }
      if (q.type === 'date') {
        const inRange = (q.min_date === undefined || text >= q.min_date) &&
          (q.max_date === undefined || text <= q.max_date)
        return isDate(text) && inRange ? { value: text } : { key: 'error.date_invalid' }
      }
      const max = q.max_length ?? TEXT_MAX[q.type]
      if ([...text].length > max) return { key: 'error.too_long', values: { max } }
      if (q.min_length !== undefined && [...text].length < q.min_length) {
        return { key: 'error.too_short', values: { min: q.min_length } }
      }
      return { value: text }
    }
    case 'number': {
      const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw
      if (typeof n !== 'number' || !Number.isFinite(n)) return { key: 'error.number_range', values: range(q) }
      if ((q.min !== undefined && n < q.min) || (q.max !== undefined && n > q.max)) {
        return { key: 'error.number_range', values: range(q) }
      }
      return { value: n }
    }
    case 'checkbox': {
      const ticked = raw === true || raw === 'true' || raw === 'on'
      if (q.required === true && !ticked) return { key: 'error.consent_required' }
      return { value: q.consent_text !== undefined ? { value: ticked, text: q.consent_text } : ticked }
    }
    case 'single_choice': {
      const ids = new Set(q.options?.map(o => o.id))
      return typeof raw === 'string' && ids.has(raw) ? { value: raw } : { key: 'error.choice_invalid' }
    }
    case 'multiple_choice': {
      const ids = new Set(q.options?.map(o => o.id))
      const picked = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : undefined
      if (picked === undefined || picked.some(p => typeof p !== 'string' || !ids.has(p))) {
        return { key: 'error.choice_invalid' }
      }
      return { value: [...new Set(picked as string[])] }
    }
  }
}

const range = (q: Question) => ({ min: q.min ?? -1e9, max: q.max ?? 1e9 })

/** Whether a raw answer is empty: absent, null, blank text, no choice, an unticked box. */
const isEmpty = (raw: unknown): boolean =>
  raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '') ||
  (Array.isArray(raw) && raw.length === 0) || raw === false

/**
 * The answers to store for `questions` from what a guest sent, or a 400 naming every refused answer
 * (`body.answers.<id>`) in the guest's language: a required question unanswered, a value its question refuses, an
 * answer to a question the form does not have. An empty optional answer is left out.
 */
export function validateAnswers (
  questions: readonly Question[],
  sent: Readonly<Record<string, unknown>>,
  locale: Locale
): Record<string, StoredAnswer> {
  const errors: ErrorDetail[] = []
  const stored: Record<string, StoredAnswer> = {}
  const known = new Set(questions.map(q => q.id))
  for (const id of Object.keys(sent)) {
    if (!known.has(id)) errors.push(fieldError(`body.answers.${id}`, message(locale, 'error.unknown_question')))
  }
  for (const q of questions) {
    // own keys only: a question id such as `constructor` is no inherited property
    const raw = Object.hasOwn(sent, q.id) ? sent[q.id] : undefined
    if (isEmpty(raw) && !(q.type === 'checkbox' && q.consent_text !== undefined && raw === false)) {
      if (q.required === true) {
        const key: MessageKey = q.type === 'checkbox' ? 'error.consent_required' : 'error.required'
        errors.push(fieldError(`body.answers.${q.id}`, message(locale, key)))
      }
      continue
    }
    const r = checkAnswer(q, raw)
    if ('value' in r) stored[q.id] = r.value
    else errors.push(fieldError(`body.answers.${q.id}`, message(locale, r.key, r.values)))
  }
  if (errors.length > 0) {
    const [first] = errors
    throw new ApiError(400, first?.message ?? message(locale, 'error.required'), errors.slice(0, 100))
  }
  return stored
}

/** An answer as one CSV cell: texts and numbers as they are, choices by id (`;` between), a box as true or false. */
export function answerCell (a: unknown): string | number | null {
  if (a === undefined || a === null) return null
  if (Array.isArray(a)) return a.join(';')
  if (typeof a === 'object') return String((a as { value?: unknown }).value === true)
  if (typeof a === 'boolean') return String(a)
  return a as string | number
}
