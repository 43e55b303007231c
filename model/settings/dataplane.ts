/**
 * Every environment variable the data plane reads (in either mode: `dataplane` or `function-gateway`),
 * declared once. main.ts parses them before anything starts; modules receive the typed values.
 * Adding a variable is one line here (the README table is checked against this list: run
 * `npm run settings:readme` after editing it).
 */
import { join, resolve } from 'node:path';
import type { PipeliningLimits } from '../pipelining.js';
import { TELEMETRY_SETTINGS } from './telemetry.js';
import { checkedText, choice, flag, list, optionalWholeNumber, parseSettings, text, wholeNumber, type SettingsOf } from './declare.js';

const DP = ['dataplane'] as const;
const BOTH = ['dataplane', 'function-gateway'] as const;
const MiB = 1024 * 1024;

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/** `scheme://host:port` of a URL, lower case; undefined when it is no URL. */
export function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`.toLowerCase();
  } catch {
    return undefined;
  }
}

const isHttpUrl = (raw: string) => /^https?:\/\/[^/]/.test(originOf(raw) ?? '');
const isStringList = (raw: string) => {
  try {
    const value: unknown = JSON.parse(raw);
    return Array.isArray(value) && value.every((p) => typeof p === 'string');
  } catch {
    return false;
  }
};
/** Page tokens are signed with HMAC-SHA256: a shorter key is guessable. */
export const MIN_PAGE_TOKEN_KEY_BYTES = 32;

export const DATAPLANE_SETTINGS = {
  // Process
  PORT: wholeNumber(8080, { min: 0, max: 65535 }, { description: 'HTTP port (0: any free port); the token CLI puts it in the development issuer\'s `iss`', readers: [...BOTH, 'token-cli'] }),
  HOST: text('127.0.0.1', { description: 'bind address; `0.0.0.0` to listen on every interface (the image and the rendered Pods set it)', readers: BOTH }),
  DATA_DIR: text('.data', { description: 'embedded PostgreSQL data (`DATA_DIR/postgres`), the development issuer\'s key, the page-token key, admin manifests', readers: [...DP, 'token-cli'] }),
  LOG_LEVEL: choice(LOG_LEVELS, 'info', { description: 'pino level; one JSON line per request, each with `reqId`', readers: BOTH }),
  DAS_MODE: choice(['dataplane', 'function-gateway'], 'dataplane', { description: '`function-gateway` runs the function gateway instead (needs `DAS_UPSTREAM_URL`, `DAS_FUNCTION_NAME`)', readers: BOTH }),
  DAS_SHUTDOWN_DELAY_MS: optionalWholeNumber({ min: 0 }, { shownDefault: '5000 in a Pod, else 0', description: 'after SIGTERM, how long the replica keeps accepting and serving while `/readyz` answers 503 `draining` and every response carries `Connection: close` (the time Kubernetes takes to drop the Pod from its endpoints); see "Rollouts"', readers: BOTH }),
  SHUTDOWN_TIMEOUT_MS: wholeNumber(25_000, { min: 0 }, { description: 'how long SIGTERM may take after that delay: in-flight requests, then ASYNC writes (the Pod\'s `terminationGracePeriodSeconds` must cover the delay plus this)', readers: DP }),
  KUBERNETES_SERVICE_HOST: text(undefined, { description: 'set by Kubernetes in every container: the process runs in a Pod (in-cluster credentials, the shutdown delay\'s default)', readers: BOTH }),
  KUBECONFIG: text(undefined, { description: 'Kubernetes credentials for TokenReviews (`gateways.iam.trust: verified`) and the `kubernetes` config source outside a cluster; else `~/.kube/config`, else the Pod\'s ServiceAccount', readers: BOTH }),
  // Configuration source
  DAS_CONFIG_SOURCE: choice(['files', 'kubernetes'], 'files', { description: '`files` (manifests on disk, watched and hot-reloaded) or `kubernetes` (ConfigMaps rendered by the operator, watched and hot-reloaded)', readers: DP }),
  DAS_MANIFESTS: text(undefined, { shownDefault: 'examples', description: '`files`: a manifest file or directory', readers: [...DP, 'token-cli'] }),
  DAS_ENVIRONMENT: text(undefined, { shownDefault: 'first Environment', description: 'the Environment served (required with `kubernetes`)', readers: BOTH }),
  DAS_NAMESPACE: text(undefined, { description: '`kubernetes`: namespace of the ConfigMaps', readers: DP }),
  // Storage connections
  DATABASE_URL: text(undefined, { description: 'an external PostgreSQL (with `PGHOST`/`PGDATABASE`, pg\'s own `PG*` variables); without them an embedded one is started under `DATA_DIR`', readers: DP, secret: true }),
  PGHOST: text(undefined, { description: 'pg\'s own variable: when set (or `PGDATABASE`), the data plane uses that PostgreSQL instead of starting an embedded one', readers: DP }),
  PGDATABASE: text(undefined, { description: 'as `PGHOST`', readers: DP }),
  DAS_SECRETS_DIR: text(undefined, { shownDefault: 'DATA_DIR/secrets', description: 'where connection Secrets are files: a dataset whose `location.connectionSecretRef` is `{name, key}` reads its connection URL from `DAS_SECRETS_DIR/<name>/<key>` (e.g. `.data/secrets/orders-db/url`), re-read every 2 s; the operator mounts the Secrets there (`/var/run/dataaccess/secrets`)', readers: DP }),
  AWS_REGION: text(undefined, { shownDefault: 'us-east-1', description: 'DynamoDB locations and `s3://` bulk-load sources without their own `region`', readers: DP }),
  AWS_DEFAULT_REGION: text(undefined, { description: 'used when `AWS_REGION` is unset', readers: DP }),
  AWS_ACCESS_KEY_ID: text(undefined, { description: 'transactions: credentials for `s3://` when `spec.bulkLoad.s3.credentialsSecretRef` names no Secret (with `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); else the AWS default chain', readers: DP, secret: true }),
  AWS_SECRET_ACCESS_KEY: text(undefined, { description: 'as `AWS_ACCESS_KEY_ID`', readers: DP, secret: true }),
  AWS_SESSION_TOKEN: text(undefined, { description: 'as `AWS_ACCESS_KEY_ID` (temporary credentials)', readers: DP, secret: true }),
  SNOWFLAKE_DISABLE_PLATFORM_DETECTION: flag(undefined, { shownDefault: 'true (set by the data plane)', description: 'snowflake-sdk\'s own switch; the data plane sets it before loading the SDK so that it probes no cloud metadata address', readers: ['library'] }),
  // Requests
  DAS_BODY_BUDGET_BYTES: wholeNumber(64 * MiB, { min: 1 }, { description: 'bytes all requests together may hold while their bodies arrive; past it a request is answered 503 `SERVER_BUSY` with `Retry-After`', readers: DP }),
  DAS_REQUEST_TIMEOUT_MS: wholeNumber(30_000, { min: 1 }, { description: 'time to receive a whole request (headers within 20 s); a slower upload is answered 408 and closed', readers: DP }),
  DAS_MAX_PIPELINED_REQUESTS: wholeNumber(16, { min: 1 }, { description: 'per connection: unanswered pipelined requests; past it the connection is closed once the answers before are sent ([docs/security.md](docs/security.md))', readers: BOTH }),
  DAS_MAX_UNSENT_RESPONSE_BYTES: wholeNumber(MiB, { min: 1 }, { description: 'per connection: answer bytes the client has not taken; past it the connection is not read until it catches up', readers: BOTH }),
  DAS_SEND_TIMEOUT_MS: wholeNumber(30_000, { min: 1 }, { description: 'per connection: a client that takes none of its answers for this long is disconnected', readers: BOTH }),
  DAS_ASYNC_QUEUE_LIMIT: wholeNumber(20_000, { min: 1 }, { description: 'ASYNC operations waiting in memory; past it an ASYNC request is answered 503 `ASYNC_QUEUE_FULL`', readers: DP }),
  DAS_PAGE_TOKEN_KEY: checkedText(`at least ${MIN_PAGE_TOKEN_KEY_BYTES} bytes of text`, (raw) => Buffer.byteLength(raw, 'utf8') >= MIN_PAGE_TOKEN_KEY_BYTES, { shownDefault: 'DATA_DIR/page-tokens/key', description: 'the key list page tokens (`nextToken`) are signed with; in a cluster every replica needs the same one; unset, a random key is created under `DATA_DIR` (see [docs/lists.md](docs/lists.md))', readers: DP, secret: true }),
  RAW_SQL_ROW_LIMIT: wholeNumber(10_000, { min: 1 }, { description: 'raw SQL: rows per answer; more is 400 `ROW_LIMIT_EXCEEDED`', readers: DP }),
  RAW_SQL_TIMEOUT_MS: wholeNumber(15_000, { min: 1 }, { description: 'raw SQL: time per statement; beyond it 400 `QUERY_TIMEOUT`', readers: DP }),
  RAW_SQL_MAX_BYTES: wholeNumber(8 * MiB, { min: 1 }, { description: 'raw SQL: the answer\'s JSON size, counted as rows arrive; beyond it 400 `RESULT_TOO_LARGE`', readers: DP }),
  DAS_ADMIN_ALLOWED_ENDPOINTS: list('comma-separated URL origins such as http://127.0.0.1:8000', originOf, { description: 'the administrative API: origins an admin\'s Dataset may name as DynamoDB `endpoint` or warehouse `accessUrl` although they are not public addresses; origins that served datasets already use are allowed anyway ([docs/security.md](docs/security.md#admin-api))', readers: DP }),
  // Verified callers
  DAS_SUBSCRIPTION_REVERIFY_MS: wholeNumber(60_000, { min: 100 }, { description: '`gateways.iam.trust: verified`: how often an open subscription\'s ServiceAccount token is authenticated again (through the verdict cache); a refused one ends the subscription with 4403', readers: DP }),
  DAS_TOKEN_REVIEW_MAX_IN_FLIGHT: wholeNumber(8, { min: 1 }, { description: '`gateways.iam.trust: verified`: TokenReviews in flight per process (4× as many may wait; more: 503 `TOKEN_REVIEW_UNAVAILABLE` with `Retry-After`)', readers: BOTH }),
  DAS_TOKEN_REVIEW_CACHE_MS: wholeNumber(300_000, { min: 0, max: 300_000 }, { description: '`gateways.iam.trust: verified`: how long a TokenReview verdict on a ServiceAccount token is reused (never past the token\'s `exp`). Verifying needs Kubernetes credentials: in a cluster the ServiceAccount\'s, locally `KUBECONFIG` or `~/.kube/config`; without them a `verified` Environment refuses to start', readers: BOTH }),
  // Function gateway
  DAS_UPSTREAM_URL: checkedText('an http:// or https:// URL', isHttpUrl, { description: 'function gateway: the data plane\'s internal REST API it forwards to (rendered by the operator)', readers: ['function-gateway'] }),
  DAS_FUNCTION_NAME: text(undefined, { description: 'function gateway: the principal its calls are made as (rendered by the operator)', readers: ['function-gateway'] }),
  DAS_ACCESS_KEYS: text(undefined, { shownDefault: 'from the Environment in `DAS_MANIFESTS`, else none', description: 'function gateway: the Lambda Invoke API\'s SigV4 access keys, a JSON array of `{name, accessKeyId, secretRef: {name, key}}` (rendered by the operator; no secrets: each secret key is the file `DAS_SECRETS_DIR/<name>/<key>`)', readers: ['function-gateway'] }),
  DAS_TRUST: choice(['network', 'verified'], 'network', { description: 'function gateway: `verified` admits only callers whose ServiceAccount token (audience `DAS_TOKEN_AUDIENCE`) matches `DAS_INVOKERS`, and calls the data plane with the token in `DAS_UPSTREAM_TOKEN_FILE`', readers: ['function-gateway'] }),
  DAS_TOKEN_AUDIENCE: text(undefined, { description: 'function gateway, `verified`: the audience of callers\' tokens', readers: ['function-gateway'] }),
  DAS_INVOKERS: checkedText('a JSON array of strings', isStringList, { shownDefault: '[]', description: 'function gateway, `verified`: principal patterns allowed to invoke', readers: ['function-gateway'] }),
  DAS_UPSTREAM_TOKEN_FILE: text(undefined, { description: 'function gateway, `verified`: the gateway\'s own projected ServiceAccount token (re-read every 30 s)', readers: ['function-gateway'] }),
  // Subscriptions
  DAS_SUBSCRIPTIONS_PER_CONNECTION: wholeNumber(100, { min: 1 }, { description: 'GraphQL subscriptions per WebSocket connection (see "Subscriptions")', readers: DP }),
  DAS_SUBSCRIPTION_QUEUE: wholeNumber(1000, { min: 1 }, { description: 'events waiting per subscription before it is closed as a slow consumer (4429)', readers: DP }),
  DAS_SUBSCRIPTION_INIT_TIMEOUT_MS: wholeNumber(10_000, { min: 1 }, { description: 'time a WebSocket client has to send `connection_init`', readers: DP }),
  DAS_SUBSCRIPTION_KEEPALIVE_MS: wholeNumber(12_000, { min: 1 }, { description: 'WebSocket keep-alive interval', readers: DP }),
  DAS_SUBSCRIPTIONS_PER_REPLICA: optionalWholeNumber({ min: 1 }, { shownDefault: 'derived from the memory limit; 10000 without one', description: 'subscriptions a replica holds; past it a new WebSocket is refused before the upgrade with 503 `TOO_MANY_CONNECTIONS` and `Retry-After`. Unset: `(memory limit − DAS_MEMORY_RESERVE_BYTES) / DAS_MEMORY_PER_SUBSCRIBER_BYTES` from the cgroup (v2 `memory.max`, v1 `memory/memory.limit_in_bytes`; the operator\'s default 768Mi limit gives 14,745, 512Mi 8,192) ([docs/subscriptions.md](docs/subscriptions.md#memory))', readers: DP }),
  DAS_WS_MAX_CONNECTIONS: optionalWholeNumber({ min: 1 }, { shownDefault: 'derived from the memory limit; 5000 without one', description: 'WebSocket connections a replica holds; derived and refused like `DAS_SUBSCRIPTIONS_PER_REPLICA`', readers: DP }),
  DAS_MEMORY_RESERVE_BYTES: wholeNumber(192 * MiB, { min: 0 }, { description: 'the caps\' formula: the replica\'s own footprint plus room for requests', readers: DP }),
  DAS_MEMORY_PER_SUBSCRIBER_BYTES: wholeNumber(40 * 1024, { min: 1 }, { description: 'the caps\' formula: the memory one subscriber costs', readers: DP }),
  DAS_CGROUP_ROOT: text('/sys/fs/cgroup', { description: 'where the cgroup files with the memory limit are read (tests point it at fixtures)', readers: DP }),
  DAS_WS_MAX_UNAUTHENTICATED: wholeNumber(500, { min: 1 }, { description: 'WebSocket connections per replica whose credentials are not verified yet (no `Authorization` at the upgrade, no `connection_init` yet); past it the upgrade is answered 503 `TOO_MANY_CONNECTIONS` with `Retry-After` ([docs/security.md](docs/security.md), "WebSocket")', readers: DP }),
  DAS_WS_MAX_BUFFERED_BYTES: wholeNumber(4 * MiB, { min: 1024 }, { description: 'per WebSocket connection: bytes of events queued plus bytes sent but not yet taken by the socket, past which it is closed as a slow consumer (4429)', readers: DP }),
  DAS_WS_CLOSE_GRACE_MS: wholeNumber(5000, { min: 1 }, { description: 'how long a WebSocket close frame may take to go out before the socket is cut', readers: DP }),
  DAS_WS_MAX_MESSAGE_BYTES: wholeNumber(MiB, { min: 1024 }, { description: 'the largest WebSocket message a client may send (larger: close 1009)', readers: DP }),
  DAS_GRAPHQL_MAX_TOKENS: wholeNumber(10_000, { min: 1 }, { description: 'every GraphQL operation (HTTP and both WebSocket protocols): lexical tokens; over: HTTP 400 `QUERY_TOO_LONG`, on a WebSocket an `error` message with that code', readers: DP }),
  DAS_GRAPHQL_MAX_SELECTIONS: wholeNumber(500, { min: 1 }, { description: 'every GraphQL operation: selections (fields, fragment spreads, inline fragments) counted in the text before validation (`TOO_MANY_SELECTIONS`)', readers: DP }),
  DAS_GRAPHQL_MAX_DEPTH: wholeNumber(15, { min: 1 }, { description: 'every GraphQL operation: selection depth (`QUERY_TOO_DEEP`)', readers: DP }),
  DAS_GRAPHQL_MAX_ALIASES: wholeNumber(100, { min: 0 }, { description: 'every GraphQL operation: aliased fields (`TOO_MANY_ALIASES`)', readers: DP }),
  DAS_GRAPHQL_MAX_COST: wholeNumber(5000, { min: 1 }, { description: 'every GraphQL operation: records it may make the engine read (a record 1, a list or inverse link its `limit`, default 100, times what its items select) (`QUERY_TOO_COMPLEX`)', readers: DP }),
  // Change log
  DAS_CHANGE_RETENTION_HOURS: wholeNumber(24, { min: 1 }, { description: 'the change log: how long changes are kept (older cursors are `CURSOR_EXPIRED`; DynamoDB Streams keep 24 h at most)', readers: DP }),
  DAS_CHANGE_POLL_MS: wholeNumber(1000, { min: 10 }, { description: 'the change log: how often it is read without a wake-up', readers: DP }),
  DAS_CHANGE_READ_INTERVAL_MS: wholeNumber(25, { min: 0 }, { description: 'the change log: the least time between two reads (0: none)', readers: DP }),
  DAS_CHANGE_PRUNE_EVERY_MS: wholeNumber(60_000, { min: 1000 }, { description: 'the change log: how often each replica prunes it', readers: DP }),
  DAS_DYNAMODB_STREAM_READ_MS: wholeNumber(500, { min: 10 }, { description: 'DynamoDB change feeds: a replica with subscribers reads each stream shard at most this often (Streams allow about 5 reads a second per shard, shared by every replica) ([docs/dynamodb.md](docs/dynamodb.md#change-feed-dynamodb-streams))', readers: DP }),
  DAS_WAREHOUSE_CHANGE_POLL_MS: wholeNumber(2000, { min: 100 }, { description: 'warehouse change feeds: how often a replica with subscribers polls the change table (an idle poll is one query; nobody subscribed: none), on a session pool of the feed\'s own per dataset ([docs/warehouse.md](docs/warehouse.md#change-feed))', readers: DP }),
  // Transactions (bulk loads)
  DAS_IMPORT_ROOT: text(undefined, { shownDefault: 'DATA_DIR/imports', description: 'transactions: the only directory `file://` locations may name; in a cluster `/var/lib/data-access-imports` when the Environment sets `spec.bulkLoad.imports` ([docs/transactions.md](docs/transactions.md))', readers: DP }),
  DAS_S3_ENDPOINT: checkedText('an http:// or https:// URL', isHttpUrl, { shownDefault: 'AWS', description: 'transactions: the S3 API for `s3://` locations when the Environment\'s `spec.bulkLoad.s3` does not set it; an endpoint (path style) for any S3-compatible store', readers: DP }),
  DAS_S3_FORCE_PATH_STYLE: flag(undefined, { shownDefault: 'true with an endpoint', description: 'transactions: path-style S3 addresses (`endpoint/bucket/key`) when the Environment\'s `spec.bulkLoad.s3.forcePathStyle` does not say', readers: DP }),
  DAS_BULK_CHUNK_ROWS: wholeNumber(10_000, { min: 1 }, { description: 'transactions: rows per committed chunk', readers: DP }),
  DAS_BULK_LEASE_MS: wholeNumber(30_000, { min: 1 }, { description: 'transactions: the claim\'s lease (another replica takes over a load after it)', readers: DP }),
  DAS_BULK_POLL_MS: wholeNumber(2000, { min: 1 }, { description: 'transactions: how often a replica looks for work', readers: DP }),
  DAS_BULK_CONCURRENCY: wholeNumber(2, { min: 1 }, { description: 'transactions: loads at once per process', readers: DP }),
  DAS_BULK_WRITERS: wholeNumber(2, { min: 1, max: 8 }, { description: 'transactions on PostgreSQL: connections a chunk is written on at once (its ids split between them). A transaction keeps the number it started with. Each writer holds one of the 10 connections a dataset\'s database pool shares with requests, for each of the `DAS_BULK_CONCURRENCY` loads', readers: DP }),
  DAS_BULK_WAREHOUSE_POLL_MS: wholeNumber(300_000, { min: 0 }, { description: 'transactions on a warehouse: after a claim found nothing, how long a dataset is not asked again (a claim is a query: polling often would keep the warehouse from suspending)', readers: DP }),
  DAS_BULK_MAX_ERRORS: wholeNumber(10, { min: 1, max: 100 }, { description: 'transactions: refused rows kept with each action (each message at most 500 characters)', readers: DP }),
  DAS_BULK_MAX_LOST_LEASES: wholeNumber(3, { min: 1 }, { description: 'transactions: leases a load may lose (its replica stopped mid-load) before it is FAILED with "a replica stopped while loading this file" instead of claimed again', readers: DP }),
  DAS_BULK_MAX_ROW_BYTES: wholeNumber(MiB, { min: 1 }, { description: 'transactions: the longest NDJSON line or CSV record (longer: the row is refused); see [docs/security.md](docs/security.md#bulk-load-files)', readers: DP }),
  DAS_BULK_MAX_FOOTER_BYTES: wholeNumber(16 * MiB, { min: 1 }, { description: 'transactions: the largest Parquet footer (over: the load FAILs naming it)', readers: DP }),
  DAS_BULK_MAX_GROUP_ROWS: wholeNumber(MiB, { min: 1 }, { description: 'transactions: most rows in one Parquet row group', readers: DP }),
  DAS_BULK_MAX_GROUP_VALUES: wholeNumber(16 * MiB, { min: 1 }, { description: 'transactions: values decoded at once from one row group (plain columns are read in slices within it; nested ones a whole row group)', readers: DP }),
  DAS_BULK_MAX_GROUP_BYTES: wholeNumber(256 * MiB, { min: 1, max: 1024 * MiB }, { description: 'transactions: bytes of one row group read at once', readers: DP }),
  DAS_BULK_MAX_PAGE_BYTES: wholeNumber(64 * MiB, { min: 1, max: 1024 * MiB }, { description: 'transactions: the largest decompressed Parquet page', readers: DP }),
  DAS_BULK_MAX_COLUMNS: wholeNumber(1024, { min: 1 }, { description: 'transactions: most columns of a file (a CSV header\'s fields, an NDJSON object\'s keys, a Parquet schema\'s leaf columns); wider: the load FAILs naming it', readers: DP }),
  DAS_BULK_MAX_DECOMPRESSED_BYTES: wholeNumber(16 * 1024 * MiB, { min: 1 }, { description: 'transactions: most bytes one gzip or zstd CSV/NDJSON file may decompress to (over: the load FAILs naming it)', readers: DP }),
  DAS_BULK_MAX_COMPRESSION_RATIO: wholeNumber(200, { min: 1 }, { description: 'transactions: most decompressed bytes per compressed byte read, past the first MiB (over: the load FAILs naming it)', readers: DP }),
  DAS_BULK_MAX_ZSTD_WINDOW_BYTES: wholeNumber(128 * MiB, { min: 1, max: 2048 * MiB }, { description: 'transactions: the largest window a zstd frame may declare, the memory its decoder holds (over: the load FAILs naming it)', readers: DP }),
  DAS_BULK_SOURCE_DEADLINE_MS: wholeNumber(3_600_000, { min: 1 }, { description: 'transactions from `https://` and `s3://`: the time a load may wait on one file\'s body', readers: DP }),
  DAS_BULK_SOURCE_MIN_BYTES_PER_S: wholeNumber(1024, { min: 1 }, { description: 'transactions from `https://` and `s3://`: the rate a body must keep up over each window while the load waits; a slower body FAILs the load', readers: DP }),
  DAS_BULK_SOURCE_RATE_WINDOW_MS: wholeNumber(30_000, { min: 1 }, { description: 'transactions from `https://` and `s3://`: the window the rate is measured over', readers: DP }),
  // OpenTelemetry traces (model/settings/telemetry.ts)
  ...TELEMETRY_SETTINGS,
};

