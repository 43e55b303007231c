/**
 * Pure rendering of custom resources into the configs the data plane serves. The operator writes
 * the results into ConfigMaps; `npm start` calls the same functions on the example manifests.
 */
import type {
  Consistency,
  DatasetConfig,
  DatasetResource,
  EnvironmentConfig,
  EnvironmentResource,
  LocationKind,
} from './types.js';
import { LOCATION_KIND_FACTS } from './location-kinds.js';

/** The kinds' default levels (from the kinds' facts), for the CRD's descriptions and rendering. */
export const DEFAULT_CONSISTENCY = Object.fromEntries(
  Object.entries(LOCATION_KIND_FACTS).map(([kind, facts]) => [kind, facts.defaultConsistency]),
) as Record<LocationKind, Consistency>;

export const DEFAULT_ALGORITHMS = ['RS256', 'ES256'];

export function functionGatewayName(environmentId: string): string {
  return `service-${environmentId}-function-service-gateway`;
}

/** The audience of ServiceAccount tokens for an Environment's iam gateway (unless `spec.gateways.iam.audiences` says otherwise). */
export function serviceAccountAudience(namespace: string, environmentId: string): string {
  return `dataaccess.dev/${namespace}/${environmentId}`;
}

/** The audience of ServiceAccount tokens for an Environment's function gateway. */
export function functionGatewayAudience(namespace: string, environmentId: string): string {
  return `${serviceAccountAudience(namespace, environmentId)}/function-gateway`;
}

export function renderEnvironmentConfig(env: EnvironmentResource): EnvironmentConfig {
  const spec = env.spec;
  const firewall = spec.gateways?.api?.firewall ?? {};
  const namespace = env.metadata.namespace ?? 'default';
  return {
    id: env.metadata.name,
    namespace,
    type: spec.type,
    uri: spec.uri ?? `k8s://${namespace}/environments/${env.metadata.name}`,
    ...(spec.domain ? { domain: spec.domain } : {}),
    gateways: {
      api: {
        firewall: {
          ipAddresses: { allowed: firewall.ipAddresses?.allowed ?? [], blocked: firewall.ipAddresses?.blocked ?? [] },
          managedRules: firewall.managedRules ?? [],
          trustedProxies: firewall.trustedProxies ?? [],
        },
      },
      iam: {
        enabled: spec.gateways?.iam?.enabled ?? true,
        trust: spec.gateways?.iam?.trust ?? 'network',
        audiences: spec.gateways?.iam?.audiences ?? [serviceAccountAudience(namespace, env.metadata.name)],
        proxyFrom: spec.gateways?.iam?.proxyFrom ?? [],
      },
      public: { enabled: spec.gateways?.public?.enabled ?? true },
    },
    identityProvider: spec.identityProvider && {
      ...spec.identityProvider,
      algorithms: spec.identityProvider.algorithms ?? DEFAULT_ALGORITHMS,
      clockSkewSeconds: spec.identityProvider.clockSkewSeconds ?? 30,
    },
    executors: spec.executors ?? [],
    functionGateway: { enabled: spec.functionGateway?.enabled ?? true, name: functionGatewayName(env.metadata.name), invokers: spec.functionGateway?.invokers ?? [] },
    ...(spec.admin?.principals?.length ? { admin: { principals: spec.admin.principals } } : {}),
    ...(spec.bulkLoad ? { bulkLoad: spec.bulkLoad } : {}),
  };
}

export function renderDatasetConfig(dataset: DatasetResource): DatasetConfig {
  const spec = dataset.spec;
  return {
    id: dataset.metadata.name,
    environment: spec.environment,
    generation: dataset.metadata.generation ?? 1,
    location: { ...spec.location, defaultConsistency: spec.location.defaultConsistency ?? DEFAULT_CONSISTENCY[spec.location.kind] },
    auth: {
      iam: {
        principals: spec.auth?.iam?.principals ?? [],
        rawSqlEndpointEnabled: spec.auth?.iam?.rawSqlEndpointEnabled ?? false,
      },
      public: { enabled: spec.auth?.public?.enabled ?? true, subjects: spec.auth?.public?.subjects ?? [] },
    },
    caller: { super: spec.caller?.super ?? [], anon: spec.caller?.anon ?? false },
    schemas: spec.schemas,
    queries: spec.queries ?? {},
    deletionPolicy: spec.deletionPolicy ?? 'Retain',
    ...(spec.paused ? { paused: true } : {}),
    ...(spec.adopt ? { adopt: spec.adopt } : {}),
  };
}
