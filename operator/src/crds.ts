/**
 * The CustomResourceDefinitions of Environment and Dataset, as a pure function of the shared model
 * (enums and patterns from model/). `operator/src/generate-crds.ts` writes them to crds/ and to the
 * chart; a unit test keeps the checked-in files equal to this output.
 *
 * What an OpenAPI schema in a CRD can check, it checks here (types, enums, patterns, CIDR format,
 * required fields, unique executor names). Nested object properties of record schemas are recursive,
 * which CRD schemas cannot be: below a documented level the schema preserves unknown fields, and the
 * operator's ajv validation (model/validate.ts) reports problems there in status.conditions.
 */
import { stringify } from 'yaml';
import {
  ACCESS_KEY_ID_PATTERN,
  CIDR_PATTERN,
  MAX_QUERY_FILTER_LENGTH,
  MAX_QUERY_SQL_LENGTH,
  MAX_WORKLOAD_REPLICAS,
  NAME_PATTERN,
  PROPERTY_NAME_PATTERN,
  QUANTITY_PATTERN,
  SCHEMA_NAME_PATTERN,
  SUB_PATH_PATTERN,
  WAREHOUSE_ACCOUNT_PATTERN,
  WAREHOUSE_IDENTIFIER_PATTERN,
  SECRET_KEY_PATTERN,
} from '../../model/json-schema.js';
import { DEFAULT_ALGORITHMS, DEFAULT_CONSISTENCY } from '../../model/render.js';
import { API_GROUP, API_VERSION, CONSISTENCY_LEVELS, ENVIRONMENT_TYPES, IAM_TRUST_MODES, LOCATION_KINDS, MANAGED_RULE_SETS, QUERY_ARGUMENT_TYPES, SCALAR_PROPERTY_TYPES } from '../../model/types.js';
import { DATAPLANE_DEFAULT_RESOURCES, DEFAULT_MIN_REPLICAS, DEFAULT_TARGET_CPU_PERCENT, FUNCTION_GATEWAY_DEFAULT_RESOURCES } from '../../model/workloads.js';
import type { ResourceRequirements } from '../../model/types.js';
import { DEFAULT_DATAPLANE_REPLICAS } from './render/dataplane.js';
import { DEFAULT_FUNCTION_GATEWAY_REPLICAS } from './render/function-gateway.js';

export type Schema = Record<string, unknown>;

/**
 * Environment names become Service names (`E-internal`), which must start with a letter, and the
 * function gateway name `service-E-function-service-gateway` must stay within 63 characters.
 */
export const ENVIRONMENT_NAME_PATTERN = '^[a-z]([-a-z0-9]*[a-z0-9])?$';
export const ENVIRONMENT_NAME_MAX_LENGTH = 30;
const JWS_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

const str = (description: string, extra: Schema = {}): Schema => ({ type: 'string', description, ...extra });
const bool = (description: string, fallback?: boolean): Schema => ({ type: 'boolean', description, ...(fallback === undefined ? {} : { default: fallback }) });
const int = (description: string, extra: Schema = {}): Schema => ({ type: 'integer', description, ...extra });
const obj = (description: string, properties: Record<string, Schema>, extra: Schema = {}): Schema => ({ type: 'object', description, properties, ...extra });
const list = (description: string, items: Schema, extra: Schema = {}): Schema => ({ type: 'array', description, items, ...extra });
const cidrList = (description: string): Schema =>
  list(description, str('An IPv4 or IPv6 range in CIDR notation, e.g. 10.0.0.0/8 or 2001:db8::/32.', { format: 'cidr', pattern: CIDR_PATTERN }), { maxItems: 1000 });

const quantitiesSchema = (description: string): Schema => ({
  type: 'object',
  description,
  additionalProperties: {
    description: 'A quantity, e.g. 250m (CPU) or 512Mi (memory), by resource name (cpu, memory, ephemeral-storage…).',
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    pattern: QUANTITY_PATTERN,
    'x-kubernetes-int-or-string': true,
  },
});
const percentSchema = (description: string, extra: Schema = {}): Schema => int(description, { minimum: 1, maximum: 100, ...extra });
const quantitiesText = (q?: Record<string, unknown>) => Object.entries(q ?? {}).map(([k, v]) => `${k} ${String(v)}`).join(', ');

