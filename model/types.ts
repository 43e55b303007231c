/**
 * The dataset-config model shared by the operator and the data plane.
 *
 * `EnvironmentSpec` and `DatasetSpec` are what users write in the custom resources
 * (group dataaccess.dev, version v1alpha1). `EnvironmentConfig` and `DatasetConfig` are the
 * rendered, defaulted forms the data plane serves; the operator writes them into ConfigMaps and
 * `npm start` renders them in-process from the example manifests with the same functions.
 */

export const API_GROUP = 'dataaccess.dev';
export const API_VERSION = 'v1alpha1';
export const API_GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;

/**
 * The one Dataset status condition the data plane writes (the operator writes the others and keeps
 * it): True when the Dataset's storage holds another deleted dataset's retained data and it is not
 * served (docs/security.md, "Retained storage").
 */
export const STORAGE_RETAINED_CONDITION = 'StorageRetained';

export const LOCATION_KINDS = ['postgres', 'snowflake', 'iceberg', 'dynamodb'] as const;
export type LocationKind = (typeof LOCATION_KINDS)[number];

export const CONSISTENCY_LEVELS = ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL', 'ASYNC'] as const;
export type Consistency = (typeof CONSISTENCY_LEVELS)[number];

export const ENVIRONMENT_TYPES = ['internal', 'public'] as const;
export type EnvironmentType = (typeof ENVIRONMENT_TYPES)[number];

export const MANAGED_RULE_SETS = ['common', 'knownBadInputs'] as const;
export type ManagedRuleSet = (typeof MANAGED_RULE_SETS)[number];

export const SCALAR_PROPERTY_TYPES = ['string', 'integer', 'number', 'boolean', 'date', 'timestamp'] as const;
export type ScalarPropertyType = (typeof SCALAR_PROPERTY_TYPES)[number];

/**
 * `sortable: true` asks the location for an index that serves sorts led by this property, so that
 * every page of such a list costs the same (PostgreSQL: a btree on the column and the id; DynamoDB:
 * a secondary index). Sorting by other properties is allowed, but reads the whole selection.
 */
export interface ScalarProperty {
  type: ScalarPropertyType;
  description?: string;
  sortable?: boolean;
}
export interface ObjectProperty {
  type: 'object';
  description?: string;
  properties: Record<string, PropertyDef>;
}
export interface LinkProperty {
  type: 'link';
  description?: string;
  /** Fully qualified name of the target schema, in the same dataset. */
  schema: string;
  /** As on a scalar: an index for sorts led by the link (its target's id). */
  sortable?: boolean;
}
/**
 * An inverse link, not stored: the records of `schema` whose link property `property` points at
 * this record (e.g. demo.Company.employees → every demo.Person whose `employer` is the company).
 * Followed with the link operation; a record's data never carries it.
 */
export interface LinksProperty {
  type: 'links';
  description?: string;
  /** Fully qualified name of the source schema, in the same dataset. */
  schema: string;
  /** The source schema's (top-level) link property that points at this schema. */
  property: string;
}
export type PropertyDef = ScalarProperty | ObjectProperty | LinkProperty | LinksProperty;

export interface RecordSchemaDef {
  description?: string;
  properties: Record<string, PropertyDef>;
  /** Top-level property names a create or a full update must carry. */
  required?: string[];
}

/**
 * Types a query argument may be declared with: the scalar types the raw SQL endpoint accepts
 * (dataplane/src/rawsql/types.ts, a test keeps the two lists equal). A filter-based query's
 * argument must also fit every property it is compared with (model/queries.ts).
 */
export const QUERY_ARGUMENT_TYPES = ['string', 'integer', 'long', 'float', 'double', 'decimal', 'boolean', 'date', 'timestamp', 'uuid', 'json', 'text', 'number'] as const;
export type QueryArgumentType = (typeof QUERY_ARGUMENT_TYPES)[number];

export interface QueryArgumentDef {
  type: QueryArgumentType;
  /** A required argument must be given (not null). Default false. */
  required?: boolean;
  description?: string;
}

