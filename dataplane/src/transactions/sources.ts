/**
 * The files a location holds, read by byte range (Parquet footers and row groups) or as a stream
 * (NDJSON, CSV). Nothing here holds a whole file: a range read is as large as a row group, and
 * never more than the range asked for. Only regular files are read (a FIFO or device would block
 * or never end); remote bodies (https, S3) are bounded in time: source-limits.ts.
 */
import { constants, readdirSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { BulkLoadS3Spec } from '../../../model/types.js';
import { defaultRegionOf, type DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { sourceLimits, type SourceLimits } from './limits.js';
import { checkLocation, type Location } from './locations.js';
import { guarded, readAtMost } from './source-limits.js';
import { s3Credentials } from './s3-credentials.js';

export interface SourceFile {
  name: string;
  size: number;
  /** Bytes [start, end). */
  slice(start: number, end: number): Promise<ArrayBuffer>;
  stream(): Promise<Readable>;
}

export class SourceError extends Error {
  constructor(
    readonly code: 'SOURCE_NOT_FOUND' | 'SOURCE_FORBIDDEN' | 'SOURCE_UNREADABLE',
    message: string,
  ) {
    super(message);
  }
}

export interface SourceSettings {
  importRoot: string;
  settings: DataPlaneSettings;
  /** The Environment's `spec.bulkLoad.s3`, read when a load starts (it may change). */
  s3?: () => BulkLoadS3Spec | undefined;
}

/** Where the S3 client goes: the Environment's settings first, then `DAS_S3_ENDPOINT` / `AWS_REGION`. */
export function s3Options(s: DataPlaneSettings, spec: BulkLoadS3Spec = {}): { region: string; endpoint?: string; forcePathStyle?: boolean } {
  const endpoint = spec.endpoint || s.DAS_S3_ENDPOINT || undefined;
  const forcePathStyle = spec.forcePathStyle ?? s.DAS_S3_FORCE_PATH_STYLE ?? (endpoint ? true : undefined);
  return {
    region: spec.region || defaultRegionOf(s),
    ...(endpoint ? { endpoint } : {}),
    ...(forcePathStyle !== undefined ? { forcePathStyle } : {}),
  };
}

/** The S3 client for `s3://`: s3Options; credentials from the Environment's Secret, else AWS_*, else the AWS default chain (IRSA): s3-credentials.ts. */
export function s3ClientFor(s: DataPlaneSettings, spec?: BulkLoadS3Spec): S3Client {
  const credentials = s3Credentials(s, spec?.credentialsSecretRef);
  return new S3Client({ ...s3Options(s, spec), ...(credentials ? { credentials } : {}) });
}

/** The files at a location, in name order (a directory or prefix holds several). Checks the location again: it may have changed since the create. */
export async function openLocation(uri: string, settings: SourceSettings): Promise<SourceFile[]> {
  let location: Location;
  try {
    location = await checkLocation(uri, settings.importRoot);
  } catch (err) {
    throw new SourceError('SOURCE_FORBIDDEN', (err as Error).message);
  }
  const limits = sourceLimits(settings.settings);
  if (location.scheme === 'file') return fileSources(location.path);
  if (location.scheme === 's3') return s3Sources(s3ClientFor(settings.settings, settings.s3?.()), location.bucket, location.key, limits);
  return [await httpsSource(location.url, location.address, location.family, limits)];
}

const notRegular = (path: string) => new SourceError('SOURCE_UNREADABLE', `${path} is not a regular file (a directory entry that is a FIFO, device or socket is never read)`);

function fileSources(path: string): SourceFile[] {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new SourceError('SOURCE_NOT_FOUND', `no file at ${path}`);
  }
  if (!stat.isDirectory() && !stat.isFile()) throw notRegular(path);
  // A directory's regular files only (Dirent.isFile: no FIFOs, devices, sockets or links).
  const paths = stat.isDirectory()
    ? readdirSync(path, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(path, e.name)).sort()
    : [path];
  if (!paths.length) throw new SourceError('SOURCE_NOT_FOUND', `no files in ${path}`);
  return paths.map((p) => ({
    name: p,
    size: statSync(p).size,
    async slice(start, end) {
      const handle = await openRegular(p);
      try {
        // Read straight into the ArrayBuffer handed back: a row group's bytes are not allocated twice.
        const buffer = new ArrayBuffer(Math.max(0, end - start));
        const { bytesRead } = await handle.read(new Uint8Array(buffer), 0, buffer.byteLength, start);
        return bytesRead === buffer.byteLength ? buffer : buffer.slice(0, bytesRead);
      } finally {
        await handle.close();
      }
    },
    async stream() {
      return (await openRegular(p)).createReadStream();
    },
  }));
}

/** Opens without blocking (a FIFO swapped in since the listing would block a plain open) and reads only a regular file. */
async function openRegular(path: string) {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw notRegular(path);
  }
  return handle;
}

