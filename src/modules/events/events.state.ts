/**
 * The template state machine, pure: which moves a template version allows from a state, and
 * whether a move with its payload passes the move's guard. The service turns the verdict into
 * 409 (move not allowed) or 422 (guard refused the payload).
 */
import type { StateMachine, Transition } from './events.templates.ts'

export type TransitionVerdict =
  | { ok: true, transition: Transition }
  | { ok: false, reason: 'no_state_machine' }
  | { ok: false, reason: 'not_allowed', allowed: string[] }
  | { ok: false, reason: 'guard_failed', missing: string[], message: string }

/** The states reachable from `from` in one move, in declaration order. */
export function allowedMoves (machine: StateMachine, from: string | null): string[] {
  const current = from ?? machine.initial
  return machine.transitions.filter(t => t.from === current).map(t => t.to)
}

function present (v: unknown): boolean {
  if (v === undefined || v === null) return false
  if (typeof v === 'string') return v.trim() !== ''
  if (Array.isArray(v)) return v.length > 0
  if (typeof v === 'object') return Object.keys(v).length > 0
  return true
}

/**
 * Decides a move. A null current state counts as the machine's initial state (an event created
 * before its template had a machine).
 *
 * @example
 *   decideTransition(delivery.state_machine, 'in_transit', 'delivered', {}) // guard_failed: proof_of_delivery
 */
export function decideTransition (
  machine: StateMachine | null,
  from: string | null,
  to: string,
  payload: Record<string, unknown>
): TransitionVerdict {
  if (machine === null) return { ok: false, reason: 'no_state_machine' }
  const current = from ?? machine.initial
  const transition = machine.transitions.find(t => t.from === current && t.to === to)
  if (transition === undefined) return { ok: false, reason: 'not_allowed', allowed: allowedMoves(machine, current) }
  if (transition.guard !== undefined) {
    const missing = transition.guard.required_payload.filter(f => !present(payload[f]))
    if (missing.length > 0) return { ok: false, reason: 'guard_failed', missing, message: transition.guard.description }
  }
  return { ok: true, transition }
}