/**
 * A named query (`spec.queries`), one of two forms:
 * - filter-based, on every location: the records of `schema` matching `filter` (which may use
 *   `${argument}` placeholders), in `sort` order, paged as a list;
 * - SQL-based, on SQL locations only: `sql` with `@{alias}` / `${argument}` tokens (the raw SQL
 *   rules), run on the read-only connection; rows as the raw SQL endpoint returns them.
 */
export interface FilterQueryDef {
  description?: string;
  /** The record schema returned. */
  schema: string;
  arguments?: Record<string, QueryArgumentDef>;
  filter?: string;
  sort?: string;
}
export interface SqlQueryDef {
  description?: string;
  sql: string;
  /** Alias → fully qualified schema name, as in a raw query's `using`. */
  using?: Record<string, string>;
  arguments?: Record<string, QueryArgumentDef>;
}
export type QueryDef = FilterQueryDef | SqlQueryDef;

export const isSqlQuery = (query: QueryDef): query is SqlQueryDef => (query as SqlQueryDef).sql !== undefined;

/** An access key of the function gateway's Lambda Invoke API; the secret access key is the Secret's key `secretRef`. */
export interface FunctionGatewayAccessKey {
  name: string;
  accessKeyId: string;
  secretRef: SecretKeyRef;
}

export interface SecretKeyRef {
  name: string;
  key: string;
}

export interface LocationSpec {
  kind: LocationKind;
  /**
   * Connection settings live in a Secret, never in the spec. For postgres the key holds a
   * connection URL; locally (npm start, tests) DATABASE_URL / PG* stand in for it.
   */
  connectionSecretRef?: SecretKeyRef;
  /** SQL locations: the database schema (namespace) that holds this dataset's tables. */
  databaseSchema?: string;
  /** Warehouse locations (snowflake, iceberg): the account identifier (`orgname-account` or a locator). */
  account?: string;
  /** Warehouse locations: the service's URL instead of the account's public one (private link, or the test peer). */
  accessUrl?: string;
  /** Warehouse locations: the database, schema (namespace of this dataset's tables), default warehouse and role. */
  database?: string;
  schema?: string;
  warehouse?: string;
  role?: string;
  /** Warehouse: the read-only role used by the raw SQL endpoint (default SERVICE_READONLY). */
  readOnlyRole?: string;
  /** Iceberg: the external volume, the base location under it, and the catalog (default SNOWFLAKE). */
  externalVolume?: string;
  baseLocation?: string;
  catalog?: string;
  /** DynamoDB: prefix of the table names and the region. */
  tablePrefix?: string;
  region?: string;
  /** DynamoDB: the endpoint URL (DynamoDB Local, a VPC endpoint); absent: the region's own. */
  endpoint?: string;
  /**
   * DynamoDB: a Secret with keys `accessKeyId` and `secretAccessKey`; absent: the AWS default
   * chain (IRSA through the data plane's ServiceAccount annotations).
   */
  credentialsSecretRef?: { name: string };
  /** What writes that name no `consistency` get; without it, the location kind's default. */
  defaultConsistency?: Consistency;
}

export interface DatasetAuthSpec {
  iam?: {
    /** Allowed IAM principals: exact names or patterns with `*` (as IAM ARNs are written). */
    principals?: string[];
    rawSqlEndpointEnabled?: boolean;
  };
  public?: {
    /** Whether callers with a valid token of the environment's identity provider are allowed. */
    enabled?: boolean;
    /** When set, only tokens whose `sub` or `cognito:username` matches one of these patterns. */
    subjects?: string[];
  };
}

export interface CallerSpec {
  /** Superusers (`caller.super`): IAM principal patterns as written; token subjects as `public:<pattern>`. */
  super?: string[];
  /** Whether requests without credentials are served, as anonymous callers: `caller.anon`. */
  anon?: boolean;
}

