/**
 * Assembles a data plane: config store and source, drivers, record engine, HTTP app; and takes it
 * down gracefully (in-flight requests finish, background writes drain, pools close).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../model/types.js';
import { startFileConfigSource } from './config/file-source.js';
import { ConfigStore } from './config/store.js';
import { PostgresDriver } from './drivers/postgres/driver.js';
import { DynamoDbDriver } from './drivers/dynamodb/driver.js';
import { SnowflakeDriver } from './drivers/snowflake/driver.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT } from './drivers/snowflake/table-format.js';
import { DriverRegistry } from './driver-registry.js';
import { RecordEngine } from './engine/engine.js';
import type { AsyncWriterOptions } from './engine/async-writes.js';
import { isUnavailable } from './engine/store-outcomes.js';
import { BodyBudget } from './http/body.js';
import { HOST_CHECKED_BY_HANDLER, installClientErrorHandler, renderRestError, requireHost } from './front-door/client-error.js';
import { Drain } from './front-door/drain.js';
import { boundPipelining, type PipeliningLimits } from '../../model/pipelining.js';
import { pipeliningLogHooks } from './front-door/pipelining-log.js';
import { StoreHealth } from './store-health.js';
import { createRequestHandler, type AppDeps, type Authenticate, type NodeMiddleware, type RawQueryHandler } from './http/app.js';
import type { PostgresDriverOptions } from './drivers/postgres/driver.js';
import { ChangeDispatcher } from './graphql/dispatcher.js';
import { SubscriptionServer } from './graphql/websocket.js';
import { subscriptionSettings } from './graphql/settings.js';
import { subscriptionMetrics } from './graphql/metrics.js';
import { Registry } from 'prom-client';
import { bulkLoadMetrics, datasetMetrics, requestMetrics } from './metrics.js';
import { TransactionRunner, runnerSettings, type RunnerOptions } from './transactions/runner.js';
import { TransactionService } from './transactions/service.js';
import { FilesAdmin } from './admin/files-admin.js';
import { KubeAdmin } from './admin/kube-admin.js';
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../model/settings/dataplane.js';
import { openableUrl, PortInUseError, portInUseMessage } from './listen-address.js';
import type { AdminSettings } from './admin/admin-checks.js';
import { ownershipProblem } from './config/ownership.js';
import { renderDatasetConfig } from '../../model/render.js';
import { tracingOn } from '../../model/telemetry/tracing.js';
import { traceRequests, traceUpgrades } from './telemetry/http.js';
import { tracedDriver } from './telemetry/store-spans.js';

export type ConfigSource =
  | { kind: 'files'; path: string; environment?: string }
  | { kind: 'kubernetes'; namespace: string; environment: string };

export interface DataPlaneOptions {
  logger: Logger;
  configSource: ConfigSource;
  port?: number;
  host?: string;
  /** The process settings (default: every default). */
  settings?: DataPlaneSettings;
  authenticate: Authenticate;
  firewall?: (store: ConfigStore, logger: Logger) => NodeMiddleware;
  bodyFirewall?: NodeMiddleware;
  rawQuery?: RawQueryHandler;
  readOnly?: PostgresDriverOptions['readOnly'];
  extraRoutes?: AppDeps['extraRoutes'];
  bodyLimit?: number;
  /** Bytes all requests together may buffer while their bodies arrive (default 64 MiB). */
  bodyBudgetBytes?: number;
  /** Time to receive a whole request, headers and body (default 30 s; then 408). */
  requestTimeoutMs?: number;
  /** Per-connection bounds on pipelined requests and unread answers (default DEFAULT_PIPELINING_LIMITS). */
  pipelining?: PipeliningLimits;
  asyncWrites?: AsyncWriterOptions;
  /** Bulk loads: where `file://` sources may be (without it, `file://` is refused) and the runner's settings (default from DAS_BULK_*). */
  transactions?: { importRoot: string; runner?: Partial<Pick<RunnerOptions, 'chunkRows' | 'leaseMs' | 'pollMs' | 'concurrency'>> };
  /** Files mode: where the administrative API writes Dataset manifests (DATA_DIR/datasets), watched by the files source. */
  adminDirectory?: string;
}

