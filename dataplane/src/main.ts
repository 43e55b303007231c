/**
 * The data-plane process: `npm start` locally, the container entry point in the cluster.
 *
 * Environment:
 *   PORT (8080), HOST (127.0.0.1; 0.0.0.0 to listen on every interface), DATA_DIR (.data), LOG_LEVEL (info)
 *   DAS_CONFIG_SOURCE  files (default) | kubernetes
 *   DAS_MANIFESTS      files: manifest file or directory (examples)
 *   DAS_ENVIRONMENT    the Environment to serve (files: default the first one; kubernetes: required)
 *   DAS_NAMESPACE      kubernetes: the namespace of the ConfigMaps
 *   DATABASE_URL / PG* an external PostgreSQL; without them an embedded one under DATA_DIR
 *   DAS_SHUTDOWN_DELAY_MS after SIGTERM, how long to keep serving with /readyz "draining" (5000 in a Pod, else 0)
 *   SHUTDOWN_TIMEOUT_MS how long SIGTERM may take to drain after that delay (25000)
 *   DAS_MODE           dataplane (default) | function-gateway (with DAS_UPSTREAM_URL, DAS_FUNCTION_NAME;
 *                      DAS_TRUST=verified and its settings: function-gateway/trust.ts)
 *
 * `--help` prints the usage (usage.ts) and exits 0.
 *
 * This file owns the process's signals: one shutdown path, whatever started. On SIGTERM or SIGINT
 * /readyz turns `draining` and the server keeps serving for DAS_SHUTDOWN_DELAY_MS (every response
 * closing its connection), then stops accepting, in-flight requests finish, subscriptions end with 1012, ASYNC writes drain (retrying through a
 * store outage until the deadline), pools close, and only then is the embedded PostgreSQL
 * stopped. Exit code 0 when nothing was lost, 1 when some ASYNC writes could not be written
 * (each is logged). A second signal while draining (a second or more after the first) exits at once with 1.
 */
import { resolve } from 'node:path';
import pino from 'pino';
import { ManifestError } from '../../model/manifests.js';
import { BatchedLogDestination } from './log-destination.js';
import type { EmbeddedDatabase } from './db/embedded.js';
import type { ConfigSource } from './server.js';
import { wholeNumberSetting } from './env-settings.js';
import { defaultShutdownDelayMs } from './http/drain.js';
import { USAGE } from './usage.js';

if (process.argv.slice(2).some((a) => a === '--help' || a === '-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}

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

/** What a signal stops, in order; filled in as the parts start. */
const parts: { name: string; stop: () => Promise<number | void> }[] = [];
let exiting = false;
let signalledAt = 0;

function exit(code: number): never {
  destination.flushSync();
  process.exit(code);
}

async function shutdown(signal: string): Promise<void> {
  if (exiting) {
    // Ctrl-C reaches the whole process group and wrappers (npm, tsx) relay it too: the same
    // signal twice within a second is one request to stop, not an impatient second one.
    if (Date.now() - signalledAt < 1000) return;
    logger.warn({ signal }, 'second signal while shutting down: exiting now');
    exit(1);
  }
  exiting = true;
  signalledAt = Date.now();
  logger.info({ signal }, 'stopping');
  let code = 0;
  // Last started, first stopped: the server drains before the database it writes to goes away.
  for (const part of [...parts].reverse()) {
    try {
      const lost = await part.stop();
      if (typeof lost === 'number' && lost > 0) code = 1;
    } catch (err) {
      logger.error({ part: part.name, err: err instanceof Error ? err.message : String(err) }, 'shutdown step failed');
      code = 1;
    }
  }
  exit(code);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown(signal));

const shutdownDelayMs = (env: NodeJS.ProcessEnv) => wholeNumberSetting(env, 'DAS_SHUTDOWN_DELAY_MS', defaultShutdownDelayMs(env));

/** Loopback unless HOST says otherwise: a laptop on a shared network exposes nothing by default (the image sets HOST=0.0.0.0). */
const DEFAULT_HOST = '127.0.0.1';

/** DAS_MODE=function-gateway: the environment's function gateway, a proxy to the internal REST API. */
async function functionGateway(env: NodeJS.ProcessEnv): Promise<void> {
  if (!env.DAS_UPSTREAM_URL || !env.DAS_FUNCTION_NAME) throw new Error('DAS_MODE=function-gateway needs DAS_UPSTREAM_URL and DAS_FUNCTION_NAME');
  const delayMs = shutdownDelayMs(env);
  const { startFunctionGateway } = await import('./function-gateway/server.js');
  const { functionGatewayTrust } = await import('./function-gateway/trust.js');
  const gateway = await startFunctionGateway({
    upstreamUrl: env.DAS_UPSTREAM_URL,
    principal: env.DAS_FUNCTION_NAME,
    logger,
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? DEFAULT_HOST,
    ...functionGatewayTrust(env, (message) => logger.warn({ component: 'service-accounts' }, message)),
  });
  parts.push({ name: 'function gateway', stop: () => gateway.stop({ delayMs }) });
}

async function main(): Promise<void> {
  const env = { ...process.env };
  if (env.DAS_MODE === 'function-gateway') return functionGateway(env);
  if (env.DAS_MODE && env.DAS_MODE !== 'dataplane') throw new Error(`unknown DAS_MODE "${env.DAS_MODE}": dataplane or function-gateway`);
  const deadlineMs = wholeNumberSetting(env, 'SHUTDOWN_TIMEOUT_MS', 25_000);
  const delayMs = shutdownDelayMs(env);
  const dataDir = resolve(env.DATA_DIR ?? '.data');
  if (!usesExternalDatabase(env)) {
    const { startEmbeddedPostgres } = await import('./db/embedded.js');
    const dir = resolve(dataDir, 'postgres');
    const embedded: EmbeddedDatabase = await startEmbeddedPostgres({
      dir,
      onLog: (line) => logger.debug({ component: 'postgres' }, line),
      onNotice: (line) => logger.warn({ component: 'postgres' }, line),
    });
    parts.push({ name: 'embedded PostgreSQL', stop: () => embedded.stop() });
    env.DATABASE_URL = embedded.url;
    logger.info({ port: embedded.port, dir }, 'embedded PostgreSQL started');
  }
  if (exiting) return; // a signal came while the database started: shutdown() stops it
  // Imported here, not at the top: `--help` answers without loading the drivers.
  const { bootstrapDataPlane } = await import('./bootstrap.js');
  const dataPlane = await bootstrapDataPlane({
    logger,
    configSource: configSource(env),
    dataDir,
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? DEFAULT_HOST,
    env,
  });
  parts.push({ name: 'data plane', stop: () => dataPlane.stop({ deadlineMs, delayMs }) });
}

process.on('uncaughtException', (err) => {
  logger.fatal({ err: err.message, stack: err.stack }, 'uncaught exception');
  exit(1);
});

main().catch(async (err: unknown) => {
  if (err instanceof ManifestError) {
    logger.fatal({ file: err.file, problems: err.problems }, err.message);
    console.error(err.message);
  } else {
    const message = err instanceof Error ? err.message : `start-up failed: ${String(err)}`;
    logger.fatal({ err: message, stack: err instanceof Error ? err.stack : undefined }, 'data plane failed to start');
    console.error(`data plane failed to start: ${message}`);
  }
  // Whatever did start (the embedded database) is stopped before exiting.
  for (const part of [...parts].reverse()) await part.stop().catch(() => undefined);
  exit(1);
});