export interface DatasetSpec {
  environment: string;
  location: LocationSpec;
  auth?: DatasetAuthSpec;
  caller?: CallerSpec;
  /** Record schemas keyed by fully qualified name, e.g. `demo.Person`. */
  schemas: Record<string, RecordSchemaDef>;
  /** Named queries keyed by fully qualified name, e.g. `demo.PeopleInPostcode`. */
  queries?: Record<string, QueryDef>;
  /** What happens to stored data when the Dataset is deleted. Default Retain. */
  deletionPolicy?: 'Retain' | 'Delete';
  /** Paused: storage and config are kept, data requests answer 503 DATASET_PAUSED, bulk loads wait. Default false. */
  paused?: boolean;
  /** The deleted dataset whose retained data in this storage this dataset takes over (docs/security.md, "Retained storage"). */
  adopt?: string;
}

export interface IdentityProviderSpec {
  issuer: string;
  /** Accepted `aud` (ID tokens) or `client_id` (Cognito access tokens) values. */
  audiences: string[];
  jwksUri?: string;
  /** Inline JWKS, as an alternative to jwksUri. */
  jwks?: { keys: Record<string, unknown>[] };
  /** Accepted JWS algorithms. Default: RS256, ES256. `none` and HMAC are never accepted. */
  algorithms?: string[];
  clockSkewSeconds?: number;
  /** Local development issuer whose signing key lives under DATA_DIR (npm start, tests). */
  development?: boolean;
}

export interface FirewallSpec {
  ipAddresses?: { allowed?: string[]; blocked?: string[] };
  managedRules?: ManagedRuleSet[];
  /** Proxy ranges whose X-Forwarded-For is trusted to carry the client address. */
  trustedProxies?: string[];
}

/** How the iam gateway knows who calls (docs/security.md, "Verified callers"). */
export const IAM_TRUST_MODES = ['network', 'verified'] as const;
export type IamTrust = (typeof IAM_TRUST_MODES)[number];

export interface IamGatewaySpec {
  enabled?: boolean;
  /** network (default): a Proxy assertion is believed from any address the firewall admits. verified: ServiceAccount tokens via TokenReview; Proxy only from proxyFrom. */
  trust?: IamTrust;
  /** Audiences a ServiceAccount token must carry; default `dataaccess.dev/<namespace>/<environment>`. */
  audiences?: string[];
  /** trust verified: CIDRs whose Proxy assertions are believed (an existing IAM front). */
  proxyFrom?: string[];
}

export interface ExecutorSpec {
  name: string;
  /** Warehouse executors: the warehouse to run on. */
  warehouse?: string;
  description?: string;
}

export interface EnvironmentSpec {
  type: EnvironmentType;
  /** Address of the environment state the data plane serves; checked against X-Environment-Uri. */
  uri?: string;
  /** The DNS domain the gateways are published under (`iam.<domain>`, `public.<domain>`): the OpenAPI documents' `servers`. */
  domain?: string;
  dataplane?: WorkloadSpec & {
    image?: string;
    logLevel?: string;
    /** Annotations of the data plane's ServiceAccount, e.g. `eks.amazonaws.com/role-arn` for IRSA (DynamoDB's default credential chain). */
    serviceAccountAnnotations?: Record<string, string>;
  };
  gateways?: {
    api?: { firewall?: FirewallSpec };
    iam?: IamGatewaySpec;
    public?: { enabled?: boolean };
  };
  identityProvider?: IdentityProviderSpec;
  executors?: ExecutorSpec[];
  functionGateway?: WorkloadSpec & {
    enabled?: boolean;
    image?: string;
    /** trust verified: the ServiceAccount principal patterns allowed to invoke the function gateway. */
    invokers?: string[];
    /** SigV4 callers of the Lambda Invoke API: `name` is the caller's principal. */
    accessKeys?: FunctionGatewayAccessKey[];
  };
  /** Prometheus Operator objects the operator renders when the cluster has their CRDs. */
  monitoring?: { podMonitor?: boolean };
  /** The administrative API (`/_admin/datasets` on the iam gateway): the principals (patterns as in `auth.iam.principals`) allowed to use it. */
  admin?: { principals?: string[] };
  /**
   * Bulk loads (transactions): the S3 API for `s3://` locations (any S3-compatible endpoint), and the
   * volume `file://` locations read in a cluster.
   */
  bulkLoad?: { s3?: BulkLoadS3Spec; imports?: BulkLoadImportsSpec };
}