/** replicas, resources and autoscaling of a workload; what a 1.20 CRD cannot check (min ≤ max) the operator does. */
function workloadSchema(what: string, replicas: number, resources: ResourceRequirements): Record<string, Schema> {
  return {
    replicas: int(`Number of ${what} pods while autoscaling is not set (and again once it is removed).`, { minimum: 0, maximum: MAX_WORKLOAD_REPLICAS, default: replicas }),
    resources: obj(
      `The ${what} container's resources (a ResourceRequirements; replaces the default as a whole). Default: requests ${quantitiesText(resources.requests)}; limits ${quantitiesText(resources.limits)}.`,
      { requests: quantitiesSchema('Minimum resources (the autoscaler\'s percentages are of these).'), limits: quantitiesSchema('Maximum resources.') },
    ),
    autoscaling: obj(
      `A HorizontalPodAutoscaler of the same name scales the ${what} between minReplicas and maxReplicas; the operator then leaves the Deployment's replicas to it. minReplicas must not exceed maxReplicas (checked by the operator: Degraded, reason Invalid).`,
      {
        minReplicas: int('Lower bound.', { minimum: 1, maximum: MAX_WORKLOAD_REPLICAS, default: DEFAULT_MIN_REPLICAS }),
        maxReplicas: int('Upper bound.', { minimum: 1, maximum: MAX_WORKLOAD_REPLICAS }),
        targetCPUUtilizationPercentage: percentSchema('Average CPU use the autoscaler aims at, in percent of the CPU request.', { default: DEFAULT_TARGET_CPU_PERCENT }),
        targetMemoryUtilizationPercentage: percentSchema('Average memory use the autoscaler also aims at, in percent of the memory request (absent: CPU only).'),
      },
      { required: ['maxReplicas'] },
    ),
  };
}

// --- Environment --------------------------------------------------------------------------------

const firewallSchema = obj('Firewall of the API gateway, enforced as the NetworkPolicy <name>-firewall on the data-plane pods and by the data plane itself.', {
  ipAddresses: obj('Address ranges. Blocked ranges win over allowed ones.', {
    allowed: cidrList('When set, only these ranges may call; all other addresses are blocked.'),
    blocked: cidrList('Ranges that may never call.'),
  }),
  managedRules: list('Managed rule sets the gateway applies to requests.', str('A managed rule set.', { enum: [...MANAGED_RULE_SETS] }), {
    'x-kubernetes-list-type': 'set',
  }),
  trustedProxies: cidrList('Proxies whose X-Forwarded-For header is trusted to carry the client address.'),
});

