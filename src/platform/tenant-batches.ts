/**
 * Work across tenants, one tenant at a time. The workers that poll a table of every tenant (the
 * automation dispatcher, notification delivery) first find, without locks, which tenants have
 * work, then claim each tenant's rows with `tenant_id = $1 … for update skip locked` in a
 * transaction of its own: a lock that names one tenant is routed to one shard on Citus (a lock
 * over every tenant is refused there), and one tenant's failure neither rolls back nor holds up
 * another's.
 */

/** Why some tenants' work failed; `result` holds what the other tenants' committed work did. */
export class TenantWorkError<R> extends AggregateError {
  constructor (
    readonly failures: ReadonlyArray<{ tenantId: string; error: unknown }>,
    readonly result: R,
    what: string
  ) {
    const first = failures[0]?.error
    const reason = first instanceof Error ? first.message : String(first)
    super(
      failures.map(f => f.error),
      `${what} failed for ${failures.length === 1 ? 'tenant' : `${failures.length} tenants`} ` +
      `${failures.map(f => f.tenantId).join(', ')}: ${reason}${failures.length > 1 ? ' (and more)' : ''}`
    )
    this.name = 'TenantWorkError'
  }
}

/**
 * Shares a budget of rows among tenants: `claim(tenantId, limit)` handles at most `limit` rows of
 * one tenant and answers how many it handled. Each tenant in turn gets an equal part of what is
 * left (so one tenant's backlog cannot take the whole budget while another waits); a tenant that
 * used its whole part may have more, and gets another turn while budget is left (so a call still
 * handles up to `budget` rows when only some tenants have work). At most `budget` rows in all.
 * A tenant whose claim throws gets no further turn; the others go on. Answers the failures.
 */
export async function shareAmongTenants (
  tenants: readonly string[],
  budget: number,
  claim: (tenantId: string, limit: number) => Promise<number>
): Promise<Array<{ tenantId: string; error: unknown }>> {
  const failures: Array<{ tenantId: string; error: unknown }> = []
  let remaining = budget
  let open = [...new Set(tenants)]
  while (remaining > 0 && open.length > 0) {
    const more: string[] = []
    for (const [i, tenantId] of open.entries()) {
      if (remaining <= 0) break
      const limit = Math.ceil(remaining / (open.length - i))
      try {
        const handled = await claim(tenantId, limit)
        remaining -= Math.min(handled, limit)
        if (handled >= limit) more.push(tenantId)
      } catch (error) {
        failures.push({ tenantId, error })
      }
    }
    open = more
  }
  return failures
}
