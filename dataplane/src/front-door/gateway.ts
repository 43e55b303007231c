/**
 * Gateway addressing: which gateway (authkind) and which dataset a request is for, from the Host
 * header and the path. Pure, so every addressing rule is unit-tested.
 *
 * - `iam.<anything>` / `public.<anything>`: the first host label is the authkind; the dataset is
 *   the first path segment.
 * - `<dataset>.iam.<anything>`: the dataset is the first host label; paths omit it (a path that
 *   repeats it is accepted too).
 * - Any other host (the internal load balancer's name, an IP address): no gateway label, so the
 *   `Authorization` scheme picks the gateway (`Proxy` or a Kubernetes ServiceAccount token → iam,
 *   otherwise public). Both gateways authenticate fully, so the choice grants nothing by itself.
 */
import { looksLikeServiceAccountToken } from '../auth/service-account.js';

export type Authkind = 'iam' | 'public';
export const AUTHKINDS: readonly Authkind[] = ['iam', 'public'];

export interface GatewayRoute {
  authkind: Authkind;
  /** How the gateway was chosen: by host label, or inferred from the Authorization scheme. */
  by: 'host' | 'scheme';
  datasetId?: string;
  /** Path segments after the dataset, URI-decoded. */
  rest: string[];
  datasetFrom: 'host' | 'path';
}

export class AddressingError extends Error {}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function hostLabels(host: string | undefined): string[] {
  if (!host) return [];
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) return []; // IPv6 literal
  name = name.replace(/:\d+$/, '').replace(/\.$/, '');
  return name.split('.');
}

export function decodeSegments(pathname: string): string[] {
  const segments: string[] = [];
  // One scan for the separators: no intermediate array of the split path.
  for (let start = 0; start <= pathname.length; ) {
    let end = pathname.indexOf('/', start);
    if (end < 0) end = pathname.length;
    if (end > start) segments.push(decodeSegment(pathname.slice(start, end)));
    start = end + 1;
  }
  return segments;
}

function decodeSegment(s: string): string {
  if (!s.includes('%')) return s;
  let decoded: string;
  try {
    decoded = decodeURIComponent(s);
  } catch {
    throw new AddressingError(`path segment "${s.slice(0, 200)}" is not valid percent-encoding`);
  }
  // No dataset, schema or record id holds NUL (PostgreSQL text cannot).
  if (decoded.includes('\u0000')) throw new AddressingError(`path segment "${s.slice(0, 200)}" decodes to a NUL character`);
  return decoded;
}

/** Clients repeat their Host header: its labels are worked out once (bounded; never mutated). */
const knownHosts = new Map<string, readonly string[]>();
const MAX_KNOWN_HOSTS = 256;

function cachedHostLabels(host: string | undefined): readonly string[] {
  if (host === undefined || host.length > 255) return hostLabels(host);
  let labels = knownHosts.get(host);
  if (!labels) {
    if (knownHosts.size >= MAX_KNOWN_HOSTS) knownHosts.clear();
    knownHosts.set(host, (labels = hostLabels(host)));
  }
  return labels;
}

/** The gateway of a request whose host names none: by the credentials it carries. */
export function inferAuthkind(authorization: string | undefined): Authkind {
  return /^proxy(\s|$)/i.test(authorization ?? '') || looksLikeServiceAccountToken(authorization) ? 'iam' : 'public';
}

export function resolveGateway(host: string | undefined, pathname: string, authorization: string | undefined): GatewayRoute {
  const labels = cachedHostLabels(host);
  const segments = decodeSegments(pathname);
  let authkind: Authkind | undefined;
  let hostDataset: string | undefined;
  if (AUTHKINDS.includes(labels[0] as Authkind)) authkind = labels[0] as Authkind;
  else if (labels.length > 2 && AUTHKINDS.includes(labels[1] as Authkind) && LABEL.test(labels[0])) {
    authkind = labels[1] as Authkind;
    hostDataset = labels[0];
  }
  const by = authkind ? 'host' : 'scheme';
  authkind ??= inferAuthkind(authorization);
  // The segments array is this call's own: the dataset's segment is taken off it, not copied around.
  if (hostDataset) {
    if (segments[0] === hostDataset) segments.shift();
    return { authkind, by, datasetId: hostDataset, rest: segments, datasetFrom: 'host' };
  }
  const datasetId = segments.shift();
  return { authkind, by, datasetId, rest: segments, datasetFrom: 'path' };
}
