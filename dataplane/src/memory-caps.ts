/**
 * Caps on WebSocket connections and subscriptions derived from the Pod's memory limit, so that a
 * replica refuses the next subscriber (503 before the upgrade) before the OOM killer ends all of
 * them. The limit is read from the cgroup (v2 `memory.max`, v1 `memory/memory.limit_in_bytes`);
 * no limit ("max", or a value at or above the machine's memory) leaves the configured defaults.
 *
 *   cap = floor((limit − DAS_MEMORY_RESERVE_BYTES) / DAS_MEMORY_PER_SUBSCRIBER_BYTES)
 *
 * The reserve is the replica's own footprint plus room for requests (bodies are bounded by
 * DAS_BODY_BUDGET_BYTES); the per-subscriber figure is a subscriber's measured RSS (one connection
 * and one subscription, events in flight) with headroom — docs/subscriptions.md has the
 * measurements. DAS_SUBSCRIPTIONS_PER_REPLICA and DAS_WS_MAX_CONNECTIONS, when set, win.
 * Pure functions here; readCgroupMemoryLimit is the only I/O.
 */
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../model/settings/dataplane.js';

export const MiB = 1024 * 1024;

/** The defaults of the formula (docs/subscriptions.md, "Memory"). */
export const DEFAULT_RESERVE_BYTES = DATAPLANE_DEFAULTS.DAS_MEMORY_RESERVE_BYTES;
export const DEFAULT_BYTES_PER_SUBSCRIBER = DATAPLANE_DEFAULTS.DAS_MEMORY_PER_SUBSCRIBER_BYTES;
/** Without a memory limit (and no setting): the caps' defaults, unless the caller gives its own. */
export const UNLIMITED_DEFAULT_CAP = 10_000;

/** What the cgroup files hold (undefined: the file is not there). */
export interface CgroupFiles {
  v2?: string;
  v1?: string;
}

/** The memory limit in bytes, or undefined when there is none. A limit at or above `hostBytes` is none (v1 writes 2^63 rounded to pages for "unlimited"). */
export function memoryLimitOf(files: CgroupFiles, hostBytes: number): number | undefined {
  const raw = (files.v2 ?? files.v1)?.trim();
  if (raw === undefined || raw === '' || raw === 'max') return undefined;
  if (!/^\d+$/.test(raw)) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value >= hostBytes) return undefined;
  return value;
}

/** Reads the cgroup files under `root` (DAS_CGROUP_ROOT, default /sys/fs/cgroup). */
export function readCgroupFiles(root = '/sys/fs/cgroup'): CgroupFiles {
  const read = (path: string) => {
    try {
      return readFileSync(join(root, path), 'utf8');
    } catch {
      return undefined;
    }
  };
  return { v2: read('memory.max'), v1: read('memory/memory.limit_in_bytes') };
}

export interface MemoryCapSettings {
  reserveBytes: number;
  bytesPerSubscriber: number;
  /** Explicit caps (DAS_SUBSCRIPTIONS_PER_REPLICA, DAS_WS_MAX_CONNECTIONS): they win over the derived ones. */
  subscriptions?: number;
  connections?: number;
  /** The caps when there is no limit (default UNLIMITED_DEFAULT_CAP each). */
  unlimited?: { subscriptions: number; connections: number };
}

export interface MemoryCaps {
  /** Subscriptions a replica holds at once. */
  subscriptions: number;
  /** WebSocket connections a replica holds at once. */
  connections: number;
  /** The memory limit the caps come from, if any. */
  limitBytes?: number;
  /** Where each cap came from, for the start-up log. */
  source: { subscriptions: 'setting' | 'memory limit' | 'default'; connections: 'setting' | 'memory limit' | 'default' };
}

/**
 * The caps for a memory limit. A subscriber is one connection with one subscription, so both caps
 * get the same figure: a replica full of single-subscription connections stays inside the limit,
 * and connections multiplexing many subscriptions are bounded by the subscription cap.
 */
export function memoryCaps(limitBytes: number | undefined, settings: MemoryCapSettings): MemoryCaps {
  const derived = limitBytes === undefined ? undefined : Math.max(0, Math.floor((limitBytes - settings.reserveBytes) / settings.bytesPerSubscriber));
  const unlimited = settings.unlimited ?? { subscriptions: UNLIMITED_DEFAULT_CAP, connections: UNLIMITED_DEFAULT_CAP };
  const pick = (explicit: number | undefined, fallback: number) =>
    explicit !== undefined ? { cap: explicit, source: 'setting' as const } : derived !== undefined ? { cap: derived, source: 'memory limit' as const } : { cap: fallback, source: 'default' as const };
  const subscriptions = pick(settings.subscriptions, unlimited.subscriptions);
  const connections = pick(settings.connections, unlimited.connections);
  return { subscriptions: subscriptions.cap, connections: connections.cap, limitBytes, source: { subscriptions: subscriptions.source, connections: connections.source } };
}

export type MemoryCapVariables = Pick<DataPlaneSettings, 'DAS_CGROUP_ROOT' | 'DAS_MEMORY_RESERVE_BYTES' | 'DAS_MEMORY_PER_SUBSCRIBER_BYTES' | 'DAS_SUBSCRIPTIONS_PER_REPLICA' | 'DAS_WS_MAX_CONNECTIONS'>;

/** The caps of this process: its cgroup's limit and its settings. */
export function processMemoryCaps(settings: MemoryCapVariables, unlimited?: MemoryCapSettings['unlimited']): MemoryCaps {
  const limit = memoryLimitOf(readCgroupFiles(settings.DAS_CGROUP_ROOT), totalmem());
  return memoryCaps(limit, {
    reserveBytes: settings.DAS_MEMORY_RESERVE_BYTES,
    bytesPerSubscriber: settings.DAS_MEMORY_PER_SUBSCRIBER_BYTES,
    subscriptions: settings.DAS_SUBSCRIPTIONS_PER_REPLICA,
    connections: settings.DAS_WS_MAX_CONNECTIONS,
    unlimited,
  });
}
