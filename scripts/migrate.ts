/** Applies pending migrations to the configured database (the server also does this at start). */
import path from 'node:path'
import { loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'

const config = loadConfig(process.env)
const handle = await createDatabase({ databaseUrl: config.databaseUrl, pgliteDir: path.join(config.dataDir, 'pgdata') })
try {
  const result = await migrate(handle)
  for (const name of result.applied) process.stdout.write(`applied ${name}\n`)
  process.stdout.write(`${result.applied.length} applied, ${result.skipped} already applied\n`)
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`)
  process.exitCode = 1
} finally {
  await handle.close()
}