/** A Kubernetes resource quantity ("250m", "512Mi", 2). */
export type Quantity = string | number;

/** A container's `resources` (Kubernetes ResourceRequirements). */
export interface ResourceRequirements {
  requests?: Record<string, Quantity>;
  limits?: Record<string, Quantity>;
}

/** A HorizontalPodAutoscaler's bounds and targets (percent of the containers' requests). */
export interface AutoscalingSpec {
  minReplicas?: number;
  maxReplicas: number;
  targetCPUUtilizationPercentage?: number;
  targetMemoryUtilizationPercentage?: number;
}

/** How a workload (the data plane, the function gateway) is sized and scaled. */
export interface WorkloadSpec {
  /** Fixed replica count; while `autoscaling` is set the HorizontalPodAutoscaler decides instead. */
  replicas?: number;
  resources?: ResourceRequirements;
  autoscaling?: AutoscalingSpec;
}

/**
 * A PersistentVolumeClaim (the Environment's namespace) holding files for `file://` loads: the
 * operator mounts it read-only as the data plane's import root (`DAS_IMPORT_ROOT`).
 */
export interface BulkLoadImportsSpec {
  claimName: string;
  /** A relative directory inside the volume to mount instead of its root. */
  subPath?: string;
}

export interface BulkLoadS3Spec {
  region?: string;
  /** An S3-compatible endpoint URL; absent: AWS S3 in `region`. */
  endpoint?: string;
  /** Path-style addressing (most S3-compatible stores need it). Default: true with an endpoint. */
  forcePathStyle?: boolean;
  /** A Secret (the Environment's namespace) with keys `accessKeyId`, `secretAccessKey` and optionally `sessionToken`; absent: `AWS_*` or the AWS default chain. */
  credentialsSecretRef?: { name: string };
}

/** A custom resource as read from a manifest or from the API server. */
export interface Resource<S> {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; generation?: number; uid?: string; labels?: Record<string, string> };
  spec: S;
}
export type EnvironmentResource = Resource<EnvironmentSpec>;
export type DatasetResource = Resource<DatasetSpec>;

/** Rendered, defaulted environment config served by the data plane. */
export interface EnvironmentConfig {
  id: string;
  namespace: string;
  type: EnvironmentType;
  uri: string;
  /** spec.domain: where the gateways are published (`https://iam.<domain>`, `https://public.<domain>`). */
  domain?: string;
  gateways: {
    api: { firewall: Required<Pick<FirewallSpec, 'managedRules' | 'trustedProxies'>> & { ipAddresses: { allowed: string[]; blocked: string[] } } };
    iam: { enabled: boolean; trust: IamTrust; audiences: string[]; proxyFrom: string[] };
    public: { enabled: boolean };
  };
  identityProvider?: IdentityProviderSpec & { algorithms: string[]; clockSkewSeconds: number };
  executors: ExecutorSpec[];
  functionGateway: { enabled: boolean; name: string; invokers: string[] };
  /** Present when the Environment names admin principals. */
  admin?: { principals: string[] };
  /** Present when the Environment sets bulk-load S3 settings. */
  bulkLoad?: { s3?: BulkLoadS3Spec };
}

/** Rendered, defaulted dataset config served by the data plane (ConfigMap `E-dataset-D`). */
export interface DatasetConfig {
  id: string;
  environment: string;
  generation: number;
  location: LocationSpec & { defaultConsistency: Consistency };
  auth: {
    iam: { principals: string[]; rawSqlEndpointEnabled: boolean };
    public: { enabled: boolean; subjects: string[] };
  };
  caller: { super: string[]; anon: boolean };
  schemas: Record<string, RecordSchemaDef>;
  /** Named queries; `{}` when the spec declares none. Optional: configs published before queries existed have none. */
  queries?: Record<string, QueryDef>;
  deletionPolicy: 'Retain' | 'Delete';
  /** Set (true) only while the Dataset is paused. */
  paused?: boolean;
  /** Set only when the spec names a deleted dataset whose retained data this one takes over. */
  adopt?: string;
}
