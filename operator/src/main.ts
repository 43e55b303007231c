/**
 * The operator process: `npm run operator` (out of cluster, KUBECONFIG) or the chart's Deployment
 * (in cluster). Signals: SIGTERM/SIGINT shut down gracefully (finish reconciles, release the
 * lease); SIGHUP queues every resource for a full resync.
 */
import { pino } from 'pino';
import { ConfigError, USAGE, configOf } from './config.js';
import { SettingError } from '../../model/settings/declare.js';
import { operatorSettings } from '../../model/settings/operator.js';
import { tracingConfigOf } from '../../model/settings/telemetry.js';
import { loadKubeConfig } from './kube/kubeconfig.js';
import { Controller } from './controller.js';
import { EventRecorder } from './kube/events.js';
import { KubeObjectClient } from './kube/object-client.js';
import { discoverCapabilities, watchServedVersions } from './kube/discovery.js';
import { requestCounter } from './kube/request-counter.js';
import { startHttpServer } from './http-server.js';
import { LeaderElector } from './leader-election.js';
import { createMetrics } from './metrics.js';
import { OPERATOR_NAME } from './names.js';

async function main(): Promise<void> {
  if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const settings = operatorSettings(process.env);
  const config = configOf(settings);
  const logger = pino({ name: OPERATOR_NAME, level: config.logLevel });
  // OpenTelemetry: the SDK is loaded only when an OTLP endpoint is set.
  const tracingConfig = tracingConfigOf(settings, 'data-access-operator');
  const tracing = tracingConfig
    ? await (await import('../../model/telemetry/tracing.js')).startTracing(tracingConfig, (message) => logger.warn({ url: tracingConfig.url }, `traces not exported: ${message}`))
    : undefined;
  const kubeConfig = loadKubeConfig(settings);
  const metrics = createMetrics();
  const client = new KubeObjectClient(kubeConfig, [requestCounter(metrics.apiRequests)]);
  const cluster = await discoverCapabilities(client, logger);
  const identity = config.leaderElection.identity;

  const controller = new Controller({
    kubeConfig,
    client,
    namespace: config.watchNamespace,
    settings: config.render,
    logger,
    metrics,
    events: new EventRecorder(client, logger, identity),
    workers: config.workers,
    resyncPeriodMs: config.resyncPeriodMs,
    cluster,
  });
  const http = await startHttpServer({
    port: config.metricsPort,
    host: config.metricsBindAddress,
    registry: metrics.registry,
    isReady: () => true,
  });
  logger.info({ metricsPort: http.port, server: kubeConfig.getCurrentCluster()?.server, watchNamespace: config.watchNamespace ?? '(all)' }, 'operator starting');

  let started = false;
  const lead = async () => {
    started = true;
    metrics.isLeader.set(1);
    await controller.start();
  };
  const elector = config.leaderElection.enabled ? new LeaderElector({ client, logger, ...config.leaderElection }) : undefined;

  let shuttingDown = false;
  const shutdown = async (signal: string, exitCode = 0) => {
    if (shuttingDown) return;
    shuttingDown = true;
    versions.stop();
    logger.info({ signal }, 'shutting down');
    if (started) await controller.stop();
    metrics.isLeader.set(0);
    await elector?.stop();
    await http.close();
    await tracing?.stop().catch(() => undefined);
    logger.flush();
    process.exit(exitCode);
  };
  // The informers watch the versions discovered at start: when the cluster serves others (an
  // upgrade removed v2beta2), a restart (the Deployment's) picks them up.
  const versions = watchServedVersions(client, logger, cluster, () => void shutdown('served API versions changed; restarting to use them', 1));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    if (started) logger.info({ queued: controller.resync() }, 'SIGHUP: full resync');
  });

  if (elector) {
    await elector.run({
      onStartedLeading: lead,
      // Another replica may lead by now: stop at once; the Deployment restarts this one as a standby.
      onStoppedLeading: () => void shutdown('leadership lost', 1),
    });
  } else {
    await lead();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError || err instanceof SettingError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`${OPERATOR_NAME}: ${message}\n`);
  process.exit(1);
});
