/**
 * The data-plane process: `npm start` locally, the container entry point in the cluster.
 *
 * Environment:
 *   PORT (8080), HOST (0.0.0.0), DATA_DIR (.data), LOG_LEVEL (info)
 *   DAS_CONFIG_SOURCE  files (default) | kubernetes
 *   DAS_MANIFESTS      files: manifest file or directory (examples)
 *   DAS_ENVIRONMENT    the Environment to serve (files: default the first one; kubernetes: required)
 *   DAS_NAMESPACE      kubernetes: the namespace of the ConfigMaps
 *   DATABASE_URL / PG* an external PostgreSQL; without them an embedded one under DATA_DIR
 *   DAS_MODE           dataplane (default) | function-gateway (with DAS_UPSTREAM_URL, DAS_FUNCTION_NAME)
 */
import { resolve } from 'node:path';
import pino from 'pino';
import { ManifestError } from '../../model/manifests.js';
import { bootstrapDataPlane } from './bootstrap.js';
import { BatchedLogDestination } from './log-destination.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.js';
import type { ConfigSource } from './server.js';
import { startFunctionGateway } from './function-gateway/server.js';

// Buffered, asynchronous writes: one access-log line per request must not block the event loop,
// and lines are batched for up to 100 ms (see log-destination.ts). Every exit path below calls
// flushSync, and a plain exit is covered by the 'exit' hook.
const destination = new BatchedLogDestination(pino.destination({ dest: 1, sync: false }));
process.on('exit', () => {
  try {
    destination.flushSync();
  } catch {
    /* stdout gone: nothing left to tell */
  }
});
const logger = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { service: 'data-plane' } }, destination);

function configSource(env: NodeJS.ProcessEnv): ConfigSource {
  if ((env.DAS_CONFIG_SOURCE ?? 'files') === 'kubernetes') {
    if (!env.DAS_NAMESPACE || !env.DAS_ENVIRONMENT) throw new Error('DAS_CONFIG_SOURCE=kubernetes needs DAS_NAMESPACE and DAS_ENVIRONMENT');
    return { kind: 'kubernetes', namespace: env.DAS_NAMESPACE, environment: env.DAS_ENVIRONMENT };
  }
  return { kind: 'files', path: resolve(env.DAS_MANIFESTS ?? 'examples'), environment: env.DAS_ENVIRONMENT };
}

const usesExternalDatabase = (env: NodeJS.ProcessEnv) => Boolean(env.DATABASE_URL || env.PGHOST || env.PGDATABASE);

/** DAS_MODE=function-gateway: the environment's function gateway, a proxy to the internal REST API. */
async function functionGateway(env: NodeJS.ProcessEnv): Promise<void> {
  if (!env.DAS_UPSTREAM_URL || !env.DAS_FUNCTION_NAME) throw new Error('DAS_MODE=function-gateway needs DAS_UPSTREAM_URL and DAS_FUNCTION_NAME');
  const gateway = await startFunctionGateway({
    upstreamUrl: env.DAS_UPSTREAM_URL,
    principal: env.DAS_FUNCTION_NAME,
    logger,
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? '0.0.0.0',
  });
  const stop = () => void gateway.stop().then(() => {
    destination.flushSync();
    process.exit(0);
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function main(): Promise<void> {
  const env = { ...process.env };
  if (env.DAS_MODE === 'function-gateway') return functionGateway(env);
  if (env.DAS_MODE && env.DAS_MODE !== 'dataplane') throw new Error(`unknown DAS_MODE "${env.DAS_MODE}": dataplane or function-gateway`);
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  let embedded: EmbeddedDatabase | undefined;
  if (!usesExternalDatabase(env)) {
    embedded = await startEmbeddedPostgres({ dir: resolve(dataDir, 'postgres'), onLog: (line) => logger.debug({ component: 'postgres' }, line) });
    env.DATABASE_URL = embedded.url;
    logger.info({ port: embedded.port, dir: resolve(dataDir, 'postgres') }, 'embedded PostgreSQL started');
  }
  const dataPlane = await bootstrapDataPlane({
    logger,
    configSource: configSource(env),
    dataDir,
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? '0.0.0.0',
    env,
  });
  let signalled = false;
  const shutdown = async (signal: string) => {
    if (signalled) return;
    signalled = true;
    logger.info({ signal }, 'stopping');
    try {
      await dataPlane.stop();
      await embedded?.stop();
      destination.flushSync();
      process.exit(0);
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ManifestError) {
    logger.fatal({ file: err.file, problems: err.problems }, err.message);
    console.error(err.message);
  } else logger.fatal({ err: (err as Error).message, stack: (err as Error).stack }, 'data plane failed to start');
  destination.flushSync();
  process.exit(1);
});
