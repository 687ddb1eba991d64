/**
 * A migrated PGlite data directory made once per test run and written to a file, from which each suite's PGlite
 * starts (`loadDataDir`: about 0.4 s, where an empty cluster and the migrations take about 1.7 s).
 * scripts/run-tests.mjs runs this file as a script, passes the file on as TEST_PGLITE_TEMPLATE and removes it when
 * the run ends.
 *
 *   node --import tsx test/helpers/pglite-template.ts <file>   writes the dump to the file
 */
import fs from 'node:fs'
import path from 'node:path'
import { createDatabase } from '../../src/platform/db/database.ts'
import { migrate } from '../../src/platform/db/migrate.ts'

export async function writePgliteTemplate (file: string): Promise<void> {
  const handle = await createDatabase({})
  try {
    await migrate(handle)
    const dump = await handle.pglite?.dumpDataDir('none')
    if (dump === undefined) throw new Error('no PGlite to dump')
    fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()))
  } finally {
    await handle.close()
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const file = process.argv[2]
  if (file === undefined) throw new Error('usage: pglite-template.ts <file>')
  await writePgliteTemplate(file)
}
