/**
 * A real S3 API for tests: the s3rver emulator in this process, on a free loopback port, keeping
 * its objects in a fresh temporary directory, with one bucket created through the S3 API. Tests
 * look into the bucket with their own client, the way an operator would.
 *
 * @example
 *   const s3 = await startS3Emulator()
 *   const config = loadConfig({ ...s3.env, DATA_DIR: dir })
 *   … await s3.keys('covers/') …
 *   await s3.stop()
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import S3rver from 's3rver'
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'

/** s3rver's built-in account */
const ACCESS_KEY = 'S3RVER'

export interface S3Emulator {
  readonly endpoint: string
  readonly bucket: string
  /** the service's configuration for this emulator */
  readonly env: Record<string, string>
  /** the keys under a prefix, sorted */
  keys (prefix?: string): Promise<string[]>
  /** an object's bytes and content type as stored */
  object (key: string): Promise<{ data: Buffer, contentType: string | undefined }>
  /** stops answering (connections are refused); the stored objects stay on disk */
  pause (): Promise<void>
  /** answers again on the same port, with the same objects */
  resume (): Promise<void>
  /** stops the emulator and removes its directory */
  stop (): Promise<void>
}

export async function startS3Emulator (bucket = 'event-covers'): Promise<S3Emulator> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 's3-emulator-'))
  const listen = async (port: number): Promise<{ server: S3rver, port: number }> => {
    const server = new S3rver({ address: '127.0.0.1', port, directory, silent: true })
    const address = await server.run()
    return { server, port: address.port }
  }
  let running: S3rver | undefined
  const first = await listen(0)
  running = first.server
  const endpoint = `http://127.0.0.1:${first.port}`
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: ACCESS_KEY },
    maxAttempts: 1
  })
  await client.send(new CreateBucketCommand({ Bucket: bucket }))

  return {
    endpoint,
    bucket,
    env: { S3_BUCKET: bucket, S3_ENDPOINT: endpoint, S3_ACCESS_KEY_ID: ACCESS_KEY, S3_SECRET_ACCESS_KEY: ACCESS_KEY },
    async keys (prefix = '') {
      const keys: string[] = []
      let token: string | undefined
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token })
        )
        keys.push(...(page.Contents ?? []).flatMap(o => o.Key === undefined ? [] : [o.Key]))
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined
      } while (token !== undefined)
      return keys.sort()
    },
    async object (key) {
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      return { data: Buffer.from(await res.Body?.transformToByteArray() ?? []), contentType: res.ContentType }
    },
    async pause () {
      await running?.close()
      running = undefined
    },
    async resume () {
      if (running === undefined) running = (await listen(first.port)).server
    },
    async stop () {
      client.destroy()
      await running?.close()
      running = undefined
      fs.rmSync(directory, { recursive: true, force: true })
    }
  }
}