async function s3Sources(client: S3Client, bucket: string, key: string, limits: SourceLimits): Promise<SourceFile[]> {
  const file = (name: string, size: number): SourceFile => ({
    name: `s3://${bucket}/${name}`,
    size,
    async slice(start, end) {
      if (end <= start) return new ArrayBuffer(0);
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name, Range: `bytes=${start}-${end - 1}` }));
      return await readAtMost(out.Body as Readable, end - start, `s3://${bucket}/${name}`, limits);
    },
    async stream() {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name }));
      return guarded(out.Body as Readable, `s3://${bucket}/${name}`, limits);
    },
  });
  try {
    if (key && !key.endsWith('/')) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return [file(key, Number(head.ContentLength ?? 0))];
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    // A prefix: every object under it, in key order (at most 10,000).
    const files: SourceFile[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: key, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key && !o.Key.endsWith('/')) files.push(file(o.Key, Number(o.Size ?? 0)));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token && files.length < 10_000);
    if (!files.length) throw new SourceError('SOURCE_NOT_FOUND', `no object at s3://${bucket}/${key}`);
    return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch (err) {
    if (err instanceof SourceError) throw err;
    if (isNotFound(err)) throw new SourceError('SOURCE_NOT_FOUND', `no object or bucket at s3://${bucket}/${key}`);
    const name = (err as { name?: string }).name ?? '';
    // A HEAD has no error body: a refused key is only its 403.
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const refusal = /AccessDenied|Forbidden|InvalidAccessKeyId|SignatureDoesNotMatch/.test(name) ? name : status === 403 ? '403 Forbidden' : undefined;
    if (refusal) throw new SourceError('SOURCE_FORBIDDEN', `S3 refused s3://${bucket}/${key}: ${refusal}`);
    throw new SourceError('SOURCE_UNREADABLE', `S3 failed on s3://${bucket}/${key}: ${(err as Error).message}`);
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.name === 'NoSuchBucket' || e?.$metadata?.httpStatusCode === 404;
}

/** An https:// file, connected to the checked address (the Host header and TLS name stay the URL's). */
export async function httpsSource(url: URL, address: string, family: 4 | 6, limits: SourceLimits): Promise<SourceFile> {
  const get = (headers: Record<string, string>, method = 'GET') =>
    new Promise<import('node:http').IncomingMessage>((resolvePromise, reject) => {
      const req = httpsRequest(url, {
        method,
        headers,
        // Node asks for every address (`all`) when it may try several (autoSelectFamily, on by default since Node 20): the one checked.
        lookup: (_host, options, callback) =>
          options.all
            ? (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }])
            : (callback as (e: null, a: string, f: number) => void)(null, address, family),
        timeout: 30_000,
      });
      req.on('response', resolvePromise);
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  const head = await get({}, 'HEAD').catch((err: Error) => {
    throw new SourceError('SOURCE_UNREADABLE', `${url.origin}: ${err.message}`);
  });
  head.resume();
  if (head.statusCode === 404) throw new SourceError('SOURCE_NOT_FOUND', `${url.href} answered 404`);
  if (head.statusCode !== 200) throw new SourceError('SOURCE_UNREADABLE', `${url.href} answered ${head.statusCode} (redirects are not followed)`);
  const declared = Number(head.headers['content-length'] ?? 0);
  const size = Number.isSafeInteger(declared) && declared >= 0 ? declared : 0;
  return {
    name: url.href,
    size,
    async slice(start, end) {
      if (end <= start) return new ArrayBuffer(0);
      const res = await get({ range: `bytes=${start}-${end - 1}` });
      if (res.statusCode !== 206) {
        res.resume();
        throw new SourceError('SOURCE_UNREADABLE', `${url.href} does not serve byte ranges (answered ${res.statusCode})`);
      }
      // At most the range asked for, whatever the server sends.
      return await readAtMost(res, end - start, url.href, limits);
    },
    async stream() {
      const res = await get({});
      if (res.statusCode !== 200) {
        res.resume();
        throw new SourceError('SOURCE_UNREADABLE', `${url.href} answered ${res.statusCode}`);
      }
      return guarded(res, url.href, limits);
    },
  };
}
