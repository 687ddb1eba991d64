/**
 * What every object store is (`ObjectStorage`) and the keys each accepts (`assertSafeKey`, `assertSafePrefix`): the
 * part of storage.ts that its implementations share, apart, so that `s3.ts`, which `createObjectStorage` imports only
 * when S3_BUCKET is set, imports no file that imports it.
 */
export interface StoredObject { key: string, size: number, contentType: string }

/** A key found under a prefix, with the time its object was last written. */
export interface ListedObject { key: string, lastModified: Date }

export interface ObjectStorage {
  put (key: string, data: Buffer, contentType: string): Promise<StoredObject>
  get (key: string): Promise<{ data: Buffer, contentType: string } | undefined>
  delete (key: string): Promise<void>
  /** the objects whose keys start with `prefix` (a safe key followed by `/`), in no particular order */
  list (prefix: string): Promise<ListedObject[]>
  /**
   * a public URL of the object when the store has one (S3 with a public bucket or CDN); else undefined and the service
   * serves it
   */
  publicUrl (key: string): string | undefined
  /** releases what the store holds open (connections); absent when there is nothing to release */
  close?: () => void | Promise<void>
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._\-/]{0,511}$/

export function assertSafeKey (key: string): void {
  if (!KEY.test(key) || key.split('/').some(p => p === '' || p === '.' || p === '..')) {
    throw new Error(`unsafe object key ${JSON.stringify(key)}`)
  }
}

/** A prefix given to `list`: a safe key followed by one `/`. */
export function assertSafePrefix (prefix: string): void {
  if (!prefix.endsWith('/')) throw new Error(`unsafe object prefix ${JSON.stringify(prefix)}`)
  assertSafeKey(prefix.slice(0, -1))
}
