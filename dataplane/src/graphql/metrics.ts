/**
 * The data plane's Prometheus registry on GET /metrics: subscription figures read from the
 * dispatcher and the WebSocket server when scraped (nothing is counted on the hot path twice).
 */
import { Gauge, Registry } from 'prom-client';
import type { ChangeDispatcher } from './dispatcher.js';
import type { SubscriptionServer } from './websocket.js';

export function subscriptionMetrics(dispatcher: ChangeDispatcher, server: SubscriptionServer, registry = new Registry()): Registry {
  new Gauge({
    name: 'das_subscriptions',
    help: 'GraphQL subscriptions open on this replica and reading: every change committed from now on reaches them (starting ones are not counted)',
    registers: [registry],
    collect() {
      this.set(dispatcher.subscriptions);
    },
  });
  new Gauge({
    name: 'das_subscription_connections',
    help: 'WebSocket connections open on this replica',
    registers: [registry],
    collect() {
      this.set(server.connectionCount);
    },
  });
  new Gauge({
    name: 'das_subscription_unauthenticated_connections',
    help: 'WebSocket connections open on this replica whose credentials are not verified yet (capped by DAS_WS_MAX_UNAUTHENTICATED)',
    registers: [registry],
    collect() {
      this.set(server.unauthenticatedCount);
    },
  });
  new Gauge({
    name: 'das_subscription_events_delivered',
    help: 'Change events handed to subscriptions on this replica since it started (a counter: only grows)',
    registers: [registry],
    collect() {
      this.set(dispatcher.delivered);
    },
  });
  new Gauge({
    name: 'das_subscription_slow_consumers',
    help: 'Slow consumers ended with 4429 since this replica started (only grows): subscriptions whose event queue overflowed, and connections whose unsent bytes passed their budget',
    registers: [registry],
    collect() {
      this.set(dispatcher.slowConsumers);
    },
  });
  new Gauge({
    name: 'das_change_feed_reads',
    help: "Reads of a dataset's change feed by this replica's reader since it started (only grows); none while the dataset has no subscriber here",
    labelNames: ['dataset'],
    registers: [registry],
    collect() {
      for (const [dataset, reads] of dispatcher.reads) this.set({ dataset }, reads);
    },
  });
  new Gauge({
    name: 'das_change_feed_lag_seconds',
    help: "Per dataset, how long before this replica's last read of its feed the newest change it found committed (0: it found none)",
    labelNames: ['dataset'],
    registers: [registry],
    collect() {
      for (const [dataset, ms] of dispatcher.lagMs) this.set({ dataset }, ms / 1000);
    },
  });
  return registry;
}
