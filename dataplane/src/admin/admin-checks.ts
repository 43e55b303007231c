/**
 * What the administrative API checks beyond the Dataset schema before it writes a Dataset
 * (docs/security.md "Admin API"). An admin principal is trusted less than the platform team who
 * writes manifests and custom resources: its Dataset may not take another dataset's storage or a
 * store's own schemas (model/storage.ts), and the endpoints it names (a DynamoDB `endpoint`, a
 * warehouse `accessUrl`) must be public addresses, as bulk-load `https://` sources must, unless the
 * operator of the data plane allows them (DAS_ADMIN_ALLOWED_ENDPOINTS) or a dataset already served
 * uses them.
 */
import { originOf } from '../../../model/settings/dataplane.js';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { firstOverlap, type StorageClaim } from '../../../model/storage.js';
import { API_GROUP_VERSION, type DatasetResource, type DatasetSpec, type LocationSpec } from '../../../model/types.js';
import { ownershipProblem } from '../config/ownership.js';
import type { ConfigStore } from '../config/store.js';
import { ApiError, badRequest } from '../engine/errors.js';
import { isPublicAddress } from '../front-door/addresses.js';

/** 409 STORAGE_IN_USE naming the dataset whose storage the new one would share. */
export function checkStorageFree(claim: StorageClaim, others: Iterable<StorageClaim>): void {
  const overlap = firstOverlap(claim, others);
  if (overlap) {
    throw new ApiError(409, 'STORAGE_IN_USE', `dataset "${claim.id}" cannot be created: ${overlap.message}; a dataset's storage may not overlap another's`, [
      { path: '$.spec.location', message: `storage of dataset "${overlap.dataset}"`, dataset: overlap.dataset },
    ]);
  }
}

/** The location fields that name a URL the data plane will connect to. */
const ENDPOINT_FIELDS = ['endpoint', 'accessUrl'] as const;

// `scheme://host:port` of a URL, as DAS_ADMIN_ALLOWED_ENDPOINTS lists them (parsed with the other settings).
export { originOf };

/**
 * Each endpoint of the location resolves to public addresses only, or its origin is allowed
 * (`allowed`: the setting's origins and those of datasets already served). 400 ENDPOINT_FORBIDDEN
 * otherwise, naming the field; the server's own view of the network is not echoed beyond the address.
 */
export async function checkEndpoints(location: LocationSpec, allowed: ReadonlySet<string>, resolveHost: typeof lookup = lookup): Promise<void> {
  for (const field of ENDPOINT_FIELDS) {
    const url = location[field];
    if (url === undefined) continue;
    const path = `$.spec.location.${field}`;
    const origin = originOf(url);
    if (!origin) throw badRequest('INVALID_FIELD', `"spec.location.${field}" is not a URL`, [{ path, message: 'not a URL' }]);
    const parsed = new URL(url);
    // Before the allow-list: an allowed origin allows the address, never credentials written into the Dataset.
    if (parsed.username || parsed.password) throw badRequest('INVALID_FIELD', `"spec.location.${field}" must not carry credentials`, [{ path, message: 'credentials in the URL' }]);
    if (allowed.has(origin)) continue;
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    let addresses: { address: string }[];
    if (isIP(host)) addresses = [{ address: host }];
    else {
      try {
        addresses = await resolveHost(host, { all: true, verbatim: true });
      } catch {
        throw badRequest('ENDPOINT_FORBIDDEN', `"spec.location.${field}": host "${host.slice(0, 200)}" does not resolve`, [{ path, message: 'host does not resolve' }]);
      }
    }
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused || addresses.length === 0) {
      throw badRequest(
        'ENDPOINT_FORBIDDEN',
        `"spec.location.${field}" must be a public address: "${host.slice(0, 200)}" resolves to ${refused?.address ?? 'nothing'} (private, loopback, link-local and metadata addresses are refused unless DAS_ADMIN_ALLOWED_ENDPOINTS lists the origin)`,
        [{ path, message: 'not a public address' }],
      );
    }
  }
}

/** The origins of the endpoints of locations already served: an admin may name what the platform team's manifests use. */
export function servedOrigins(locations: Iterable<LocationSpec>): string[] {
  const origins: string[] = [];
  for (const location of locations) {
    for (const field of ENDPOINT_FIELDS) {
      const origin = location[field] === undefined ? undefined : originOf(location[field]!);
      if (origin) origins.push(origin);
    }
  }
  return origins;
}

/** What the process configures about the administrative API. */
export interface AdminSettings {
  /** Origins an admin's Dataset may name as endpoints although they are not public (DAS_ADMIN_ALLOWED_ENDPOINTS). */
  allowedEndpoints?: string[];
  /** The dataset recorded as owning the storage a Dataset manifest names (its driver's marker), if any. */
  storageOwner?: (manifest: DatasetResource) => Promise<string | undefined>;
}

/**
 * 409 STORAGE_RETAINED when the storage holds another dataset's retained data and the new Dataset
 * does not adopt it (`spec.adopt`), naming that dataset.
 */
export async function checkRetainedStorage(manifest: DatasetResource, settings: AdminSettings): Promise<void> {
  const name = manifest.metadata.name;
  let owner: string | undefined;
  try {
    owner = await settings.storageOwner?.(manifest);
  } catch {
    throw new ApiError(503, 'STORE_UNAVAILABLE', `dataset "${name}" cannot be created now: its storage cannot be read to check who owns it; try again shortly`);
  }
  const problem = ownershipProblem({ id: name, adopt: manifest.spec.adopt }, owner);
  if (problem) {
    throw new ApiError(409, 'STORAGE_RETAINED', `dataset "${name}" cannot be created: ${problem}`, [
      { path: '$.spec.adopt', message: `storage holds the data of dataset "${owner}"`, dataset: owner },
    ]);
  }
}

/**
 * The checks of a new Dataset beyond its schema: storage apart from every other dataset's
 * (`others`), endpoints public unless allowed or already used by a served dataset, and storage
 * holding no other dataset's retained data unless adopted.
 */
export async function checkNewDataset(name: string, spec: DatasetSpec, others: StorageClaim[], store: ConfigStore, settings: AdminSettings): Promise<void> {
  checkStorageFree({ id: name, location: spec.location }, others);
  const served = storeClaims(store).map((claim) => claim.location);
  await checkEndpoints(spec.location, new Set([...(settings.allowedEndpoints ?? []), ...servedOrigins(served)]));
  // Last: it reads the storage, which only a Dataset that passed the other checks may make the data plane connect to.
  await checkRetainedStorage({ apiVersion: API_GROUP_VERSION, kind: 'Dataset', metadata: { name }, spec }, settings);
}

/** Every dataset the store holds, as storage claims. */
export function storeClaims(store: ConfigStore): StorageClaim[] {
  return store.datasetIds().flatMap((id) => {
    const state = store.dataset(id);
    return state ? [{ id, location: state.config.location }] : [];
  });
}
