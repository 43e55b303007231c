/** Subscription settings from the process environment (README "Subscriptions"); a bad value stops the start. */
import { wholeNumberSetting } from '../env-settings.js';
import type { DispatcherOptions } from './dispatcher.js';
import { DEFAULT_LIMITS, type SubscriptionLimits } from './websocket.js';

export interface SubscriptionSettings {
  limits: SubscriptionLimits;
  dispatcher: DispatcherOptions;
}

export function subscriptionSettings(env: NodeJS.ProcessEnv = process.env): SubscriptionSettings {
  return {
    limits: {
      perConnection: wholeNumberSetting(env, 'DAS_SUBSCRIPTIONS_PER_CONNECTION', DEFAULT_LIMITS.perConnection, 1),
      initTimeoutMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_INIT_TIMEOUT_MS', DEFAULT_LIMITS.initTimeoutMs, 1),
      keepAliveMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_KEEPALIVE_MS', DEFAULT_LIMITS.keepAliveMs, 1),
      reverifyMs: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_REVERIFY_MS', DEFAULT_LIMITS.reverifyMs, 100),
    },
    dispatcher: {
      maxSubscriptions: wholeNumberSetting(env, 'DAS_SUBSCRIPTIONS_PER_REPLICA', 10_000, 1),
      queueBound: wholeNumberSetting(env, 'DAS_SUBSCRIPTION_QUEUE', 1000, 1),
      pollMs: wholeNumberSetting(env, 'DAS_CHANGE_POLL_MS', 1000, 10),
      minReadIntervalMs: wholeNumberSetting(env, 'DAS_CHANGE_READ_INTERVAL_MS', 25, 0),
      retentionMs: wholeNumberSetting(env, 'DAS_CHANGE_RETENTION_HOURS', 24, 1) * 3600_000,
      pruneEveryMs: wholeNumberSetting(env, 'DAS_CHANGE_PRUNE_EVERY_MS', 60_000, 1000),
    },
  };
}
