/**
 * The data-plane process: `npm start` locally, the container entry point in the cluster.
 *
 *
 * This file owns the process's signals: one shutdown path, whatever started. On SIGTERM or SIGINT
 * /readyz turns `draining` and the server keeps serving for DAS_SHUTDOWN_DELAY_MS (every response
 * closing its connection), then stops accepting, in-flight requests finish, subscriptions end with 1012, ASYNC writes drain (retrying through a
 * store outage until the deadline), pools close, and only then is the embedded PostgreSQL
 * stopped. Exit code 0 when nothing was lost, 1 when some ASYNC writes could not be written
 * (each is logged). A second signal while draining (a second or more after the first) exits at once with 1.
 */
import { warmUpNextTick } from './next-tick-warm-up.js';
import { resolve } from 'node:path';
import pino from 'pino';
import { ManifestError } from '../../model/manifests.js';
import { SettingError, unknownSettings } from '../../model/settings/declare.js';
import { DATAPLANE_SETTINGS, dataPlaneSettings, pipeliningOf, shutdownDelayMsOf, type DataPlaneSettings } from '../../model/settings/dataplane.js';
import { BatchedLogDestination } from './log-destination.js';
import type { EmbeddedDatabase } from './db/embedded.js';
import type { ConfigSource } from './server.js';
import { USAGE } from './usage.js';
import { assertPortFree, PortInUseError } from './listen-address.js';
import { tracingConfigOf } from '../../model/settings/telemetry.js';

// Before anything else calls nextTick (next-tick-warm-up.ts says why).
await warmUpNextTick();

if (process.argv.slice(2).some((a) => a === '--help' || a === '-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}

/** A start-up refusal: one line on stderr, nothing started, exit 1. */
function refuse(message: string): never {
  process.stderr.write(`data plane not started: ${message}\n`);
  process.exit(1);
}

function parsedSettings(): DataPlaneSettings {
  try {
    return dataPlaneSettings(process.env);
  } catch (err) {
    if (err instanceof SettingError) refuse(err.message);
    throw err;
  }
}

/** Every variable, parsed before anything starts. */
const settings = parsedSettings();

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
const logger = pino({ level: settings.LOG_LEVEL, base: { service: 'data-plane' } }, destination);
for (const warning of unknownSettings(DATAPLANE_SETTINGS, process.env)) logger.warn(warning);

/** Where the configuration comes from; settings that must go together are checked here, before anything starts. */
function configSource(s: DataPlaneSettings): ConfigSource {
  if (s.DAS_CONFIG_SOURCE === 'kubernetes') {
    if (!s.DAS_NAMESPACE || !s.DAS_ENVIRONMENT) refuse('DAS_CONFIG_SOURCE=kubernetes needs DAS_NAMESPACE and DAS_ENVIRONMENT');
    return { kind: 'kubernetes', namespace: s.DAS_NAMESPACE, environment: s.DAS_ENVIRONMENT };
  }
  return { kind: 'files', path: resolve(s.DAS_MANIFESTS ?? 'examples'), environment: s.DAS_ENVIRONMENT };
}

const usesExternalDatabase = (s: DataPlaneSettings) => Boolean(s.DATABASE_URL || s.PGHOST || s.PGDATABASE);

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

/** DAS_MODE=function-gateway: the environment's function gateway, a proxy to the internal REST API. */
async function functionGateway(s: DataPlaneSettings): Promise<void> {
  if (!s.DAS_UPSTREAM_URL || !s.DAS_FUNCTION_NAME) refuse('DAS_MODE=function-gateway needs DAS_UPSTREAM_URL and DAS_FUNCTION_NAME');
  await assertPortFree(s.HOST, s.PORT);
  const { startFunctionGateway } = await import('./function-gateway/server.js');
  const { functionGatewayTrust } = await import('./function-gateway/trust.js');
  const { accessKeyStore, accessKeysFromEnv } = await import('./function-gateway/access-keys.js');
  const gateway = await startFunctionGateway({
    upstreamUrl: s.DAS_UPSTREAM_URL,
    principal: s.DAS_FUNCTION_NAME,
    logger,
    port: s.PORT,
    host: s.HOST,
    ...functionGatewayTrust(s, (message) => logger.warn({ component: 'service-accounts' }, message)),
    pipelining: pipeliningOf(s),
    accessKeys: accessKeyStore(accessKeysFromEnv(s), s),
  });
  parts.push({ name: 'function gateway', stop: () => gateway.stop({ delayMs: shutdownDelayMsOf(s) }) });
}

/** OpenTelemetry traces, when an OTLP endpoint is set; pushed first, so stopped (flushed) last. */
async function startTracingIfConfigured(s: DataPlaneSettings): Promise<void> {
  const config = tracingConfigOf(s, s.DAS_MODE === 'function-gateway' ? 'data-access-function-gateway' : 'data-access-dataplane');
  if (!config) return;
  const { startTracing } = await import('../../model/telemetry/tracing.js');
  const tracing = await startTracing(config, (message) => logger.warn({ component: 'tracing', url: config.url }, `traces not exported: ${message}`));
  parts.push({ name: 'tracing', stop: () => tracing.stop() });
  logger.info({ url: config.url, protocol: config.protocol, sampler: config.sampler }, 'tracing to an OTLP collector');
}

async function main(): Promise<void> {
  await startTracingIfConfigured(settings);
  if (settings.DAS_MODE === 'function-gateway') return functionGateway(settings);
  const source = configSource(settings);
  const deadlineMs = settings.SHUTDOWN_TIMEOUT_MS;
  const delayMs = shutdownDelayMsOf(settings);
  const dataDir = resolve(settings.DATA_DIR);
  let databaseUrl = settings.DATABASE_URL;
  await assertPortFree(settings.HOST, settings.PORT);
  if (!usesExternalDatabase(settings)) {
    const { startEmbeddedPostgres } = await import('./db/embedded.js');
    const dir = resolve(dataDir, 'postgres');
    const embedded: EmbeddedDatabase = await startEmbeddedPostgres({
      dir,
      onLog: (line) => logger.debug({ component: 'postgres' }, line),
      onNotice: (line) => logger.warn({ component: 'postgres' }, line),
    });
    parts.push({ name: 'embedded PostgreSQL', stop: () => embedded.stop() });
    databaseUrl = embedded.url;
    logger.info({ port: embedded.port, dir }, 'embedded PostgreSQL started');
  }
  if (exiting) return; // a signal came while the database started: shutdown() stops it
  // Imported here, not at the top: `--help` answers without loading the drivers.
  const { bootstrapDataPlane } = await import('./bootstrap.js');
  const dataPlane = await bootstrapDataPlane({
    logger,
    configSource: source,
    dataDir,
    port: settings.PORT,
    host: settings.HOST,
    settings: { ...settings, DATABASE_URL: databaseUrl },
  });
  parts.push({ name: 'data plane', stop: () => dataPlane.stop({ deadlineMs, delayMs }) });
}

process.on('uncaughtException', (err) => {
  logger.fatal({ err: err.message, stack: err.stack }, 'uncaught exception');
  exit(1);
});

main().catch(async (err: unknown) => {
  if (err instanceof PortInUseError) {
    logger.fatal(err.message);
    console.error(`data plane failed to start: ${err.message}`);
  } else if (err instanceof ManifestError) {
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
