/**
 * Verifies tenants' audit chains (docs/audit.md, "Verifying the chain"): seals what has committed, then walks each
 * chain from where retention cut it to its head. Prints one JSON line per tenant; exits 1 when a chain is broken,
 * 2 on a usage error.
 *
 *   npm run audit:verify -- --tenant <tenant id> [--tenant <id> …]
 *   npm run audit:verify -- --all
 *
 * Uses DATABASE_URL (or DATABASE_WORKER_URL) / DATA_DIR like the server. With embedded PGlite, stop the server first.
 */
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { auditTenants, sealAudit, verifyAudit } from '../src/platform/audit-chain.ts'
import { createDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'

const USAGE = 'usage: npm run audit:verify -- (--tenant <id>)... | --all\n'

const { values } = parseArgs({
  options: {
    tenant: { type: 'string', multiple: true },
    all: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
const named = values.tenant ?? []
if (values.help || (named.length === 0) === !values.all) {
  process.stderr.write(USAGE)
  process.exit(values.help ? 0 : 2)
}

const config = loadConfig(process.env)
const handle = await createDatabase({
  databaseUrl: config.databaseUrl,
  databaseAppUrl: config.databaseAppUrl,
  databaseWorkerUrl: config.databaseWorkerUrl,
  pgliteDir: path.join(config.dataDir, 'pgdata')
})
try {
  await migrate(handle)
  const tenants = values.all ? await auditTenants(handle.systemDb) : named
  let broken = 0
  for (const tenant of tenants) {
    await sealAudit(handle.systemDb, tenant)
    const result = await verifyAudit(handle.systemDb, tenant)
    if (!result.valid) broken++
    process.stdout.write(`${JSON.stringify({ tenant, ...result })}\n`)
  }
  if (broken > 0) {
    process.stderr.write(`audit chain broken in ${broken} of ${tenants.length} tenant(s)\n`)
    process.exitCode = 1
  }
} catch (err) {
  process.stderr.write(`audit verification failed: ${(err as Error).message}\n`)
  process.exitCode = 1
} finally {
  await handle.close()
}
