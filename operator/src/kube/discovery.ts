/**
 * Which API versions the cluster serves (GET /apis). Discovery at start is retried until it
 * succeeds: assuming the oldest versions after a brief outage left an operator on
 * `autoscaling/v2beta2` and `policy/v1beta1` until restarted, even on a cluster that had removed
 * them. Afterwards the served versions are checked again periodically; a change is reported to the
 * caller (main.ts restarts the operator, whose informers watch the versions chosen at start).
 */
import type { Logger } from 'pino';
import { capabilitiesFromGroups, type ClusterCapabilities } from '../render/capabilities.js';
import { ExponentialBackoff } from './backoff.js';
import type { KubeObjectClient } from './object-client.js';

interface ApiGroupList {
  groups?: { versions?: { groupVersion?: string }[] }[];
}

type Discoverer = Pick<KubeObjectClient, 'getJson'>;

export function servedGroupVersions(list: ApiGroupList): Set<string> {
  return new Set((list.groups ?? []).flatMap((g) => (g.versions ?? []).flatMap((v) => (v.groupVersion ? [v.groupVersion] : []))));
}

async function discoverOnce(client: Discoverer): Promise<ClusterCapabilities> {
  return capabilitiesFromGroups(servedGroupVersions(await client.getJson<ApiGroupList>('/apis')), false);
}

export interface DiscoveryRetry {
  /** First delay after a failure (1 s), doubled per failure up to maxMs (30 s). */
  baseMs?: number;
  maxMs?: number;
}

/** Discovers the served versions, retrying with backoff until the API server answers. */
export async function discoverCapabilities(client: Discoverer, logger: Logger, retry: DiscoveryRetry = {}): Promise<ClusterCapabilities> {
  const backoff = new ExponentialBackoff(retry.baseMs ?? 1000, retry.maxMs ?? 30_000);
  for (let attempt = 1; ; attempt++) {
    try {
      const capabilities = await discoverOnce(client);
      logger.info({ autoscaling: capabilities.autoscaling, policy: capabilities.policy }, 'API versions discovered');
      return capabilities;
    } catch (err) {
      const retryInMs = backoff.next();
      logger.warn({ err: err instanceof Error ? err.message : String(err), attempt, retryInMs }, 'API discovery failed; retrying (the served versions decide what is rendered)');
      await new Promise((resolve) => setTimeout(resolve, retryInMs));
    }
  }
}

/** Every DISCOVERY_PERIOD_MS (10 min) by default. */
export const DISCOVERY_PERIOD_MS = 10 * 60_000;

/**
 * Checks the served versions every `periodMs`; calls `onChange` with the new ones when autoscaling or
 * policy differ from `current`. A failed check is logged and tried again next period.
 */
export function watchServedVersions(
  client: Discoverer,
  logger: Logger,
  current: ClusterCapabilities,
  onChange: (next: ClusterCapabilities) => void,
  periodMs = DISCOVERY_PERIOD_MS,
): { stop(): void } {
  let checking = false;
  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    try {
      const next = await discoverOnce(client);
      if (next.autoscaling !== current.autoscaling || next.policy !== current.policy) {
        logger.warn({ was: { autoscaling: current.autoscaling, policy: current.policy }, now: { autoscaling: next.autoscaling, policy: next.policy } }, 'served API versions changed');
        onChange(next);
      }
    } catch (err) {
      logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'API discovery failed; keeping the versions in use, checking again later');
    } finally {
      checking = false;
    }
  }, periodMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
