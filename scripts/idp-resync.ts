/**
 * Resyncs users from an export of the identity provider (docs/identity.md, "Resync"): creates or
 * updates profiles and states through the same rules as the webhook; with --remove-missing also
 * marks removed the users of each exported tenant that the export no longer lists.
 *
 *   npx tsx scripts/idp-resync.ts users.json [--remove-missing] [--dry-run]
 *
 * Uses DATABASE_URL / DATA_DIR like the server. With embedded PGlite, stop the server first.
 */
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { withAuditActor } from '../src/platform/audit.ts'
import { createDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { ExportError, parseExport, resyncUsers } from '../src/modules/identity/identity.idp-resync.ts'

const USAGE = 'usage: npx tsx scripts/idp-resync.ts <users.json> [--remove-missing] [--dry-run]\n'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'remove-missing': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
const file = positionals[0]
if (values.help || file === undefined || positionals.length > 1) {
  process.stderr.write(USAGE)
  process.exit(values.help ? 0 : 2)
}

let users
try {
  users = parseExport(JSON.parse(fs.readFileSync(file, 'utf8')))
} catch (err) {
  const problems = err instanceof ExportError ? err.problems : [(err as Error).message]
  for (const p of problems) process.stderr.write(`${file}: ${p}\n`)
  process.exit(1)
}

const config = loadConfig(process.env)
const handle = await createDatabase({
  databaseUrl: config.databaseUrl,
  databaseAppUrl: config.databaseAppUrl,
  pgliteDir: path.join(config.dataDir, 'pgdata')
})
try {
  await migrate(handle)
  // the provider's changes, as its webhook's are (docs/audit.md)
  const report = await withAuditActor({ kind: 'identity_provider', id: null, via: 'resync' }, async () =>
    await resyncUsers(handle.db, users, { removeMissing: values['remove-missing'], dryRun: values['dry-run'] }))
  process.stdout.write(`${JSON.stringify({ users: users.length, ...report })}\n`)
} catch (err) {
  process.stderr.write(`resync failed: ${(err as Error).message}\n`)
  process.exitCode = 1
} finally {
  await handle.close()
}
