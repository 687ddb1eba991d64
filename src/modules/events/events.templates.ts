/**
 * The event template registry, in code. A template (`generic`, `announcement`, `meeting`,
 * `delivery`) has numbered versions; an event pins one (`template_version`), so a later version
 * never changes the rules of existing events. A version declares its state machine (or none),
 * the attachment kinds, participant roles and activity kinds it allows.
 *
 * Pure: no I/O. Other modules check kinds with `templateAllows`.
 */

/** A guard inspects the transition payload: every listed field must be present and non-empty. */
export interface TransitionGuard {
  required_payload: readonly string[]
  description: string
}

export interface Transition {
  from: string
  to: string
  guard?: TransitionGuard
}

export interface StateMachine {
  initial: string
  states: readonly string[]
  /** states with no way out */
  final: readonly string[]
  transitions: readonly Transition[]
}

export interface TemplateVersion {
  id: string
  version: number
  name: string
  description: string
  state_machine: StateMachine | null
  allowed_attachment_kinds: readonly string[]
  participant_roles: readonly string[]
  /** kinds a client may append with POST /events/{id}/activity, besides the generic ones */
  activity_kinds: readonly string[]
  /** what `priority` means for this template, when it uses it */
  priority_semantics: string | null
}

/** Activity kinds every template accepts from clients. */
export const GENERIC_ACTIVITY_KINDS = ['note', 'comment'] as const

/** Activity kinds only the service writes (lifecycle, drafts, transitions). */
export const SYSTEM_ACTIVITY_KINDS = [
  'created', 'edited', 'published', 'unpublished', 'archived', 'deleted', 'draft_started', 'draft_discarded',
  'state_changed', 'space_added', 'space_removed', 'attendee.checked_in', 'attendee.check_in_undone',
  'attendee.checked_out'
] as const

const BASE_ATTACHMENTS = ['image', 'document'] as const

const proofOfDelivery: TransitionGuard = {
  required_payload: ['proof_of_delivery'],
  description: 'payload.proof_of_delivery (a signature, photo or document reference) is required'
}
const failureReason: TransitionGuard = {
  required_payload: ['failure_reason'],
  description: 'payload.failure_reason is required'
}

const deliveryV1: StateMachine = {
  initial: 'pending',
  states: ['pending', 'in_transit', 'delivered', 'failed'],
  final: ['delivered'],
  transitions: [
    { from: 'pending', to: 'in_transit' },
    { from: 'in_transit', to: 'delivered', guard: proofOfDelivery },
    { from: 'in_transit', to: 'failed', guard: failureReason },
    { from: 'failed', to: 'in_transit' }
  ]
}

const deliveryV2: StateMachine = {
  initial: 'pending',
  states: ['pending', 'in_transit', 'delivered', 'failed', 'returned', 'cancelled'],
  final: ['delivered', 'returned', 'cancelled'],
  transitions: [
    { from: 'pending', to: 'in_transit' },
    { from: 'pending', to: 'cancelled' },
    { from: 'in_transit', to: 'delivered', guard: proofOfDelivery },
    { from: 'in_transit', to: 'failed', guard: failureReason },
    { from: 'in_transit', to: 'returned' },
    { from: 'failed', to: 'in_transit' },
    { from: 'failed', to: 'returned' }
  ]
}

const meetingV1: StateMachine = {
  initial: 'scheduled',
  states: ['scheduled', 'in_progress', 'completed', 'cancelled'],
  final: ['completed', 'cancelled'],
  transitions: [
    { from: 'scheduled', to: 'in_progress' },
    { from: 'scheduled', to: 'cancelled' },
    { from: 'in_progress', to: 'completed' },
    { from: 'in_progress', to: 'cancelled' }
  ]
}

