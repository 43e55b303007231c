/**
 * JSON Schemas of the Environment and Dataset specs. ajv validates manifests with them at start
 * (data plane) and on reconcile (operator); the CRDs' OpenAPI schemas express the same rules.
 */
import { CONSISTENCY_LEVELS, ENVIRONMENT_TYPES, IAM_TRUST_MODES, LOCATION_KINDS, MANAGED_RULE_SETS, QUERY_ARGUMENT_TYPES, SCALAR_PROPERTY_TYPES } from './types.js';

/** DNS-1123 label: usable as a host label and inside Kubernetes object names. */
export const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** `<namespace>.<Name>`, each part an identifier. */
export const SCHEMA_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$';
/** Property names are identifiers, so every physical column name derived from them is too. */
export const PROPERTY_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,62}$';
/** IPv4 or IPv6 CIDR (checked exactly by the `cidr` format; the pattern is for the CRD). */
export const CIDR_PATTERN = '^([0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/[0-9]{1,3})$';

/**
 * A relative path inside a volume (a volumeMount's subPath): `/`-separated segments of letters,
 * digits, `_`, `-` and `.`, none starting with `.`, so no absolute path, no `..` (nor `.` or hidden
 * directories), no empty segment. RE2-compatible (no lookaround) for the CRD.
 */
export const SUB_PATH_PATTERN = '^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$';

/**
 * A Secret data key as the API server accepts it: letters, digits, `-`, `_` and `.`, but not `.`,
 * `..` or anything starting with `..` (the key is also a file name under the Secret's mount).
 * RE2-compatible for the CRD.
 */
/** An AWS-style access key id as the function gateway's SigV4 credential scope carries it (no "/", ",", white space). */
export const ACCESS_KEY_ID_PATTERN = '^[A-Za-z0-9_.+=@-]{1,128}$';
export const SECRET_KEY_PATTERN = '^([-_a-zA-Z0-9]|\\.[-_a-zA-Z0-9])[-._a-zA-Z0-9]*$';

/** Query argument names, as `${name}` placeholders write them. */
export const ARGUMENT_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,62}$';
/** Longest query SQL, in characters: the raw SQL endpoint's limit. */
export const MAX_QUERY_SQL_LENGTH = 100_000;
/** Longest filter text of a query (model/filter.ts MAX_FILTER_LENGTH). */
export const MAX_QUERY_FILTER_LENGTH = 4096;

const cidrList = { type: 'array', items: { type: 'string', format: 'cidr' }, maxItems: 1000 } as const;

export const propertyDefSchema = {
  $id: 'https://dataaccess.dev/schemas/property.json',
  type: 'object',
  required: ['type'],
  properties: {
    type: { enum: [...SCALAR_PROPERTY_TYPES, 'object', 'link', 'links'] },
    description: { type: 'string' },
    /** Scalars and links: an index serves sorts led by this property (checked in crossCheckDataset). */
    sortable: { type: 'boolean' },
    schema: { type: 'string', pattern: SCHEMA_NAME_PATTERN },
    /** links (inverse link): the source schema's link property that points here. */
    property: { type: 'string', pattern: PROPERTY_NAME_PATTERN },
    properties: {
      type: 'object',
      propertyNames: { pattern: PROPERTY_NAME_PATTERN },
      additionalProperties: { $ref: 'property.json' },
    },
  },
  additionalProperties: false,
  // Which of `schema` / `properties` a type needs is checked in crossCheckDataset, with clearer messages.
} as const;

/**
 * Warehouse object names are unquoted identifiers (letters, digits, `_` and `$`, not starting with a
 * digit): the driver writes them into statements (USE WAREHOUSE, CREATE ICEBERG TABLE … EXTERNAL_VOLUME)
 * where Snowflake takes no bind, so anything else is refused here rather than quoted there.
 */
export const WAREHOUSE_IDENTIFIER_PATTERN = '^[A-Za-z_][A-Za-z0-9_$]{0,254}$';
/** `orgname-accountname`, or a locator with its region (`xy12345.eu-west-1.aws`). */
export const WAREHOUSE_ACCOUNT_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$';

