/**
 * Which API versions the cluster serves (GET /apis, once at start). A failed discovery assumes the
 * oldest versions every supported cluster serves, and says so in the log.
 */
import type { Logger } from 'pino';
import { OLDEST_CAPABILITIES, capabilitiesFromGroups, type ClusterCapabilities } from '../render/capabilities.js';
import type { KubeObjectClient } from './object-client.js';

interface ApiGroupList {
  groups?: { versions?: { groupVersion?: string }[] }[];
}

export function servedGroupVersions(list: ApiGroupList): Set<string> {
  return new Set((list.groups ?? []).flatMap((g) => (g.versions ?? []).flatMap((v) => (v.groupVersion ? [v.groupVersion] : []))));
}

export async function discoverCapabilities(client: Pick<KubeObjectClient, 'getJson'>, logger: Logger): Promise<ClusterCapabilities> {
  try {
    const capabilities = capabilitiesFromGroups(servedGroupVersions(await client.getJson<ApiGroupList>('/apis')), false);
    logger.info({ autoscaling: capabilities.autoscaling, policy: capabilities.policy }, 'API versions discovered');
    return capabilities;
  } catch (err) {
    logger.warn({ err: err instanceof Error ? err.message : String(err), assumed: OLDEST_CAPABILITIES }, 'API discovery failed; assuming the oldest supported versions');
    return { ...OLDEST_CAPABILITIES };
  }
}
