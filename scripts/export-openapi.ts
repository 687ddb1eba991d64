/**
 * Writes the served OpenAPI document to docs/openapi.json, which CI lints (`npm run openapi:lint`, redocly.yaml);
 * `openApiDocument()` also feeds `npm run client:generate`.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/platform/db/database.ts'

export async function openApiDocument (): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-openapi-'))
  const database = await createDatabase({})
  const { app } = await buildApp(
    loadConfig({ DATA_DIR: dataDir, BASE_URL: 'http://localhost:8080', WORKERS: 'false' }),
    { database, logger: false }
  )
  await app.ready()
  const doc = JSON.stringify(app.swagger(), null, 2) + '\n'
  await app.close()
  await database.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
  return doc
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  fs.writeFileSync('docs/openapi.json', await openApiDocument())
  process.stdout.write('wrote docs/openapi.json\n')
}
