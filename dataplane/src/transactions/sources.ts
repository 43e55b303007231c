/**
 * The files a location holds, read by byte range (Parquet footers and row groups) or as a stream
 * (NDJSON, CSV). Nothing here holds a whole file: a range read is as large as a row group.
 */
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { BulkLoadS3Spec } from '../../../model/types.js';
import { checkLocation, type Location } from './locations.js';
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
  env: NodeJS.ProcessEnv;
  /** The Environment's `spec.bulkLoad.s3`, read when a load starts (it may change). */
  s3?: () => BulkLoadS3Spec | undefined;
}

/** Where the S3 client goes: the Environment's settings first, then `DAS_S3_ENDPOINT` / `AWS_REGION`. */
export function s3Options(env: NodeJS.ProcessEnv, spec: BulkLoadS3Spec = {}): { region: string; endpoint?: string; forcePathStyle?: boolean } {
  const endpoint = spec.endpoint || env.DAS_S3_ENDPOINT || undefined;
  const forcePathStyle = spec.forcePathStyle ?? (env.DAS_S3_FORCE_PATH_STYLE ? env.DAS_S3_FORCE_PATH_STYLE !== 'false' : undefined) ?? (endpoint ? true : undefined);
  return {
    region: spec.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    ...(forcePathStyle !== undefined ? { forcePathStyle } : {}),
  };
}

/** The S3 client for `s3://`: s3Options; credentials from the Environment's Secret, else AWS_*, else the AWS default chain (IRSA): s3-credentials.ts. */
export function s3ClientFor(env: NodeJS.ProcessEnv, spec?: BulkLoadS3Spec): S3Client {
  const credentials = s3Credentials(env, spec?.credentialsSecretRef);
  return new S3Client({ ...s3Options(env, spec), ...(credentials ? { credentials } : {}) });
}

/** The files at a location, in name order (a directory or prefix holds several). Checks the location again: it may have changed since the create. */
export async function openLocation(uri: string, settings: SourceSettings): Promise<SourceFile[]> {
  let location: Location;
  try {
    location = await checkLocation(uri, settings.importRoot);
  } catch (err) {
    throw new SourceError('SOURCE_FORBIDDEN', (err as Error).message);
  }
  if (location.scheme === 'file') return fileSources(location.path);
  if (location.scheme === 's3') return s3Sources(s3ClientFor(settings.env, settings.s3?.()), location.bucket, location.key);
  return [await httpsSource(location.url, location.address, location.family)];
}

function fileSources(path: string): SourceFile[] {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new SourceError('SOURCE_NOT_FOUND', `no file at ${path}`);
  }
  const paths = stat.isDirectory()
    ? readdirSync(path, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(path, e.name)).sort()
    : [path];
  if (!paths.length) throw new SourceError('SOURCE_NOT_FOUND', `no files in ${path}`);
  return paths.map((p) => ({
    name: p,
    size: statSync(p).size,
    async slice(start, end) {
      const handle = await open(p, 'r');
      try {
        const buffer = Buffer.alloc(end - start);
        const { bytesRead } = await handle.read(buffer, 0, end - start, start);
        return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + bytesRead) as ArrayBuffer;
      } finally {
        await handle.close();
      }
    },
    async stream() {
      return createReadStream(p);
    },
  }));
}

async function s3Sources(client: S3Client, bucket: string, key: string): Promise<SourceFile[]> {
  const file = (name: string, size: number): SourceFile => ({
    name: `s3://${bucket}/${name}`,
    size,
    async slice(start, end) {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name, Range: `bytes=${start}-${end - 1}` }));
      const bytes = await out.Body!.transformToByteArray();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
    async stream() {
      const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name }));
      return out.Body as Readable;
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
async function httpsSource(url: URL, address: string, family: 4 | 6): Promise<SourceFile> {
  const get = (headers: Record<string, string>, method = 'GET') =>
    new Promise<import('node:http').IncomingMessage>((resolvePromise, reject) => {
      const req = httpsRequest(url, {
        method,
        headers,
        lookup: (_host, _options, callback) => (callback as (e: null, a: string, f: number) => void)(null, address, family),
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
  const size = Number(head.headers['content-length'] ?? 0);
  const body = async (res: import('node:http').IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const all = Buffer.concat(chunks);
    return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
  };
  return {
    name: url.href,
    size,
    async slice(start, end) {
      const res = await get({ range: `bytes=${start}-${end - 1}` });
      if (res.statusCode !== 206) {
        res.resume();
        throw new SourceError('SOURCE_UNREADABLE', `${url.href} does not serve byte ranges (answered ${res.statusCode})`);
      }
      return body(res);
    },
    async stream() {
      const res = await get({});
      if (res.statusCode !== 200) {
        res.resume();
        throw new SourceError('SOURCE_UNREADABLE', `${url.href} answered ${res.statusCode}`);
      }
      return Readable.from(res);
    },
  };
}
