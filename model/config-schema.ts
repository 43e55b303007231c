/**
 * JSON Schemas of the rendered configs (model/render.ts) the operator publishes in ConfigMaps and
 * the data plane reads back. Built from the spec schemas' pieces (json-schema.ts), so a field the
 * spec gains is accepted here too; what rendering adds (id, generation, defaults) is required.
 */
import { datasetSpecSchema, environmentSpecSchema, NAME_PATTERN } from './json-schema.js';

const dataset = datasetSpecSchema.properties;
const env = environmentSpecSchema.properties;

/** Rendering fills these in, so the data plane can rely on them being there. */
const requiring = <T extends { properties: object }>(schema: T, required: string[], properties: Partial<T['properties']> = {}) => ({
  ...schema,
  required,
  properties: { ...schema.properties, ...properties },
});

export const datasetConfigSchema = {
  $id: 'https://dataaccess.dev/schemas/dataset-config.json',
  type: 'object',
  required: ['id', 'environment', 'generation', 'location', 'auth', 'caller', 'schemas', 'deletionPolicy'],
  additionalProperties: false,
  properties: {
    ...dataset,
    id: { type: 'string', pattern: NAME_PATTERN, maxLength: 63 },
    generation: { type: 'integer', minimum: 0 },
    location: requiring(dataset.location, ['kind', 'defaultConsistency']),
    auth: requiring(dataset.auth, ['iam', 'public'], {
      iam: requiring(dataset.auth.properties.iam, ['principals', 'rawSqlEndpointEnabled']),
      public: requiring(dataset.auth.properties.public, ['enabled', 'subjects']),
    }),
    caller: requiring(dataset.caller, ['super', 'anon']),
  },
} as const;

const firewall = env.gateways.properties.api.properties.firewall;

export const environmentConfigSchema = {
  $id: 'https://dataaccess.dev/schemas/environment-config.json',
  type: 'object',
  required: ['id', 'namespace', 'type', 'uri', 'gateways', 'executors', 'functionGateway'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: NAME_PATTERN, maxLength: 63 },
    namespace: { type: 'string', pattern: NAME_PATTERN, maxLength: 63 },
    type: env.type,
    uri: env.uri,
    domain: env.domain,
    gateways: requiring(env.gateways, ['api', 'iam', 'public'], {
      api: requiring(env.gateways.properties.api, ['firewall'], {
        firewall: requiring(firewall, ['ipAddresses', 'managedRules', 'trustedProxies'], {
          ipAddresses: requiring(firewall.properties.ipAddresses, ['allowed', 'blocked']),
        }),
      }),
      iam: requiring(env.gateways.properties.iam, ['enabled', 'trust', 'audiences', 'proxyFrom']),
      public: requiring(env.gateways.properties.public, ['enabled']),
    }),
    identityProvider: { ...env.identityProvider, required: [...env.identityProvider.required, 'algorithms', 'clockSkewSeconds'] },
    executors: env.executors,
    functionGateway: {
      type: 'object',
      required: ['enabled', 'name', 'invokers'],
      additionalProperties: false,
      properties: { enabled: { type: 'boolean' }, name: { type: 'string', minLength: 1 }, invokers: env.functionGateway.properties.invokers },
    },
    admin: { ...env.admin, required: ['principals'] },
    bulkLoad: env.bulkLoad,
  },
} as const;