export const datasetSpecSchema = {
  $id: 'https://dataaccess.dev/schemas/dataset-spec.json',
  type: 'object',
  required: ['environment', 'location', 'schemas'],
  additionalProperties: false,
  properties: {
    environment: { type: 'string', pattern: NAME_PATTERN, maxLength: 63 },
    location: {
      type: 'object',
      required: ['kind'],
      additionalProperties: false,
      properties: {
        kind: { enum: [...LOCATION_KINDS] },
        connectionSecretRef: {
          type: 'object',
          required: ['name', 'key'],
          additionalProperties: false,
          properties: { name: { type: 'string', pattern: NAME_PATTERN }, key: { type: 'string', pattern: SECRET_KEY_PATTERN, maxLength: 253 } },
        },
        databaseSchema: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$' },
        account: { type: 'string', pattern: WAREHOUSE_ACCOUNT_PATTERN },
        accessUrl: { type: 'string', pattern: '^https?://[^\\s/?#]+/?$', maxLength: 2048 },
        database: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        schema: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        warehouse: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        role: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        readOnlyRole: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        externalVolume: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        baseLocation: { type: 'string', pattern: '^[A-Za-z0-9_./-]+$', maxLength: 1024 },
        catalog: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
        tablePrefix: { type: 'string', pattern: '^[A-Za-z0-9_.-]{0,200}$' },
        region: { type: 'string', minLength: 1 },
        endpoint: { type: 'string', pattern: '^https?://[^\\s]+$', maxLength: 2048 },
        credentialsSecretRef: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name: { type: 'string', pattern: NAME_PATTERN } },
        },
        defaultConsistency: { enum: [...CONSISTENCY_LEVELS] },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      properties: {
        iam: {
          type: 'object',
          additionalProperties: false,
          properties: {
            principals: { type: 'array', items: { type: 'string', minLength: 1 } },
            rawSqlEndpointEnabled: { type: 'boolean' },
          },
        },
        public: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean' },
            subjects: { type: 'array', items: { type: 'string', minLength: 1 } },
          },
        },
      },
    },
    caller: {
      type: 'object',
      additionalProperties: false,
      properties: {
        super: { type: 'array', items: { type: 'string', minLength: 1 } },
        anon: { type: 'boolean' },
      },
    },
    schemas: {
      type: 'object',
      minProperties: 1,
      propertyNames: { pattern: SCHEMA_NAME_PATTERN },
      additionalProperties: {
        type: 'object',
        required: ['properties'],
        additionalProperties: false,
        properties: {
          description: { type: 'string' },
          properties: {
            type: 'object',
            propertyNames: { pattern: PROPERTY_NAME_PATTERN },
            additionalProperties: { $ref: 'property.json' },
          },
          required: { type: 'array', items: { type: 'string', pattern: PROPERTY_NAME_PATTERN } },
        },
      },
    },
    queries: {
      type: 'object',
      propertyNames: { pattern: SCHEMA_NAME_PATTERN },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        // Which fields go together (schema/filter/sort, or sql/using) is checked in model/queries.ts.
        properties: {
          description: { type: 'string' },
          schema: { type: 'string', pattern: SCHEMA_NAME_PATTERN },
          filter: { type: 'string', minLength: 1, maxLength: MAX_QUERY_FILTER_LENGTH },
          sort: { type: 'string', minLength: 1 },
          sql: { type: 'string', minLength: 1, maxLength: MAX_QUERY_SQL_LENGTH },
          using: {
            type: 'object',
            propertyNames: { pattern: ARGUMENT_NAME_PATTERN },
            additionalProperties: { type: 'string', pattern: SCHEMA_NAME_PATTERN },
          },
          arguments: {
            type: 'object',
            propertyNames: { pattern: ARGUMENT_NAME_PATTERN },
            additionalProperties: {
              type: 'object',
              required: ['type'],
              additionalProperties: false,
              properties: {
                type: { enum: [...QUERY_ARGUMENT_TYPES] },
                required: { type: 'boolean' },
                description: { type: 'string' },
              },
            },
          },
        },
      },
    },
    deletionPolicy: { enum: ['Retain', 'Delete'] },
    paused: { type: 'boolean' },
    adopt: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' },
  },
} as const;

/** A non-negative Kubernetes quantity (the API server's resource.Quantity syntax without a sign). */
export const QUANTITY_PATTERN = '^(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
export const MAX_WORKLOAD_REPLICAS = 100;
const quantity = { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: QUANTITY_PATTERN }] } as const;
const quantities = { type: 'object', propertyNames: { pattern: '^[a-z0-9]([-a-z0-9./]*[a-z0-9])?$', maxLength: 253 }, additionalProperties: quantity } as const;
const percentage = { type: 'integer', minimum: 1, maximum: 100 } as const;

/** replicas, resources and autoscaling of the data plane and the function gateway. */
const workloadProperties = {
  replicas: { type: 'integer', minimum: 0, maximum: MAX_WORKLOAD_REPLICAS },
  resources: {
    type: 'object',
    additionalProperties: false,
    properties: { requests: quantities, limits: quantities },
  },
  autoscaling: {
    type: 'object',
    required: ['maxReplicas'],
    additionalProperties: false,
    properties: {
      minReplicas: { type: 'integer', minimum: 1, maximum: MAX_WORKLOAD_REPLICAS },
      maxReplicas: { type: 'integer', minimum: 1, maximum: MAX_WORKLOAD_REPLICAS },
      targetCPUUtilizationPercentage: percentage,
      targetMemoryUtilizationPercentage: percentage,
    },
  },
} as const;