export type DataPlaneSettings = SettingsOf<typeof DATAPLANE_SETTINGS>;

/** Parses the data plane's variables of `env` (a bad value: SettingError, one line). */
export function dataPlaneSettings(env: Readonly<Record<string, string | undefined>>): DataPlaneSettings {
  return parseSettings(DATAPLANE_SETTINGS, env);
}

/** Every default: what a process with no variables set runs with. */
export const DATAPLANE_DEFAULTS: DataPlaneSettings = dataPlaneSettings({});

// Defaults that depend on another setting: derived here, once.

/** Where the Secret files are: DAS_SECRETS_DIR, else `DATA_DIR/secrets` (relative to the working directory). */
export function secretsDirOf(s: Pick<DataPlaneSettings, 'DAS_SECRETS_DIR' | 'DATA_DIR'>): string {
  return resolve(s.DAS_SECRETS_DIR || join(s.DATA_DIR, 'secrets'));
}

/** The only directory `file://` bulk-load locations may name: DAS_IMPORT_ROOT, else `DATA_DIR/imports`. */
export function importRootOf(s: Pick<DataPlaneSettings, 'DAS_IMPORT_ROOT' | 'DATA_DIR'>): string {
  return resolve(s.DAS_IMPORT_ROOT || join(s.DATA_DIR, 'imports'));
}

