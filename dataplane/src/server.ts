/**
 * Assembles a data plane: config store and source, drivers, record engine, HTTP app; and takes it
 * down gracefully (in-flight requests finish, background writes drain, pools close).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../model/types.js';
import { startFileConfigSource } from './config/file-source.js';
import { ConfigStore } from './config/store.js';
import { PostgresDriver } from './drivers/postgres/driver.js';
import { DriverRegistry } from './drivers/registry.js';
import { RecordEngine } from './engine/engine.js';
import { createRequestHandler, type AppDeps, type Authenticate, type NodeMiddleware, type RawQueryHandler } from './http/app.js';
import type { PostgresDriverOptions } from './drivers/postgres/driver.js';

export type ConfigSource =
  | { kind: 'files'; path: string; environment?: string }
  | { kind: 'kubernetes'; namespace: string; environment: string };

export interface DataPlaneOptions {
  logger: Logger;
  configSource: ConfigSource;
  port?: number;
  host?: string;
  /** Environment for connection resolution (DATABASE_URL, mounted secrets). */
  env?: NodeJS.ProcessEnv;
  authenticate: Authenticate;
  firewall?: (store: ConfigStore, logger: Logger) => NodeMiddleware;
  bodyFirewall?: NodeMiddleware;
  rawQuery?: RawQueryHandler;
  readOnly?: PostgresDriverOptions['readOnly'];
  extraRoutes?: AppDeps['extraRoutes'];
  bodyLimit?: number;
}

export interface DataPlane {
  url: string;
  port: number;
  server: Server;
  store: ConfigStore;
  engine: RecordEngine;
  stop(): Promise<void>;
}

export async function startDataPlane(options: DataPlaneOptions): Promise<DataPlane> {
  const { logger } = options;
  const drivers = new DriverRegistry({ postgres: () => new PostgresDriver({ logger, env: options.env, readOnly: options.readOnly }) }, logger);
  const store = new ConfigStore({
    async prepare(config: DatasetConfig) {
      const report = await drivers.for(config).prepare(config);
      if (report.applied.length) logger.info({ dataset: config.id, generation: config.generation, ddl: report.applied }, 'storage prepared');
      if (report.refused.length) {
        logger.error({ dataset: config.id, generation: config.generation, refused: report.refused }, 'destructive schema change refused');
        return `destructive schema change refused: ${report.refused.join('; ')}`;
      }
      return undefined;
    },
    async purge(config: DatasetConfig) {
      const dropped = (await drivers.for(config).purge?.(config)) ?? [];
      logger.warn({ dataset: config.id, dropped }, 'deletionPolicy Delete: stored data dropped');
    },
  });
  store.on('dataset', (id, state) => logger.info({ dataset: id, status: state?.status ?? 'removed', problem: state?.problem, warning: state?.warning }, 'dataset config'));

  let stopSource: () => Promise<void> = async () => undefined;
  if (options.configSource.kind === 'files') {
    // Loaded now (an invalid manifest throws ManifestError), then hot-reloaded on every edit.
    const source = await startFileConfigSource({ path: options.configSource.path, environment: options.configSource.environment, logger }, store);
    stopSource = () => source.stop();
  } else {
    const { startKubeConfigSource } = await import('./config/kube-source.js');
    const source = await startKubeConfigSource({ namespace: options.configSource.namespace, environment: options.configSource.environment, logger }, store);
    stopSource = () => source.stop();
  }
  await store.settled();

  const engine = new RecordEngine(store, (d) => drivers.for(d), logger);
  const handler = createRequestHandler({
    store,
    engine,
    driverFor: (d) => drivers.for(d),
    logger,
    authenticate: options.authenticate,
    firewall: options.firewall?.(store, logger),
    bodyFirewall: options.bodyFirewall,
    rawQuery: options.rawQuery,
    bodyLimit: options.bodyLimit,
    extraRoutes: options.extraRoutes,
  });
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, datasets: store.datasetIds() }, 'data plane listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('shutting down: finishing in-flight requests');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      await stopSource();
      await engine.drain();
      await drivers.close();
      logger.info('shut down');
    })());
  return { url: `http://127.0.0.1:${port}`, port, server, store, engine, stop };
}
