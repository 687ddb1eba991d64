/**
 * The token secret kept in DATA_DIR when TOKEN_SECRET is unset (secrets.ts): made once, the same at every start on
 * the same DATA_DIR, another on a fresh one, readable by its owner only; TOKEN_SECRET, when set, wins and writes
 * nothing.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { loadConfig } from '../config.ts'
import { loadOrCreateTokenSecret, tokenSecretFile, withTokenSecret } from './secrets.ts'

void describe('token secret kept in DATA_DIR', () => {
  const dirs: string[] = []
  const freshDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-secret-'))
    dirs.push(dir)
    return dir
  }
  after(() => { for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true }) })

  void it('keeps one secret across start-ups on the same DATA_DIR, and makes another on a fresh one', () => {
    const dataDir = freshDir()
    // a start-up: the configuration, then the secret buildApp resolves into it
    const startUp = (dir: string) => withTokenSecret(loadConfig({ DATA_DIR: dir })).tokenSecret
    const first = startUp(dataDir)
    assert.ok(first !== undefined && first.length >= 32, 'at least 32 characters')
    assert.equal(startUp(dataDir), first, 'the same after a restart')
    assert.equal(loadOrCreateTokenSecret(dataDir), first)
    const other = startUp(freshDir())
    assert.ok(other !== undefined && other !== first, 'a fresh DATA_DIR gets its own')
    const file = tokenSecretFile(dataDir)
    assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
    assert.deepEqual(fs.readdirSync(dataDir), [path.basename(file)], 'no temporary file left')
  })

  void it('creates DATA_DIR when missing, and uses TOKEN_SECRET when set, writing nothing', () => {
    const missing = path.join(freshDir(), 'not', 'yet')
    assert.equal(loadOrCreateTokenSecret(missing), loadOrCreateTokenSecret(missing))
    const dataDir = freshDir()
    const secret = 's'.repeat(40)
    assert.equal(withTokenSecret(loadConfig({ DATA_DIR: dataDir, TOKEN_SECRET: secret })).tokenSecret, secret)
    assert.deepEqual(fs.readdirSync(dataDir), [])
  })

  void it('refuses a kept file that holds no usable secret, naming TOKEN_SECRET and not echoing the file', () => {
    const dataDir = freshDir()
    fs.writeFileSync(tokenSecretFile(dataDir), 'tiny-secret-value\n', { mode: 0o600 })
    assert.throws(() => loadOrCreateTokenSecret(dataDir), (e: unknown) =>
      e instanceof Error && /^invalid configuration: TOKEN_SECRET is unset, and /.test(e.message) &&
      !e.message.includes('tiny-secret-value'))
  })
})
