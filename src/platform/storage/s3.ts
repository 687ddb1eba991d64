/**
 * Objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, Cloudflare R2…) through
 * @aws-sdk/client-s3. `createObjectStorage` imports this module only when S3_BUCKET is set, so a
 * deployment on local files never loads the SDK. The bucket must exist; the service creates none.
 *
 * Every call is bounded: 3 s to connect, 20 s for a whole request, at most 3 attempts (the SDK's
 * retry with backoff). Errors are thrown as they come; the caller decides what a client sees.
 */
import {
  DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type S3ClientConfig
} from '@aws-sdk/client-s3'
import type { S3Config } from '../../config.ts'
import { assertSafeKey, assertSafePrefix, type ListedObject, type ObjectStorage } from './object-storage.ts'

const CONNECT_TIMEOUT_MS = 3_000
const REQUEST_TIMEOUT_MS = 20_000

interface SdkErrorLike { name?: string, $metadata?: { httpStatusCode?: number } }

/** The object is not there (a missing bucket is a misconfiguration, not a missing object). */
function isMissing (err: unknown): boolean {
  const e = err as SdkErrorLike
  if (e.name === 'NoSuchKey' || e.name === 'NotFound') return true
  return e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket'
}

export function s3ClientConfig (config: S3Config): S3ClientConfig {
  return {
    region: config.region,
    ...(config.endpoint !== undefined
      ? {
          endpoint: config.endpoint,
          // servers other than AWS differ in which of the newer default checksums they accept;
          // checksums are then sent and checked only where the operation requires them
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED'
        }
      : {}),
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials !== undefined ? { credentials: config.credentials } : {}),
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: CONNECT_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      throwOnRequestTimeout: true
    }
  }
}

/** An `ObjectStorage` over one bucket; `close` ends the client's open connections. */
export function s3Storage (config: S3Config): ObjectStorage {
  const client = new S3Client(s3ClientConfig(config))
  const Bucket = config.bucket
  return {
    async put (key, data, contentType) {
      assertSafeKey(key)
      await client.send(
        new PutObjectCommand({ Bucket, Key: key, Body: data, ContentType: contentType, ContentLength: data.length })
      )
      return { key, size: data.length, contentType }
    },
    async get (key) {
      assertSafeKey(key)
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: key }))
        const bytes = res.Body === undefined ? new Uint8Array() : await res.Body.transformToByteArray()
        return {
          data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
          contentType: res.ContentType ?? 'application/octet-stream'
        }
      } catch (err) {
        if (isMissing(err)) return undefined
        throw err
      }
    },
    async delete (key) {
      assertSafeKey(key)
      try {
        // S3 answers 204 for a key that is not there; some compatible servers answer 404
        await client.send(new DeleteObjectCommand({ Bucket, Key: key }))
      } catch (err) {
        if (!isMissing(err)) throw err
      }
    },
    async list (prefix) {
      assertSafePrefix(prefix)
      const found: ListedObject[] = []
      let ContinuationToken: string | undefined
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken }))
        for (const o of page.Contents ?? []) {
          if (o.Key !== undefined) found.push({ key: o.Key, lastModified: o.LastModified ?? new Date() })
        }
        ContinuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined
      } while (ContinuationToken !== undefined)
      return found
    },
    publicUrl (key) {
      assertSafeKey(key)
      // safe keys need no escaping in a URL path
      return config.publicUrl === undefined ? undefined : `${config.publicUrl}/${key}`
    },
    close () {
      client.destroy()
    }
  }
}
