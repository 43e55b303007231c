/**
 * AWS Signature Version 4 on incoming requests (the Lambda Invoke API of the function gateway).
 * The expected signature is computed by the AWS SDK's own signer (@smithy/signature-v4) over the
 * request as it arrived — method, raw path, query, the headers the caller listed in SignedHeaders,
 * the body — and compared in constant time with the one in the Authorization header.
 *
 * Split in two so that nothing is buffered for a caller who cannot be right: `parseSigV4` and
 * `checkRequestTime` look at the headers only (before the body is read); `signatureMatches` needs
 * the body, which the caller reads within the gateway's payload limit.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256';
/** As AWS: a request signed more than 5 minutes before (or after) the server's clock is refused. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

export interface SigV4Authorization {
  accessKeyId: string;
  /** The credential scope: yyyymmdd/region/service/aws4_request. */
  scopeDate: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

/** Why a request cannot be verified, in the terms of AWS's own errors. */
export class SigV4Problem extends Error {
  constructor(
    readonly type: 'MissingAuthenticationTokenException' | 'IncompleteSignatureException' | 'InvalidSignatureException',
    message: string,
  ) {
    super(message);
  }
}

const CREDENTIAL = /^([A-Za-z0-9_.+=@-]{1,128})\/(\d{8})\/([a-z0-9-]{1,32})\/([a-z0-9-]{1,32})\/aws4_request$/;
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** The Authorization header's parts: `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`. */
export function parseSigV4(authorization: string | undefined): SigV4Authorization {
  if (authorization === undefined || authorization.trim() === '') {
    throw new SigV4Problem('MissingAuthenticationTokenException', 'Missing Authentication Token: sign the request with AWS Signature Version 4 (service lambda) and an access key of spec.functionGateway.accessKeys');
  }
  // Bounded before any parsing: a header is at most Node's header limit, but the parts below are short.
  const [algorithm, ...rest] = authorization.trim().split(/\s+/);
  if (algorithm !== SIGV4_ALGORITHM || authorization.length > 4096) {
    throw new SigV4Problem('IncompleteSignatureException', `Authorization header requires the ${SIGV4_ALGORITHM} algorithm (AWS Signature Version 4)`);
  }
  const fields = new Map<string, string>();
  for (const part of rest.join(' ').split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const missing = ['Credential', 'SignedHeaders', 'Signature'].filter((k) => !fields.get(k));
  if (missing.length) throw new SigV4Problem('IncompleteSignatureException', `Authorization header requires ${missing.map((k) => `'${k}'`).join(', ')} parameter(s)`);
  const credential = CREDENTIAL.exec(fields.get('Credential')!);
  if (!credential) throw new SigV4Problem('IncompleteSignatureException', "Authorization header's Credential must be <access key id>/<yyyymmdd>/<region>/<service>/aws4_request");
  const signedHeaders = fields.get('SignedHeaders')!.split(';');
  if (signedHeaders.length > 64 || !signedHeaders.every((h) => HEADER_NAME.test(h))) throw new SigV4Problem('IncompleteSignatureException', "Authorization header's SignedHeaders must list lower-case header names separated by ';'");
  for (const required of ['host', 'x-amz-date']) {
    if (!signedHeaders.includes(required)) throw new SigV4Problem('IncompleteSignatureException', `SignedHeaders must include ${required}`);
  }
  const signature = fields.get('Signature')!;
  if (!/^[0-9a-f]{64}$/.test(signature)) throw new SigV4Problem('IncompleteSignatureException', "Authorization header's Signature must be 64 lower-case hex digits");
  const [, accessKeyId, scopeDate, region, service] = credential;
  return { accessKeyId, scopeDate, region, service, signedHeaders, signature };
}

/** `yyyymmddThhmmssZ` as AWS prints it. */
const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

/**
 * The signing time from `x-amz-date`, checked against the scope, the service and the clock (within
 * MAX_CLOCK_SKEW_MS either way), with AWS's own messages.
 */
export function checkRequestTime(auth: SigV4Authorization, headers: IncomingHttpHeaders, service: string, now: number): Date {
  if (auth.service !== service) throw new SigV4Problem('InvalidSignatureException', `Credential should be scoped to correct service: '${service}'.`);
  const value = headers['x-amz-date'];
  const parts = typeof value === 'string' ? AMZ_DATE.exec(value) : null;
  if (!parts) throw new SigV4Problem('IncompleteSignatureException', 'the X-Amz-Date header must be the signing time as yyyymmddThhmmssZ');
  const [, y, mo, d, h, mi, s] = parts.map(Number);
  const signedAt = Date.UTC(y, mo - 1, d, h, mi, s);
  if (value!.slice(0, 8) !== auth.scopeDate) throw new SigV4Problem('InvalidSignatureException', `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${auth.scopeDate}' != '${value!.slice(0, 8)}', from '${value}'.`);
  if (signedAt < now - MAX_CLOCK_SKEW_MS) {
    throw new SigV4Problem('InvalidSignatureException', `Signature expired: ${value} is now earlier than ${amzDate(now - MAX_CLOCK_SKEW_MS)} (${amzDate(now)} - 5 min.)`);
  }
  if (signedAt > now + MAX_CLOCK_SKEW_MS) {
    throw new SigV4Problem('InvalidSignatureException', `Signature not yet current: ${value} is still later than ${amzDate(now + MAX_CLOCK_SKEW_MS)} (${amzDate(now)} + 5 min.)`);
  }
  return new Date(signedAt);
}

export interface ReceivedRequest {
  method: string;
  /** The request target as received, with its query string (`req.url`). */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The query as the signer canonicalizes it: decoded names to decoded values (repeated names as lists). */
function queryOf(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of new URLSearchParams(search)) {
    const seen = query[key];
    query[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

/**
 * Whether the request carries the signature the SDK's signer computes with this secret key. Only
 * the headers the caller signed are given to the signer (told to sign each of them, even those it
 * would skip by default); a signed `x-amz-content-sha256` must be the body's hash, since the signer
 * would otherwise take it on trust.
 */
export async function signatureMatches(request: ReceivedRequest, auth: SigV4Authorization, signingDate: Date, secretAccessKey: string): Promise<boolean> {
  const headers: Record<string, string> = {};
  for (const name of auth.signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) return false;
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const declaredHash = headers['x-amz-content-sha256'];
  if (declaredHash !== undefined && declaredHash !== createHash('sha256').update(request.body).digest('hex')) return false;
  const queryAt = request.url.indexOf('?');
  const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
  const signer = new SignatureV4({
    credentials: { accessKeyId: auth.accessKeyId, secretAccessKey },
    region: auth.region,
    service: auth.service,
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const expected = await signer.sign(
    new HttpRequest({ method: request.method, protocol: 'http:', hostname: headers.host, path, query: queryAt < 0 ? {} : queryOf(request.url.slice(queryAt + 1)), headers, body: request.body }),
    { signingDate, signableHeaders: new Set(auth.signedHeaders) },
  );
  const computed = /Signature=([0-9a-f]{64})$/.exec(String(expected.headers.authorization))?.[1];
  return computed !== undefined && timingSafeEqual(Buffer.from(computed), Buffer.from(auth.signature));
}