/** The AWS region when a location names none: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1. */
export function defaultRegionOf(s: Pick<DataPlaneSettings, 'AWS_REGION' | 'AWS_DEFAULT_REGION'>): string {
  return s.AWS_REGION || s.AWS_DEFAULT_REGION || 'us-east-1';
}

/** DAS_SHUTDOWN_DELAY_MS, else 5 s in a Pod (Kubernetes sets KUBERNETES_SERVICE_HOST in every container), 0 elsewhere (npm start, tests). */
export function shutdownDelayMsOf(s: Pick<DataPlaneSettings, 'DAS_SHUTDOWN_DELAY_MS' | 'KUBERNETES_SERVICE_HOST'>): number {
  return s.DAS_SHUTDOWN_DELAY_MS ?? (s.KUBERNETES_SERVICE_HOST ? 5000 : 0);
}

/** The per-connection bounds on pipelined requests and unread answers (model/pipelining.ts) of both modes. */
export function pipeliningOf(s: Pick<DataPlaneSettings, 'DAS_MAX_PIPELINED_REQUESTS' | 'DAS_MAX_UNSENT_RESPONSE_BYTES' | 'DAS_SEND_TIMEOUT_MS'>): PipeliningLimits {
  return { maxPipelinedRequests: s.DAS_MAX_PIPELINED_REQUESTS, maxUnsentResponseBytes: s.DAS_MAX_UNSENT_RESPONSE_BYTES, sendTimeoutMs: s.DAS_SEND_TIMEOUT_MS };
}
