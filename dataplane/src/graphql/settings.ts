/** Subscription settings from the process settings (README "Subscriptions"). */
import type { DataPlaneSettings } from '../../../model/settings/dataplane.js';
import type { DispatcherOptions } from './dispatcher.js';
import type { QueryLimits } from './limits.js';
import { DEFAULT_LIMITS, type SubscriptionLimits } from './websocket.js';
import { processMemoryCaps, type MemoryCaps } from '../memory-caps.js';

export interface SubscriptionSettings {
  limits: SubscriptionLimits;
  dispatcher: DispatcherOptions;
  /** The per-replica caps and where they came from (the cgroup memory limit or a setting). */
  caps: MemoryCaps;
  /** GraphQL operation limits, on HTTP and both WebSocket protocols. */
  query: QueryLimits;
}

/** Without a memory limit (and without the settings), the caps are the configured defaults. */
const UNLIMITED = { subscriptions: 10_000, connections: DEFAULT_LIMITS.maxConnections };

export function subscriptionSettings(s: DataPlaneSettings, caps: MemoryCaps = processMemoryCaps(s, UNLIMITED)): SubscriptionSettings {
  return {
    caps,
    limits: {
      maxConnections: caps.connections,
      perConnection: s.DAS_SUBSCRIPTIONS_PER_CONNECTION,
      initTimeoutMs: s.DAS_SUBSCRIPTION_INIT_TIMEOUT_MS,
      keepAliveMs: s.DAS_SUBSCRIPTION_KEEPALIVE_MS,
      reverifyMs: s.DAS_SUBSCRIPTION_REVERIFY_MS,
      maxUnauthenticated: s.DAS_WS_MAX_UNAUTHENTICATED,
      maxBufferedBytes: s.DAS_WS_MAX_BUFFERED_BYTES,
      closeGraceMs: s.DAS_WS_CLOSE_GRACE_MS,
      maxMessageBytes: s.DAS_WS_MAX_MESSAGE_BYTES,
    },
    query: {
      maxTokens: s.DAS_GRAPHQL_MAX_TOKENS,
      maxSelections: s.DAS_GRAPHQL_MAX_SELECTIONS,
      maxDepth: s.DAS_GRAPHQL_MAX_DEPTH,
      maxAliases: s.DAS_GRAPHQL_MAX_ALIASES,
      maxCost: s.DAS_GRAPHQL_MAX_COST,
    },
    dispatcher: {
      maxSubscriptions: caps.subscriptions,
      queueBound: s.DAS_SUBSCRIPTION_QUEUE,
      pollMs: s.DAS_CHANGE_POLL_MS,
      minReadIntervalMs: s.DAS_CHANGE_READ_INTERVAL_MS,
      retentionMs: s.DAS_CHANGE_RETENTION_HOURS * 3600_000,
      pruneEveryMs: s.DAS_CHANGE_PRUNE_EVERY_MS,
    },
  };
}