const environmentSpecSchema = obj(
  'The desired environment: its data plane, gateways, identity provider and executors.',
  {
    type: str(
      'internal: the data plane also gets an internal network load balancer (Service <name>-internal, port 80) reachable only inside the private network. public: only the public API gateway (Service <name>-api).',
      { enum: [...ENVIRONMENT_TYPES] },
    ),
    uri: str('Address of the environment state the data plane serves; a request\'s X-Environment-Uri header must match it. Default: k8s://<namespace>/environments/<name>.', {
      minLength: 1,
    }),
    domain: str('The DNS domain the gateways are published under: the OpenAPI documents name https://iam.<domain>/<dataset> and https://public.<domain>/<dataset> (each gateway that serves the dataset). Without it, the data plane\'s own addresses (never a request\'s Host).', {
      maxLength: 200,
      pattern: '^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$',
    }),
    dataplane: obj(
      'The data plane Deployment <name>-dataplane.',
      {
        image: str("Container image. Default: the operator's DATAPLANE_IMAGE.", { minLength: 1 }),
        ...workloadSchema('data plane', DEFAULT_DATAPLANE_REPLICAS, DATAPLANE_DEFAULT_RESOURCES),
        logLevel: str('Log level of the data plane.', { enum: LOG_LEVELS, default: 'info' }),
        serviceAccountAnnotations: {
          type: 'object',
          description: 'Annotations of the data plane ServiceAccount <name>-dataplane, e.g. eks.amazonaws.com/role-arn for IRSA: DynamoDB Datasets without credentialsSecretRef use the AWS default credential chain.',
          additionalProperties: str('Annotation value.', { maxLength: 4096 }),
        },
      },
      { default: {} },
    ),
    gateways: obj(
      'The ways into the REST API.',
      {
        api: obj('The public API gateway (Service <name>-api). Authkind public.', { firewall: firewallSchema }),
        iam: obj(
          'The IAM gateway: callers operating within an allowed IAM principal (Authorization: Proxy <principal>, or with trust verified a ServiceAccount token). Authkind iam.',
          {
            enabled: bool('Whether the gateway serves requests.', true),
            trust: str(
              'network: a Proxy <principal> assertion is believed from every address the firewall admits. verified: callers present a Kubernetes ServiceAccount token (Authorization: Bearer), verified with a TokenReview (principal system:serviceaccount:<namespace>:<name>); Proxy is believed only from proxyFrom.',
              { enum: [...IAM_TRUST_MODES], default: 'network' },
            ),
            audiences: list(
              'trust verified: the audiences a ServiceAccount token must carry. Default: dataaccess.dev/<namespace>/<name>.',
              str('An audience.', { minLength: 1, maxLength: 256 }),
              { minItems: 1, maxItems: 16 },
            ),
            proxyFrom: cidrList('trust verified: the only addresses (e.g. an existing IAM front) whose Proxy assertions are believed; from elsewhere Proxy is refused (401 PROXY_NOT_TRUSTED).'),
          },
          { default: {} },
        ),
        public: obj('Token-based access with tokens of the identity provider (Authorization: Bearer <token>).', { enabled: bool('Whether the gateway serves requests.', true) }, { default: {} }),
      },
      { default: {} },
    ),
    identityProvider: obj(
      'The identity provider whose tokens the public gateway accepts.',
      {
        issuer: str('Expected "iss" claim.', { minLength: 1 }),
        audiences: list('Accepted "aud" (ID tokens) or "client_id" (Cognito access tokens) values.', str('An audience.', { minLength: 1 }), { minItems: 1 }),
        jwksUri: str('Where the signing keys are published (http or https URL).', { pattern: '^https?://' }),
        jwks: obj(
          'Inline JSON Web Key Set, as an alternative to jwksUri.',
          { keys: list('The keys (JWK objects).', { type: 'object', description: 'A JSON Web Key.', 'x-kubernetes-preserve-unknown-fields': true }) },
          { required: ['keys'] },
        ),
        algorithms: list('Accepted JWS algorithms. "none" and HMAC are never accepted.', str('A JWS algorithm.', { enum: JWS_ALGORITHMS }), {
          minItems: 1,
          default: [...DEFAULT_ALGORITHMS],
        }),
        clockSkewSeconds: int('Tolerated clock difference when checking exp/nbf/iat.', { minimum: 0, maximum: 300, default: 30 }),
        development: bool('Local development issuer whose signing key lives in the data plane\'s DATA_DIR. Not for production.'),
      },
      { required: ['issuer', 'audiences'] },
    ),
    executors: list(
      'Named executors requests can select (header executor-name, or executor.id in function payloads).',
      obj(
        'An executor.',
        {
          name: str('Unique name.', { pattern: '^[A-Za-z0-9_-]{1,63}$' }),
          warehouse: str('Warehouse locations: the warehouse to run on (an unquoted identifier).', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
          description: str('What it is for.'),
        },
        { required: ['name'] },
      ),
      { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
    ),
    functionGateway: obj(
      'The function gateway service-<name>-function-service-gateway (Deployment and Service), created by default.',
      {
        enabled: bool('false opts out: the function gateway is not created (and deleted if it exists).', true),
        image: str("Container image. Default: the operator's FUNCTION_GATEWAY_IMAGE.", { minLength: 1 }),
        invokers: list(
          'gateways.iam.trust verified: ServiceAccount principal patterns (e.g. system:serviceaccount:team-a:*) whose tokens (audience dataaccess.dev/<namespace>/<name>/function-gateway) may invoke the function gateway; no pattern admits nobody.',
          str('A principal pattern (* and ?).', { minLength: 1, maxLength: 2048 }),
          { maxItems: 1000 },
        ),
        accessKeys: list(
          'AWS Signature Version 4 access keys for the Lambda Invoke API (POST /2015-03-31/functions/<function name>/invocations): a request signed with one of them (service lambda) is invoked as the principal `name`, which the datasets\' auth.iam.principals (and, with gateways.iam.trust verified, invokers) must admit. Several keys may share a name (rotation).',
          obj(
            'An access key.',
            {
              name: str('The caller\'s principal.', { minLength: 1, maxLength: 2048 }),
              accessKeyId: str('The access key id callers sign with (AWS_ACCESS_KEY_ID).', { pattern: ACCESS_KEY_ID_PATTERN }),
              secretRef: obj(
                'The Secret key holding the secret access key, in the Environment\'s namespace; mounted into the function gateway as a file and re-read, so a rotated key needs no restart.',
                { name: str('Secret name.', { pattern: NAME_PATTERN, maxLength: 253 }), key: str('Key within the Secret.', { pattern: SECRET_KEY_PATTERN, maxLength: 253 }) },
                { required: ['name', 'key'] },
              ),
            },
            { required: ['name', 'accessKeyId', 'secretRef'] },
          ),
          { maxItems: 100, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['accessKeyId'] },
        ),
        ...workloadSchema('function gateway', DEFAULT_FUNCTION_GATEWAY_REPLICAS, FUNCTION_GATEWAY_DEFAULT_RESOURCES),
      },
      { default: {} },
    ),
    monitoring: obj(
      'Prometheus Operator objects, rendered when the cluster has their CRDs (monitoring.coreos.com).',
      { podMonitor: bool('A PodMonitor per workload (<name>-dataplane, service-<name>-function-service-gateway) scraping /metrics on the http port, when the cluster has the PodMonitor CRD; false opts out.', true) },
      { default: {} },
    ),
    bulkLoad: obj('Bulk loads (transactions).', {
      s3: obj('The S3 API for s3:// locations: AWS S3 or any S3-compatible store. Credentials come from credentialsSecretRef, else the AWS default chain (IRSA through the data plane ServiceAccount).', {
        region: str('AWS region. Default us-east-1.', { minLength: 1 }),
        endpoint: str('An S3-compatible endpoint URL (http:// or https://).', { pattern: '^https?://' }),
        forcePathStyle: bool('Path-style addressing; default true with an endpoint.'),
        credentialsSecretRef: obj(
          'A Secret in the Environment\'s namespace with keys accessKeyId and secretAccessKey (and optionally sessionToken), mounted into the data plane as files and re-read, so a rotated key needs no restart; absent: the AWS default chain.',
          { name: str('Secret name, in the Environment\'s namespace.', { pattern: NAME_PATTERN }) },
          { required: ['name'] },
        ),
      }),
      imports: obj(
        'The volume file:// locations read in a cluster: a PersistentVolumeClaim in the Environment\'s namespace holding the files to load. The operator mounts it read-only into the data plane at /var/lib/data-access-imports (DAS_IMPORT_ROOT), so a load names file:///var/lib/data-access-imports/<path>; a file:// path outside it is refused. Every data-plane replica mounts it, so use an access mode that allows that (ReadOnlyMany or ReadWriteMany). Absent: the import root is DATA_DIR/imports in the pod\'s emptyDir, which holds no files, so file:// loads find nothing.',
        {
          claimName: str('PersistentVolumeClaim name, in the Environment\'s namespace.', { pattern: NAME_PATTERN, maxLength: 253 }),
          subPath: str('A directory inside the volume to mount instead of its root: a relative path, e.g. loads/team-a: segments of letters, digits, _, - and . separated by /, none starting with . (so no leading /, no ..).', {
            pattern: SUB_PATH_PATTERN,
            minLength: 1,
            maxLength: 255,
          }),
        },
        { required: ['claimName'] },
      ),
    }),
    admin: obj('The administrative API (/_admin/datasets on the iam gateway: create, delete, pause and resume Datasets).', {
      principals: list('Principals (patterns as in a Dataset\'s auth.iam.principals) allowed to use it; none by default.', str('A principal or pattern.', { minLength: 1 })),
    }),
  },
  { required: ['type'] },
);

// --- Dataset ------------------------------------------------------------------------------------

const propertyDefinition = obj(
  'A property definition.',
  {
    type: str('Scalar type, "object" (nested properties), "link" (a reference to a record of another schema) or "links" (an inverse link, not stored: the records of "schema" whose link "property" points here).', {
      enum: [...SCALAR_PROPERTY_TYPES, 'object', 'link', 'links'],
    }),
    description: str('What the property holds.'),
    sortable: bool(
      'Scalars and links: the location keeps an index for sorts led by this property, so every page of such a list costs the same (PostgreSQL: a btree index on the column and the id). Sorting by other properties is allowed but reads the whole selection.',
    ),
    schema: str('For type link: the fully qualified name of the target schema in this dataset; for links: the source schema.', { pattern: SCHEMA_NAME_PATTERN }),
    property: str('For type links: the link property of the source schema that points at this schema.', { pattern: PROPERTY_NAME_PATTERN }),
    properties: {
      type: 'object',
      description:
        'For type object: the nested properties by name, each a property definition like this one (type, description, schema, properties). The API server does not check below this level; the operator does, and reports problems in status.conditions.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
  },
  { required: ['type'] },
);

const recordSchemaDefinition = obj(
  'A record schema.',
  {
    description: str('What the records are.'),
    properties: { type: 'object', description: 'Properties by name (an identifier; "id" and "version" are system properties).', additionalProperties: propertyDefinition },
    required: list('Top-level properties a create or a full update must carry.', str('A property name.', { pattern: PROPERTY_NAME_PATTERN })),
  },
  { required: ['properties'] },
);

const datasetSpecSchema = obj(
  'The desired dataset: where its records are stored, who may use it, and its record schemas.',
  {
    environment: str('The Environment (same namespace) that serves this dataset.', { pattern: NAME_PATTERN, maxLength: 63 }),
    location: obj(
      'The storage location. Connection settings live in a Secret, never in the spec.',
      {
        kind: str(
          `Kind of store: postgres (PostgreSQL-compatible database), snowflake (warehouse), iceberg (open-table format on the warehouse) or dynamodb (key-value). Writes that name no consistency (${CONSISTENCY_LEVELS.join(', ')}) get ${Object.entries(DEFAULT_CONSISTENCY)
            .map(([kind, level]) => `${level} on ${kind}`)
            .join(', ')}.`,
          { enum: [...LOCATION_KINDS] },
        ),
        connectionSecretRef: obj(
          'The Secret key holding the connection settings: for postgres a connection URL; for snowflake and iceberg a JSON object {"username", "password"} or {"username", "privateKey" (PEM), "passphrase"} (required for those two).',
          { name: str('Secret name, in the Dataset\'s namespace.', { pattern: NAME_PATTERN }), key: str('Key within the Secret: letters, digits, "-", "_" and "." (not ".", ".." or starting with "..").', { pattern: SECRET_KEY_PATTERN, maxLength: 253 }) },
          { required: ['name', 'key'] },
        ),
        databaseSchema: str('SQL locations: the database schema holding this dataset\'s tables.', { pattern: '^[a-z_][a-z0-9_]{0,62}$' }),
        account: str('snowflake, iceberg: the account identifier (orgname-accountname, or a locator with its region). Required unless accessUrl is set.', { pattern: WAREHOUSE_ACCOUNT_PATTERN }),
        accessUrl: str('snowflake, iceberg: the service URL to use instead of the account\'s public one (a private link endpoint).', { pattern: '^https?://[^\\s/?#]+/?$', maxLength: 2048 }),
        database: str('snowflake, iceberg: the database (required).', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        schema: str('snowflake, iceberg: the schema holding this dataset\'s tables; default: the dataset name upper-cased with "-" as "_".', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        warehouse: str('snowflake, iceberg: the default warehouse (required); the Environment\'s executors can pick another per request.', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        role: str('snowflake, iceberg: the role writes run under; absent: the user\'s default role.', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        readOnlyRole: str('snowflake, iceberg: the read-only role the raw SQL endpoint runs under (default SERVICE_READONLY); the user must hold it.', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        externalVolume: str('iceberg: the external volume the tables are written to (required).', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        baseLocation: str('iceberg: the path under the external volume; each table gets <baseLocation>/<TABLE> (required).', { pattern: '^[A-Za-z0-9_./-]+$', maxLength: 1024 }),
        catalog: str('iceberg: the catalog integration (default SNOWFLAKE: Snowflake manages the tables).', { pattern: WAREHOUSE_IDENTIFIER_PATTERN }),
        tablePrefix: str('DynamoDB: prefix of the table names.', { pattern: '^[A-Za-z0-9_.-]{0,200}$' }),
        region: str('DynamoDB: the region.', { minLength: 1 }),
        endpoint: str('DynamoDB: the endpoint URL (DynamoDB Local, a VPC endpoint); absent: the region\'s own.', { pattern: '^https?://[^\\s]+$', maxLength: 2048 }),
        credentialsSecretRef: obj(
          'DynamoDB: a Secret in the Dataset\'s namespace with keys accessKeyId and secretAccessKey; absent: the AWS default chain (IRSA through the data plane\'s ServiceAccount annotations).',
          { name: str('Secret name, in the Dataset\'s namespace.', { pattern: NAME_PATTERN }) },
          { required: ['name'] },
        ),
        defaultConsistency: str(
          `The consistency of writes that name none; without it, the kind's default (${Object.entries(DEFAULT_CONSISTENCY)
            .map(([kind, level]) => `${level} on ${kind}`)
            .join(', ')}). ATOMIC_ALL is not available on iceberg.`,
          { enum: [...CONSISTENCY_LEVELS] },
        ),
      },
      { required: ['kind'] },
    ),
    auth: obj(
      'Who may call, per gateway.',
      {
        iam: obj(
          'The IAM gateway.',
          {
            principals: list('Allowed IAM principals: exact names or patterns with *.', str('A principal or pattern.', { minLength: 1 })),
            rawSqlEndpointEnabled: bool('Whether the read-only raw SQL endpoint (POST /{dataset}/raw-query) is enabled.', false),
          },
          { default: {} },
        ),
        public: obj(
          'Token-based access.',
          {
            enabled: bool('Whether callers with a valid token of the environment\'s identity provider are allowed.', true),
            subjects: list('When set, only tokens whose sub or cognito:username matches one of these patterns.', str('A subject or pattern.', { minLength: 1 })),
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    caller: obj(
      'How callers are reported (caller.super, caller.anon).',
      {
        super: list('Principals (iam) or token subjects (public) that act as superusers.', str('A principal or subject.', { minLength: 1 })),
        anon: bool('Whether requests without credentials are served, as anonymous callers.', false),
      },
      { default: {} },
    ),
    schemas: {
      type: 'object',
      description: 'Record schemas by fully qualified name (<namespace>.<Name>, e.g. demo.Person).',
      minProperties: 1,
      additionalProperties: recordSchemaDefinition,
    },
    queries: {
      type: 'object',
      description:
        'Named queries by fully qualified name (e.g. demo.PeopleInPostcode). Filter-based (every location): schema, filter, sort, arguments. SQL-based (SQL locations only): sql, using, arguments. The operator checks the filter, sort, tokens and argument types and reports problems in status.conditions.',
      additionalProperties: obj('One named query: either schema (+ filter, sort) or sql (+ using).', {
        description: str('What the query returns.'),
        schema: str('Filter-based: the record schema returned.', { pattern: SCHEMA_NAME_PATTERN }),
        filter: str('Filter-based: the filter, as a list request takes it; ${argument} placeholders stand for arguments.', { minLength: 1, maxLength: MAX_QUERY_FILTER_LENGTH }),
        sort: str('Filter-based: the sort (field[:asc|:desc][:nulls-first|:nulls-last], several separated by commas).', { minLength: 1 }),
        sql: str('SQL-based: a read-only statement with @{alias} / @{alias.property} and ${argument} tokens, as the raw SQL endpoint takes it.', {
          minLength: 1,
          maxLength: MAX_QUERY_SQL_LENGTH,
        }),
        using: {
          type: 'object',
          description: 'SQL-based: alias → fully qualified schema name.',
          additionalProperties: str('A schema of this dataset.', { pattern: SCHEMA_NAME_PATTERN }),
        },
        arguments: {
          type: 'object',
          description: 'Arguments by name, each used as ${name} in the filter or SQL.',
          additionalProperties: obj(
            'One argument.',
            {
              type: str('Scalar type, as the raw SQL endpoint names them.', { enum: [...QUERY_ARGUMENT_TYPES] }),
              required: bool('Whether a call must give it (not null). Default false.'),
              description: str('What the argument means.'),
            },
            { required: ['type'] },
          ),
        },
      }),
    },
    deletionPolicy: str('What happens to the stored data when the Dataset is deleted. Retain keeps it; Delete has the data plane drop it. Either way the ConfigMap goes.', {
      enum: ['Retain', 'Delete'],
      default: 'Retain',
    }),
    paused: bool('Paused: storage and config are kept, data requests are answered 503 DATASET_PAUSED (with Retry-After) and bulk loads (transactions) stop at their next chunk until it is resumed. Default false.'),
    adopt: str(
      'The name of a deleted dataset whose retained data this storage holds: this dataset takes it over. Without it, a Dataset whose storage holds another (deleted, deletionPolicy Retain) dataset\'s data is not served (Degraded, naming that dataset).',
      { pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$', maxLength: 63 },
    ),
  },
  { required: ['environment', 'location', 'schemas'] },
);

// --- Shared -------------------------------------------------------------------------------------

const conditionsSchema = list(
  'Ready, Reconciled and Degraded (and Paused and StorageRetained on a Dataset), in the metav1.Condition shape. StorageRetained is written by the data plane: True when the storage holds a deleted dataset\'s retained data and spec.adopt does not name it (then Degraded, reason StorageRetained).',
  obj(
    'A condition.',
    {
      type: str('Ready, Reconciled, Degraded or (a Dataset) Paused or StorageRetained.', { maxLength: 316 }),
      status: str('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      observedGeneration: int('The metadata.generation the condition was computed for.', { format: 'int64', minimum: 0 }),
      lastTransitionTime: str('When the status last changed.', { format: 'date-time' }),
      reason: str('Why, in one CamelCase word.', { maxLength: 1024, minLength: 1, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
      message: str('What happened and what to do about it.', { maxLength: 32768 }),
    },
    { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
  ),
  { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
);

const observedGeneration = int('The metadata.generation the status describes.', { format: 'int64' });

const environmentStatusSchema = obj('What the operator observed and did.', {
  observedGeneration,
  conditions: conditionsSchema,
  datasets: int('Number of Datasets that name this Environment.', { minimum: 0 }),
  replicas: int('Replicas of the data plane Deployment now (chosen by the HorizontalPodAutoscaler while spec.dataplane.autoscaling is set).', { minimum: 0 }),
  endpoints: obj('In-cluster endpoints.', {
    api: str('The API gateway Service (host:port).'),
    internal: str('The internal load balancer Service (host:port); environments of type internal.'),
    functionGateway: str('The function gateway\'s name.'),
  }),
});

const datasetStatusSchema = obj('What the operator observed and did.', {
  observedGeneration,
  conditions: conditionsSchema,
  configMap: str('The ConfigMap holding the published config.'),
});

interface NameRule {
  pattern: string;
  maxLength: number;
  why: string;
}

function root(kind: string, description: string, name: NameRule, spec: Schema, status: Schema): Schema {
  return obj(
    description,
    {
      apiVersion: str('Versioned schema of this representation of an object.'),
      kind: str('The REST resource this object represents.'),
      // A CRD schema may restrict metadata.name and nothing else, not even describe metadata.
      metadata: { type: 'object', properties: { name: str(`The ${kind}'s name ${name.why}`, { pattern: name.pattern, maxLength: name.maxLength }) } },
      spec,
      status,
    },
    { required: ['spec'] },
  );
}

const readyColumns = [
  { name: 'Ready', type: 'string', description: 'Whether it is ready (status of the Ready condition).', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
];
const reasonColumn = { name: 'Reason', type: 'string', priority: 1, description: 'Why (reason of the Ready condition).', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' };
const ageColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

function crd(kind: string, plural: string, shortNames: string[], schema: Schema, columns: Schema[]): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${API_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'data-access-operator', 'app.kubernetes.io/part-of': 'data-access-service' },
    },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames, categories: ['dataaccess'] },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: columns,
          schema: { openAPIV3Schema: schema },
        },
      ],
    },
  };
}

export function environmentCrd(): Schema {
  return crd(
    'Environment',
    'environments',
    ['denv'],
    root(
      'Environment',
      'An Environment: one data plane with its gateways (API gateway, IAM gateway, internal load balancer, function gateway), reconciled by the data-access-operator.',
      {
        why: `is a DNS-1035 label of at most ${ENVIRONMENT_NAME_MAX_LENGTH} characters (it prefixes Service names).`,
        pattern: ENVIRONMENT_NAME_PATTERN,
        maxLength: ENVIRONMENT_NAME_MAX_LENGTH,
      },
      environmentSpecSchema,
      environmentStatusSchema,
    ),
    [
      { name: 'Type', type: 'string', description: 'internal or public.', jsonPath: '.spec.type' },
      ...readyColumns,
      { name: 'Datasets', type: 'integer', description: 'Datasets naming this Environment.', jsonPath: '.status.datasets' },
      { name: 'Replicas', type: 'integer', description: 'Data plane replicas now.', jsonPath: '.status.replicas' },
      { name: 'Max-Replicas', type: 'integer', description: 'Upper bound of the data plane autoscaler (empty: a fixed replica count).', jsonPath: '.spec.dataplane.autoscaling.maxReplicas' },
      reasonColumn,
      ageColumn,
    ],
  );
}

export function datasetCrd(): Schema {
  return crd(
    'Dataset',
    'datasets',
    ['dset'],
    root(
      'Dataset',
      'A Dataset: record schemas over one storage location, served by the data plane of its Environment.',
      { why: 'is a DNS-1123 label (it is a host label of the gateways).', pattern: NAME_PATTERN, maxLength: 63 },
      datasetSpecSchema,
      datasetStatusSchema,
    ),
    [
      { name: 'Location', type: 'string', description: 'Kind of storage location.', jsonPath: '.spec.location.kind' },
      { name: 'Environment', type: 'string', description: 'The Environment serving it.', jsonPath: '.spec.environment' },
      { name: 'Paused', type: 'boolean', description: 'Paused: data requests are answered 503 until it is resumed.', jsonPath: '.spec.paused' },
      ...readyColumns,
      reasonColumn,
      ageColumn,
    ],
  );
}

const HEADER = '# Generated by operator/src/generate-crds.ts from operator/src/crds.ts. Do not edit.\n';

export function crdYaml(definition: Schema): string {
  return HEADER + stringify(definition, { lineWidth: 0 });
}

/** File name → content, for crds/ and the chart's crds/. */
export function crdFiles(): Record<string, string> {
  return {
    'dataaccess.dev_environments.yaml': crdYaml(environmentCrd()),
    'dataaccess.dev_datasets.yaml': crdYaml(datasetCrd()),
  };
}
