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
    help: 'GraphQL subscriptions open on this replica',
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
    help: 'Subscriptions ended as slow consumers (4429) since this replica started (only grows)',
    registers: [registry],
    collect() {
      this.set(dispatcher.slowConsumers);
    },
  });
  return registry;
}
