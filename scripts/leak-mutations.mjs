#!/usr/bin/env node
// The proof that the generated leak test (test/leak.test.ts) can fail: each mutation drops one channel's check of the
// outbound rule from a copy of the tree, runs the leak test there on PGlite, and expects it to fail on that channel.
// A mutation the test survives, or one whose text is no longer in the source, fails this script.
//   npm run test:mutation            every mutation
//   npm run test:mutation -- webhook the mutations whose name contains "webhook"
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const MUTATIONS = [
  {
    // the dispatch and the run-time re-check (docs/security.md): each alone keeps the payload out of the history
    name: "automation tells a rule's creator of everything",
    edits: [
      {
        file: 'src/modules/automation/automation.dispatcher.ts',
        find: 'if (!(await mayLearnOf(trx, reader, row.topic, payload, seen))) continue',
        replace: 'void reader'
      },
      {
        file: 'src/modules/automation/automation.runner.ts',
        find: '!(await mayLearnOf(trx, subject, payload.topic, payload))',
        replace: 'false'
      }
    ],
    channel: "a rule's run history"
  },
  {
    name: "a webhook subscription's creator is told of everything",
    file: 'src/modules/webhooks/webhooks.delivery.ts',
    find: 'if (!(await mayLearnOf(trx, reader, row.topic, row.payload as Record<string, unknown>, told))) continue',
    replace: 'void reader',
    channel: "an outbound webhook subscription's deliveries"
  },
  {
    name: 'a stored reader keeps the organization of when it was stored',
    file: 'src/modules/disclosure/disclosure.ts',
    find: 'orgId: claims.org_id,',
    replace: '',
    channel: 'calendar feeds'
  },
  {
    name: 'space analytics count every linked event',
    file: 'src/modules/spaces/spaces.insights.repository.ts',
    // the source's own SQL template text, in plain quotes
    find: ['and $', '{eventVisibilityFilter(auth)})\n        $', '{window}'].join(''),
    replace: [')\n        $', '{window}'].join(''),
    channel: 'space analytics'
  },
  {
    name: "a timeline's automation items are not checked",
    file: 'src/modules/contacts/contacts.timeline.routes.ts',
    find:
      "if (typeof topic === 'string' && !(await mayLearnOf(trx, request.auth, topic, trigger ?? {}, told))) continue",
    replace: 'void told',
    channel: "a contact's timeline"
  },
  {
    name: 'the notifications list shows every address',
    file: 'src/modules/notifications/notifications.repository.ts',
    find: "return { ...r, recipient: 'withheld', last_error: error }",
    replace: 'return r',
    channel: 'the notifications list'
  }
]

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const only = process.argv[2]
const chosen = MUTATIONS.filter(m => only === undefined || m.name.includes(only))
// two at a time: each run is one process on PGlite, and the machine has two cores
const CONCURRENCY = Number(process.env.MUTATION_CONCURRENCY ?? 2)

/** Runs the leak test on a copy of the tree with one mutation applied; the line to print, and whether it was caught. */
async function tryMutation (m) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leak-mutation-'))
  try {
    for (const entry of ['src', 'test', 'migrations', 'package.json', 'tsconfig.json']) {
      fs.cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true })
    }
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'))
    const gone = (m.edits ?? [m]).filter(e => {
      const file = path.join(dir, e.file)
      const text = fs.readFileSync(file, 'utf8')
      if (!text.includes(e.find)) return true
      fs.writeFileSync(file, text.replace(e.find, e.replace))
      return false
    })
    if (gone.length > 0) {
      return {
        caught: false,
        line: `✖ ${m.name}: the text to mutate is gone from ${gone[0].file} (update scripts/leak-mutations.mjs)`
      }
    }
    const started = Date.now()
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', 'test/leak.test.ts'], {
      cwd: dir,
      env: { ...process.env, TEST_DATABASES: 'pglite' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    child.stdout.on('data', chunk => { stdout += chunk })
    child.stderr.resume()
    const status = await new Promise(resolve => child.on('close', resolve))
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    const caught = stdout.split('\n')
      .filter(l => l.includes('✖') && l.includes(m.channel) && l.includes('never carries'))
    if (status !== 0 && caught.length > 0) {
      return {
        caught: true, line: `✔ ${m.name}: the leak test fails (${caught.length} cases of "${m.channel}", ${seconds} s)`
      }
    }
    const why = status === 0 ? 'passes' : `fails elsewhere (exit ${status})`
    const failing = stdout.split('\n').filter(l => l.includes('✖')).slice(0, 10).join('\n')
    return { caught: false, line: `✖ ${m.name}: the leak test ${why} (${seconds} s)\n${failing}` }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const results = []
let next = 0
await Promise.all(Array.from({ length: Math.max(1, CONCURRENCY) }, async () => {
  while (next < chosen.length) {
    const m = chosen[next++]
    const r = await tryMutation(m)
    console.log(r.line)
    results.push(r)
  }
}))
const caught = results.filter(r => r.caught).length
console.log(`${caught} of ${chosen.length} mutations caught`)
process.exit(caught === chosen.length && chosen.length > 0 ? 0 : 1)
