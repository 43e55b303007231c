/** Subscription settings from the process environment (README "Subscriptions"); a bad value stops the start. */
import { wholeNumberSetting } from '../env-settings.js';
import type { DispatcherOptions } from './dispatcher.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from './limits.js';
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

export function subscriptionSettings(env: NodeJS.ProcessEnv = process.env, caps: MemoryCaps = processMemoryCaps(env, UNLIMITED)): SubscriptionSettings {
  return {
    caps,
    limits: {
      maxConnections: caps.connections,
      perConnection: wholeNumberSetting(env, 'DAS_SUBSCRIPTIONS_PER_CONNECTION', DEFAULT_LIMITS.perConnection, 1),
      initTimeoutMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_INIT_TIMEOUT_MS', DEFAULT_LIMITS.initTimeoutMs, 1),
      keepAliveMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_KEEPALIVE_MS', DEFAULT_LIMITS.keepAliveMs, 1),
      reverifyMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_REVERIFY_MS', DEFAULT_LIMITS.reverifyMs, 100),
      maxUnauthenticated: wholeNumberSetting(env, 'DAS_WS_MAX_UNAUTHENTICATED', DEFAULT_LIMITS.maxUnauthenticated, 1),
      maxBufferedBytes: wholeNumberSetting(env, 'DAS_WS_MAX_BUFFERED_BYTES', DEFAULT_LIMITS.maxBufferedBytes, 1024),
      closeGraceMs: wholeNumberSetting(env, 'DAS_WS_CLOSE_GRACE_MS', DEFAULT_LIMITS.closeGraceMs, 1),
      maxMessageBytes: wholeNumberSetting(env, 'DAS_WS_MAX_MESSAGE_BYTES', DEFAULT_LIMITS.maxMessageBytes, 1024),
    },
    query: {
      maxTokens: wholeNumberSetting(env, 'DAS_GRAPHQL_MAX_TOKENS', DEFAULT_QUERY_LIMITS.maxTokens, 1),
      maxSelections: wholeNumberSetting(env, 'DAS_GRAPHQL_MAX_SELECTIONS', DEFAULT_QUERY_LIMITS.maxSelections, 1),
      maxDepth: wholeNumberSetting(env, 'DAS_GRAPHQL_MAX_DEPTH', DEFAULT_QUERY_LIMITS.maxDepth, 1),
      maxAliases: wholeNumberSetting(env, 'DAS_GRAPHQL_MAX_ALIASES', DEFAULT_QUERY_LIMITS.maxAliases, 0),
      maxCost: wholeNumberSetting(env, 'DAS_GRAPHQL_MAX_COST', DEFAULT_QUERY_LIMITS.maxCost, 1),
    },
    dispatcher: {
      maxSubscriptions: caps.subscriptions,
      queueBound: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_QUEUE', 1000, 1),
      pollMs: wholeNumberSetting(env, 'DAS_CHANGE_POLL_MS', 1000, 10),
      minReadIntervalMs: wholeNumberSetting(env, 'DAS_CHANGE_READ_INTERVAL_MS', 25, 0),
      retentionMs: wholeNumberSetting(env, 'DAS_CHANGE_RETENTION_HOURS', 24, 1) * 3600_000,
      pruneEveryMs: wholeNumberSetting(env, 'DAS_CHANGE_PRUNE_EVERY_MS', 60_000, 1000),
    },
  };
}