/** Every version of every template, oldest first per template. */
export const TEMPLATE_REGISTRY: readonly TemplateVersion[] = [
  {
    id: 'generic',
    version: 1,
    name: 'Generic event',
    description: 'An event with no state machine.',
    state_machine: null,
    allowed_attachment_kinds: BASE_ATTACHMENTS,
    participant_roles: ['audience', 'organizer'],
    activity_kinds: ['attachment_added'],
    priority_semantics: null
  },
  {
    id: 'announcement',
    version: 1,
    name: 'Announcement',
    description: 'A message to the members of the spaces it belongs to.',
    state_machine: null,
    allowed_attachment_kinds: BASE_ATTACHMENTS,
    participant_roles: ['audience', 'author'],
    activity_kinds: ['attachment_added', 'acknowledged'],
    priority_semantics: 'higher is more urgent; 0 is normal'
  },
  {
    id: 'meeting',
    version: 1,
    name: 'Meeting',
    description: 'A meeting that is scheduled, held and completed or cancelled.',
    state_machine: meetingV1,
    allowed_attachment_kinds: [...BASE_ATTACHMENTS, 'minutes'],
    participant_roles: ['organizer', 'attendee', 'note_taker'],
    activity_kinds: ['attachment_added', 'agenda_item', 'minutes_recorded'],
    priority_semantics: null
  },
  {
    id: 'delivery',
    version: 1,
    name: 'Delivery',
    description: 'A shipment from pending through in transit to delivered (proof of delivery required).',
    state_machine: deliveryV1,
    allowed_attachment_kinds: [...BASE_ATTACHMENTS, 'signature', 'proof_of_delivery'],
    participant_roles: ['sender', 'recipient', 'courier'],
    activity_kinds: ['attachment_added', 'location_update', 'delivery_attempt'],
    priority_semantics: 'higher is delivered first; 0 is normal'
  },
  {
    id: 'delivery',
    version: 2,
    name: 'Delivery',
    description:
      'A shipment from pending through in transit to delivered (proof of delivery required), failed, ' +
      'returned or cancelled.',
    state_machine: deliveryV2,
    allowed_attachment_kinds: [...BASE_ATTACHMENTS, 'signature', 'proof_of_delivery'],
    participant_roles: ['sender', 'recipient', 'courier', 'vendor'],
    activity_kinds: ['attachment_added', 'location_update', 'delivery_attempt', 'return_requested'],
    priority_semantics: 'higher is delivered first; 0 is normal'
  }
]

export const DEFAULT_TEMPLATE = 'generic'

/** Template ids in registry order. */
export const TEMPLATE_IDS: readonly string[] = [...new Set(TEMPLATE_REGISTRY.map(t => t.id))]

export function templateVersions (id: string): TemplateVersion[] {
  return TEMPLATE_REGISTRY.filter(t => t.id === id).sort((a, b) => a.version - b.version)
}

export function latestTemplate (id: string): TemplateVersion | undefined {
  return templateVersions(id).at(-1)
}

export function findTemplate (id: string, version: number): TemplateVersion | undefined {
  return TEMPLATE_REGISTRY.find(t => t.id === id && t.version === version)
}

/**
 * Whether a template version allows a kind of attachment, participant role or client activity.
 * Unknown templates or versions (legacy version 0 included) fall back to the generic template.
 *
 * @example
 *   templateAllows('delivery', 2, 'attachment', 'proof_of_delivery') // true
 */
export function templateAllows (
  id: string,
  version: number,
  what: 'attachment' | 'participant_role' | 'activity',
  kind: string
): boolean {
  const t = findTemplate(id, version) ?? latestTemplate(id) ?? latestTemplate(DEFAULT_TEMPLATE)
  if (t === undefined) return false
  switch (what) {
    case 'attachment':
      return t.allowed_attachment_kinds.includes(kind)
    case 'participant_role':
      return t.participant_roles.includes(kind)
    case 'activity':
      return (GENERIC_ACTIVITY_KINDS as readonly string[]).includes(kind) || t.activity_kinds.includes(kind)
  }
}
