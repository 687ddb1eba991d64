/**
 * `npm run build`: the service as one ES module, dist/server.js, bundled by esbuild with the
 * libraries it loads at every start (Fastify, Kysely, TypeBox, Ajv, pg, jose …). Loading one file
 * instead of some 1 500 modules cuts the start by half a second (docs/performance.md). Packages that
 * read files beside their own code at run time (PGlite's WASM, Swagger UI's assets, pino's worker
 * transports) or that load only when configured stay outside and are loaded from node_modules.
 *
 * Usage: node scripts/build.mjs [outdir]   (default dist/; the entry is <outdir>/server.js)
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import * as esbuild from 'esbuild'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export const EXTERNAL = [
  '@electric-sql/pglite', '@electric-sql/pglite/*', // WASM and data files read from its own folder
  '@fastify/swagger-ui', // serves its static assets from its own folder
  'pino', 'pino-pretty', 'thread-stream', // transports run in worker threads by file name
  'pg-native', // optional native driver of pg, never installed here
  'ioredis', 'nodemailer', '@aws-sdk/*' // loaded only when REDIS_URL, SMTP_URL or S3_BUCKET is set
]

export async function build (outdir = path.join(ROOT, 'dist')) {
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ['src/server.ts'],
    outdir,
    bundle: true,
    // modules imported on demand (the S3 store) stay in chunks of their own, loaded when used
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    external: EXTERNAL,
    // CommonJS libraries in an ES module bundle still call require() for Node's own modules
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; " +
        'const require = __createRequire(import.meta.url);'
    },
    logLevel: 'warning'
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outdir = process.argv[2] !== undefined ? path.resolve(process.argv[2]) : undefined
  await build(outdir)
}
