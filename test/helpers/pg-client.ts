/** A short-lived `pg` connection for tests, harnesses and the bench: opened, used by `fn`, closed. */
import pg from 'pg'

export async function withClient<T> (url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return await fn(c)
  } finally {
    await c.end()
  }
}
