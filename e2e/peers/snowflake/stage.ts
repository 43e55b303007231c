/**
 * TEST PEER ONLY. The user stages (@~) of the Snowflake test peer, in memory: PUT answers the SDK
 * as Snowflake does for a Google Cloud Storage stage with a downscoped access token (stageInfo
 * .creds.GCS_ACCESS_TOKEN), with the peer's own HTTP server as the storage endpoint, so the SDK
 * uploads the file there (an HTTP PUT to <peer>/sfpeer-stage/<grant>/<file> with that token as a
 * bearer token) and needs no cloud credentials and no encryption (encryptionMaterial null). The
 * token-style answer, not presigned URLs: with presigned URLs the SDK sends the PUT statement a
 * second time per file, naming the file 'undefined' when it uploads from a buffer.
 */
import { randomBytes } from 'node:crypto';
import type { PutStatement } from './stage-sql.js';

/** A bound on one uploaded file, and on how many files and grants the peer holds. */
export const MAX_STAGE_FILE_BYTES = 256 * 1024 * 1024;
const MAX_FILES = 1000;
const MAX_GRANTS = 1000;
const GRANT_MS = 10 * 60 * 1000;
export const STAGE_ROUTE = 'sfpeer-stage';

interface Grant {
  token: string;
  user: string;
  dir: string;
  fileName: string;
  expiresAt: number;
}

export type UploadOutcome = { status: 200 | 404 | 401 | 403 | 503 | 507; message?: string };

export class PeerStage {
  /** Tests set it to make the storage endpoint answer 503 (a storage outage). */
  refuseUploads = false;
  private readonly files = new Map<string, Buffer>();
  private readonly grants = new Map<string, Grant>();

  private key(user: string, path: string): string {
    return `${user}\n${path}`;
  }

  /** The query response's `data` for a PUT: where and how the SDK uploads the file. */
  putResponse(user: string, put: PutStatement, endPoint: string): Record<string, unknown> {
    const id = randomBytes(12).toString('hex');
    const token = randomBytes(24).toString('hex');
    this.grants.set(id, { token, user, dir: put.dir, fileName: put.fileName, expiresAt: Date.now() + GRANT_MS });
    while (this.grants.size > MAX_GRANTS) this.grants.delete(this.grants.keys().next().value!);
    return {
      command: 'UPLOAD',
      src_locations: [put.fileName],
      autoCompress: false,
      sourceCompression: put.sourceCompression,
      parallel: 1,
      overwrite: put.overwrite,
      threshold: 200 * 1024 * 1024,
      clientShowEncryptionParameter: false,
      stageInfo: {
        locationType: 'GCS',
        location: `${STAGE_ROUTE}/${id}/`,
        path: `${id}/`,
        region: 'US-CENTRAL1',
        endPoint,
        useRegionalUrl: false,
        useVirtualUrl: false,
        isClientSideEncrypted: false,
        creds: { GCS_ACCESS_TOKEN: token },
        presignedUrl: null,
      },
      presignedUrls: [],
      encryptionMaterial: null,
    };
  }

  private grantFor(authorization: string | undefined, id: string, fileName: string): Grant | UploadOutcome {
    const grant = this.grants.get(id);
    if (!grant || grant.expiresAt < Date.now()) return { status: 404, message: 'no such upload location' };
    if (authorization !== `Bearer ${grant.token}`) return { status: 401, message: 'the bearer token does not grant this upload location' };
    if (fileName !== grant.fileName) return { status: 403, message: `the PUT statement named '${grant.fileName}', not '${fileName}'` };
    return grant;
  }

  /** The storage's HEAD (the SDK asks before an upload without OVERWRITE). */
  head(authorization: string | undefined, id: string, fileName: string): UploadOutcome & { size?: number } {
    const grant = this.grantFor(authorization, id, fileName);
    if ('status' in grant) return grant;
    const file = this.files.get(this.key(grant.user, grant.dir + grant.fileName));
    return file ? { status: 200, size: file.length } : { status: 404, message: 'not found' };
  }

  /** The storage's PUT of the file's bytes (the size is bounded by the server while reading). */
  upload(authorization: string | undefined, id: string, fileName: string, body: Buffer): UploadOutcome {
    if (this.refuseUploads) return { status: 503, message: 'the stage storage is unavailable' };
    const grant = this.grantFor(authorization, id, fileName);
    if ('status' in grant) return grant;
    const key = this.key(grant.user, grant.dir + grant.fileName);
    if (!this.files.has(key) && this.files.size >= MAX_FILES) return { status: 507, message: `the peer holds ${MAX_FILES} staged files already` };
    this.files.set(key, body);
    return { status: 200 };
  }

  /** A staged file (path below @~), or undefined. */
  file(user: string, path: string): Buffer | undefined {
    return this.files.get(this.key(user, path));
  }

  remove(user: string, path: string): void {
    this.files.delete(this.key(user, path));
  }

  /** The paths staged for a user, or for every user (tests read it). */
  list(user?: string): string[] {
    return [...this.files.keys()].map((k) => k.split('\n')).filter(([u]) => user === undefined || u === user).map(([, path]) => path);
  }

  clear(): void {
    this.files.clear();
    this.grants.clear();
  }
}