export interface StopOptions {
  /** How long in-flight requests and ASYNC writes may take before they are cut off (default 25 s), counted after the delay. */
  deadlineMs?: number;
  /** How long to keep accepting and serving, `/readyz` saying `draining`, before the listener closes (DAS_SHUTDOWN_DELAY_MS; default 0). */
  delayMs?: number;
}

/** Headers up to 32 KiB pass (browsers with large cookies and bearer tokens); more is a 431. */
export const MAX_HEADER_BYTES = 32 * 1024;

export interface DataPlane {
  url: string;
  port: number;
  server: Server;
  store: ConfigStore;
  engine: RecordEngine;
  /** Runs transactions (bulk loads) in the background. */
  runner: TransactionRunner;
  /** GraphQL subscriptions over WebSocket (graphql/websocket.ts) and the replica's change dispatcher. */
  subscriptions: SubscriptionServer;
  dispatcher: ChangeDispatcher;
  /** Stops gracefully; resolves with the number of ASYNC operations that could not be written. */
  stop(options?: StopOptions): Promise<number>;
}

export async function startDataPlane(options: DataPlaneOptions): Promise<DataPlane> {
  const { logger } = options;
  const settings = options.settings ?? DATAPLANE_DEFAULTS;
  const drivers = new DriverRegistry(
    {
      postgres: () => new PostgresDriver({ logger, settings, readOnly: options.readOnly }),
      dynamodb: () => new DynamoDbDriver({ logger, settings }),
      snowflake: () => new SnowflakeDriver({ logger, settings, format: SNOWFLAKE_FORMAT }),
      iceberg: () => new SnowflakeDriver({ logger, settings, format: ICEBERG_FORMAT }),
    },
    logger,
    // Store calls in child spans, only when tracing is on (off, the drivers are called directly).
    tracingOn() ? tracedDriver : undefined,
  );
  const adminSettings: AdminSettings = {
    allowedEndpoints: settings.DAS_ADMIN_ALLOWED_ENDPOINTS,
    // The owner recorded in the storage a new Dataset names (its driver's marker), for the 409 before it is written.
    storageOwner: (manifest) => {
      const config = renderDatasetConfig(manifest);
      return drivers.for(config).ownership?.ownerOf(config) ?? Promise.resolve(undefined);
    },
  };
  // In a cluster the Dataset itself shows a retained-storage refusal (config/kube-status.ts).
  const statusReporter =
    options.configSource.kind === 'kubernetes' ? new (await import('./config/kube-status.js')).DatasetStatusReporter(options.configSource.namespace, logger) : undefined;
  const store = new ConfigStore({
    async prepare(config: DatasetConfig) {
      const driver = drivers.for(config);
      const owner = await driver.ownership?.ownerOf(config);
      const retained = ownershipProblem(config, owner);
      if (retained) {
        logger.error({ dataset: config.id, generation: config.generation, owner }, 'storage holds another dataset\'s retained data');
        const problem = `dataset "${config.id}" is not served: ${retained}`;
        void statusReporter?.report(config.id, { generation: config.generation, owner, message: problem });
        return problem;
      }
      const report = await driver.prepare(config);
      // The statements themselves (kilobytes per dataset) at debug; info says only how many ran.
      if (report.applied.length) {
        logger.info({ dataset: config.id, generation: config.generation, statements: report.applied.length }, 'storage prepared');
        logger.debug({ dataset: config.id, generation: config.generation, ddl: report.applied }, 'storage prepared: DDL');
      }
      if (report.refused.length) {
        logger.error({ dataset: config.id, generation: config.generation, refused: report.refused }, 'destructive schema change refused');
        return `destructive schema change refused: ${report.refused.join('; ')}`;
      }
      if (owner !== config.id) await driver.ownership?.claim(config);
      void statusReporter?.report(config.id, { generation: config.generation });
      return undefined;
    },
    retryable: isUnavailable,
    async purge(config: DatasetConfig) {
      const dropped = (await drivers.for(config).purge?.(config)) ?? [];
      logger.warn({ dataset: config.id, dropped }, 'deletionPolicy Delete: stored data dropped');
    },
  });
  store.on('dataset', (id, state) => logger.info({ dataset: id, status: state?.status ?? 'removed', problem: state?.problem, warning: state?.warning }, 'dataset config'));
  store.on('retry', (id, delay, problem) => logger.warn({ dataset: id, retryInMs: delay, problem }, 'dataset storage unreachable; preparing again later'));

  let stopSource: () => Promise<void> = async () => undefined;
  if (options.configSource.kind === 'files') {
    // Loaded now (an invalid manifest throws ManifestError), then hot-reloaded on every edit.
    const source = await startFileConfigSource(
      { path: options.configSource.path, environment: options.configSource.environment, logger, adminDirectory: options.adminDirectory },
      store,
    );
    stopSource = () => source.stop();
  } else {
    const { startKubeConfigSource } = await import('./config/kube-source.js');
    const source = await startKubeConfigSource({ namespace: options.configSource.namespace, environment: options.configSource.environment, logger }, store);
    stopSource = () => source.stop();
  }
  await store.settled();

  const engine = new RecordEngine(store, (d) => drivers.for(d), logger, options.asyncWrites);
  // Transactions (bulk loads): created through the engine, run by this process's runner (or another replica's).
  const importRoot = options.transactions?.importRoot ?? '/nonexistent-import-root';
  // GET /metrics: requests, bulk loads and subscriptions, on one registry.
  const registry = new Registry();
  const runner: TransactionRunner = new TransactionRunner({
    metrics: bulkLoadMetrics(registry, () => runner.runningCount),
    logger: logger.child({ component: 'transactions' }),
    datasets: () => store.datasetIds().flatMap((id) => {
      const state = store.dataset(id);
      return state?.status === 'ready' && !state.config.paused ? [state.config] : [];
    }),
    paused: (id) => Boolean(store.dataset(id)?.config.paused),
    driverFor: (d) => drivers.for(d),
    sources: { importRoot, settings, s3: () => store.environment?.bulkLoad?.s3 },
    executors: () => store.environment?.executors ?? [],
    ...runnerSettings(settings),
    ...options.transactions?.runner,
  });
  engine.transactions = new TransactionService((d) => drivers.for(d), importRoot, () => runner.kick());
  runner.start();
  const health = new StoreHealth(store, (d) => drivers.for(d));
  const subscriptionLimits = subscriptionSettings(settings);
  const dispatcher = new ChangeDispatcher((d) => drivers.for(d), logger.child({ component: 'subscriptions' }), subscriptionLimits.dispatcher);
  // One firewall for requests and WebSocket upgrades alike.
  const firewall = options.firewall?.(store, logger);
  const subscriptions = new SubscriptionServer({ store, engine, dispatcher, authenticate: options.authenticate, firewall, logger: logger.child({ component: 'subscriptions' }), limits: subscriptionLimits.limits, queryLimits: subscriptionLimits.query });
  const metrics = subscriptionMetrics(dispatcher, subscriptions, registry);
  const requests = requestMetrics(registry, (id) => store.dataset(id) !== undefined);
  datasetMetrics(registry, () => store.datasetIds().map((id) => ({ id, paused: store.dataset(id)?.config.paused === true })));
  let listeningAddress: string | undefined;
  const handler = createRequestHandler({
    store,
    engine,
    driverFor: (d) => drivers.for(d),
    logger,
    authenticate: options.authenticate,
    firewall,
    bodyFirewall: options.bodyFirewall,
    rawQuery: options.rawQuery,
    bodyLimit: options.bodyLimit,
    bodyBudget: new BodyBudget(options.bodyBudgetBytes),
    storeHealth: async () => ({ unavailable: await health.unavailable() }),
    draining: () => drain.draining,
    metrics: async () => ({ contentType: metrics.contentType, body: await metrics.metrics() }),
    observeRequest: (sample) => requests.observe(sample),
    queryLimits: subscriptionLimits.query,
    inCluster: Boolean(settings.KUBERNETES_SERVICE_HOST),
    extraRoutes: options.extraRoutes,
    listeningAddress: () => listeningAddress,
    // The administrative API writes manifests locally, Dataset resources in a cluster.
    admin:
      options.configSource.kind === 'kubernetes'
        ? new KubeAdmin(options.configSource.namespace, store, undefined, adminSettings)
        : options.adminDirectory
          ? new FilesAdmin(options.adminDirectory, store, adminSettings)
          : undefined,
  });
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requestTimeout, headersTimeout: Math.min(20_000, requestTimeout), ...HOST_CHECKED_BY_HANDLER }, boundPipelining(requireHost(logger, renderRestError, tracingOn() ? traceRequests(handler) : handler), options.pipelining, pipeliningLogHooks(logger)));
  const drain = new Drain(server);
  installClientErrorHandler(server, logger, renderRestError);
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => subscriptions.handleUpgrade(req, socket, head);
  server.on('upgrade', tracingOn() ? traceUpgrades(upgrade) : upgrade);
  // Every replica prunes the change logs of the datasets it serves (idempotent between replicas).
  dispatcher.startPruning(() =>
    store.datasetIds().flatMap((id) => {
      const state = store.dataset(id);
      return state?.status === 'ready' ? [state.config] : [];
    }),
  );
  // Idle keep-alive connections outlive the load balancer's idle timeout (60 s on the major clouds).
  server.keepAliveTimeout = 65_000;
  const host = options.host ?? '0.0.0.0';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 8080, host, () => resolve());
    });
  } catch (err) {
    // What started above stops quietly, so the one line about the port is what the user reads.
    await runner.stop().catch(() => undefined);
    await dispatcher.close().catch(() => undefined);
    await stopSource().catch(() => undefined);
    store.close();
    await drivers.close().catch(() => undefined);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(portInUseMessage(host, options.port ?? 8080));
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const url = openableUrl(host, port);
  listeningAddress = url;
  const firstDataset = store.datasetIds()[0];
  logger.info(
    { port, url, datasets: store.datasetIds(), caps: subscriptionLimits.caps },
    `data plane listening on ${url}${firstDataset ? ` (open ${url}/${firstDataset}/docs)` : ''}`,
  );

  let stopping: Promise<number> | undefined;
  const stop = (stopOptions: StopOptions = {}) =>
    (stopping ??= (async () => {
      const delayMs = stopOptions.delayMs ?? 0;
      logger.info({ delayMs }, 'draining: /readyz answers 503, every response closes its connection');
      await drain.begin(delayMs);
      const deadline = Date.now() + (stopOptions.deadlineMs ?? 25_000);
      logger.info({ inFlightAsync: engine.asyncWrites.pending }, 'shutting down: finishing in-flight requests');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Subscribers are told the service restarts (1012): they reconnect to another replica and resume after their last cursor.
      await subscriptions.close(Math.max(0, deadline - Date.now()));
      await dispatcher.close();
      server.closeIdleConnections();
      // Requests still running at the deadline lose their connection rather than hold the exit.
      const cutOff = setTimeout(() => server.closeAllConnections(), Math.max(0, deadline - Date.now()));
      await closed;
      clearTimeout(cutOff);
      await runner.stop();
      await stopSource();
      store.close();
      const notWritten = await engine.drain(Math.max(0, deadline - Date.now()));
      await drivers.close();
      logger.info({ asyncNotWritten: notWritten }, 'shut down');
      return notWritten;
    })());
  return { url: `http://127.0.0.1:${port}`, port, server, store, engine, runner, subscriptions, dispatcher, stop };
}
