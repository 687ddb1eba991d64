/**
 * The bench's callers: bearer tokens signed with the dev key of a data directory for the members and admins the
 * scenarios pick (bench/scenarios.ts), and tokens signed by a key the service does not trust (the 401 path).
 */
import { SignJWT, generateKeyPair } from 'jose'
import { DEV_ISSUER, loadOrCreateDevKeys, signDevToken } from '../src/platform/auth/dev-keys.ts'
import type { Manifest } from './manifest.ts'
import { ADMINS, ADMINS_FROM, MEMBERS_BIG, MEMBERS_OTHER, type Caller } from './scenarios.ts'
import { BIG_TENANT, ORG, TENANTS, tenantId, userId } from './seed.ts'

/** Member tokens of ORG: MEMBERS_BIG users of the largest tenant, MEMBERS_OTHER of each other; more on demand. */
export async function tokenBook (dataDir: string, manifest: Manifest) {
  const keys = await loadOrCreateDevKeys(dataDir)
  const book = new Map<string, string>()
  const sign = async (c: Caller, role = 'member') => {
    book.set(
      `${c.tenant}|${c.user}`,
      await signDevToken(keys, {
        sub: c.user,
        tenant: c.tenant,
        roles: [role],
        orgId: ORG,
        email: `${c.user}@${c.tenant}.example`,
        ttl: 6 * 3600
      })
    )
  }
  for (let u = ADMINS_FROM; u < ADMINS_FROM + ADMINS; u++) await sign({ tenant: BIG_TENANT, user: userId(u) }, 'admin')
  for (let t = 0; t < TENANTS; t++) {
    const tenant = tenantId(t)
    for (let u = 1; u <= (tenant === BIG_TENANT ? MEMBERS_BIG : MEMBERS_OTHER); u++) {
      await sign({ tenant, user: userId(u) })
    }
  }
  for (const p of manifest.patchable) {
    if (!book.has(`${p.tenant}|${p.creator}`)) await sign({ tenant: p.tenant, user: p.creator })
  }
  const { privateKey } = await generateKeyPair('ES256')
  const forged: string[] = []
  for (let i = 0; i < 100; i++) {
    forged.push(await new SignJWT({ tenant_id: tenantId(i % TENANTS), roles: ['member'] })
      .setProtectedHeader({ alg: 'ES256', kid: keys.kid }).setIssuer(DEV_ISSUER).setSubject(userId(1 + i))
      .setExpirationTime('6h').sign(privateKey))
  }
  return {
    forged,
    token: (c: Caller): string => {
      const t = book.get(`${c.tenant}|${c.user}`)
      if (t === undefined) throw new Error(`no token for ${c.tenant}/${c.user}`)
      return t
    }
  }
}