export const environmentSpecSchema = {
  $id: 'https://dataaccess.dev/schemas/environment-spec.json',
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { enum: [...ENVIRONMENT_TYPES] },
    uri: { type: 'string', minLength: 1 },
    domain: { type: 'string', maxLength: 200, pattern: '^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$' },
    dataplane: {
      type: 'object',
      additionalProperties: false,
      properties: {
        image: { type: 'string', minLength: 1 },
        ...workloadProperties,
        logLevel: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] },
        serviceAccountAnnotations: {
          type: 'object',
          propertyNames: { pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$', maxLength: 317 },
          additionalProperties: { type: 'string', maxLength: 4096 },
        },
      },
    },
    gateways: {
      type: 'object',
      additionalProperties: false,
      properties: {
        api: {
          type: 'object',
          additionalProperties: false,
          properties: {
            firewall: {
              type: 'object',
              additionalProperties: false,
              properties: {
                ipAddresses: {
                  type: 'object',
                  additionalProperties: false,
                  properties: { allowed: cidrList, blocked: cidrList },
                },
                managedRules: { type: 'array', uniqueItems: true, items: { enum: [...MANAGED_RULE_SETS] } },
                trustedProxies: cidrList,
              },
            },
          },
        },
        iam: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean' },
            /** network: a Proxy assertion is believed from any admitted address; verified: ServiceAccount tokens (TokenReview), Proxy only from proxyFrom. */
            trust: { enum: [...IAM_TRUST_MODES] },
            /** The audiences a ServiceAccount token must carry (default dataaccess.dev/<namespace>/<environment>). */
            audiences: { type: 'array', minItems: 1, maxItems: 16, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 256 } },
            /** trust verified: the only addresses (CIDRs) a Proxy assertion is believed from. */
            proxyFrom: cidrList,
          },
        },
        public: { type: 'object', additionalProperties: false, properties: { enabled: { type: 'boolean' } } },
      },
    },
    identityProvider: {
      type: 'object',
      required: ['issuer', 'audiences'],
      additionalProperties: false,
      properties: {
        issuer: { type: 'string', minLength: 1 },
        audiences: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        jwksUri: { type: 'string', pattern: '^https?://' },
        jwks: {
          type: 'object',
          required: ['keys'],
          properties: { keys: { type: 'array', items: { type: 'object' } } },
        },
        algorithms: {
          type: 'array',
          minItems: 1,
          items: { enum: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] },
        },
        clockSkewSeconds: { type: 'integer', minimum: 0, maximum: 300 },
        development: { type: 'boolean' },
      },
    },
    executors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,63}$' },
          warehouse: { type: 'string', pattern: WAREHOUSE_IDENTIFIER_PATTERN },
          description: { type: 'string' },
        },
      },
    },
    functionGateway: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        image: { type: 'string', minLength: 1 },
        /** trust verified: ServiceAccount principal patterns allowed to invoke (system:serviceaccount:team-a:*). */
        invokers: { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 2048 } },
        /** The Lambda Invoke API's SigV4 access keys: name (the caller's principal), accessKeyId, secretRef to the secret access key. */
        accessKeys: {
          type: 'array',
          maxItems: 100,
          items: {
            type: 'object',
            required: ['name', 'accessKeyId', 'secretRef'],
            additionalProperties: false,
            properties: {
              name: { type: 'string', minLength: 1, maxLength: 2048 },
              accessKeyId: { type: 'string', pattern: ACCESS_KEY_ID_PATTERN },
              secretRef: {
                type: 'object',
                required: ['name', 'key'],
                additionalProperties: false,
                properties: { name: { type: 'string', pattern: NAME_PATTERN, maxLength: 253 }, key: { type: 'string', pattern: SECRET_KEY_PATTERN, maxLength: 253 } },
              },
            },
          },
        },
        ...workloadProperties,
      },
    },
    monitoring: {
      type: 'object',
      additionalProperties: false,
      properties: { podMonitor: { type: 'boolean' } },
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      properties: { principals: { type: 'array', items: { type: 'string', minLength: 1 } } },
    },
    bulkLoad: {
      type: 'object',
      additionalProperties: false,
      properties: {
        s3: {
          type: 'object',
          additionalProperties: false,
          properties: {
            region: { type: 'string', minLength: 1 },
            endpoint: { type: 'string', pattern: '^https?://' },
            forcePathStyle: { type: 'boolean' },
            credentialsSecretRef: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', pattern: NAME_PATTERN } } },
          },
        },
        imports: {
          type: 'object',
          required: ['claimName'],
          additionalProperties: false,
          properties: {
            claimName: { type: 'string', pattern: NAME_PATTERN, maxLength: 253 },
            subPath: { type: 'string', pattern: SUB_PATH_PATTERN, minLength: 1, maxLength: 255 },
          },
        },
      },
    },
  },
} as const;

