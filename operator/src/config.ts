/** The operator's settings, from environment variables (the Helm chart sets them). */
import { workloadTelemetryEnv } from '../../model/settings/telemetry.js';
import { hostname } from 'node:os';
import { DEFAULT_RENDER_SETTINGS, type RenderSettings } from './render/types.js';
import type { LeaseSettings } from './leader-election.js';
import { renderUsage } from '../../model/settings/declare.js';
import { OPERATOR_SETTINGS, operatorSettings, type OperatorSettings } from '../../model/settings/operator.js';

export interface OperatorConfig {
  /** Watch one namespace; all namespaces when undefined. */
  watchNamespace?: string;
  metricsPort: number;
  metricsBindAddress: string;
  logLevel: string;
  leaderElection: LeaseSettings & { enabled: boolean };
  resyncPeriodMs: number;
  workers: number;
  render: RenderSettings;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** `--help`: the variables are rendered from their declarations (model/settings/operator.ts). */
export const USAGE = `Usage: npm run operator  (or: node dist/operator/src/main.js)

The data-access-operator: reconciles Environment and Dataset resources (dataaccess.dev/v1alpha1).
Cluster: KUBECONFIG, else ~/.kube/config, else the Pod's service account.
Settings are environment variables:
${renderUsage(OPERATOR_SETTINGS, 'operator')}
Signals: SIGTERM/SIGINT finish the running reconciles, release the lease and exit; SIGHUP resyncs.
`;

/** The operator's configuration: the declared variables (a bad value: SettingError), then the rules between them. */
export function loadConfig(env: NodeJS.ProcessEnv): OperatorConfig {
  return configOf(operatorSettings(env));
}

/** The OTEL_* variables the rendered workloads get, when tracing is configured. */
function telemetryOf(settings: OperatorSettings): Pick<OperatorConfig['render'], 'telemetryEnv'> {
  const telemetryEnv = workloadTelemetryEnv(settings);
  return telemetryEnv.length ? { telemetryEnv } : {};
}

export function configOf(settings: OperatorSettings): OperatorConfig {
  const watchNamespace = settings.WATCH_NAMESPACE || undefined;
  const leaseDurationMs = settings.LEASE_DURATION_SECONDS!;
  const renewDeadlineMs = settings.LEASE_RENEW_DEADLINE_SECONDS ?? Math.round(Math.min(10, ((leaseDurationMs / 1000) * 2) / 3) * 1000);
  const retryPeriodMs = settings.LEASE_RETRY_PERIOD_SECONDS ?? Math.round(Math.min(2, renewDeadlineMs / 1000 / 2) * 1000);
  if (renewDeadlineMs >= leaseDurationMs) {
    throw new ConfigError('LEASE_RENEW_DEADLINE_SECONDS must be shorter than LEASE_DURATION_SECONDS (a leader must give up before others may take over)');
  }
  if (retryPeriodMs >= renewDeadlineMs) throw new ConfigError('LEASE_RETRY_PERIOD_SECONDS must be shorter than LEASE_RENEW_DEADLINE_SECONDS');
  return {
    watchNamespace,
    metricsPort: settings.METRICS_PORT,
    metricsBindAddress: settings.METRICS_BIND_ADDRESS,
    logLevel: settings.LOG_LEVEL,
    leaderElection: {
      enabled: settings.LEADER_ELECTION !== false,
      namespace: settings.LEASE_NAMESPACE || settings.POD_NAMESPACE || watchNamespace || 'default',
      name: settings.LEASE_NAME,
      identity: settings.POD_NAME || `${hostname()}-${process.pid}`,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    },
    resyncPeriodMs: settings.RESYNC_PERIOD_SECONDS!,
    workers: settings.MAX_CONCURRENT_RECONCILES,
    render: {
      dataplaneImage: settings.DATAPLANE_IMAGE || DEFAULT_RENDER_SETTINGS.dataplaneImage,
      functionGatewayImage: settings.FUNCTION_GATEWAY_IMAGE || settings.DATAPLANE_IMAGE || DEFAULT_RENDER_SETTINGS.functionGatewayImage,
      imagePullPolicy: settings.IMAGE_PULL_POLICY,
      ...telemetryOf(settings),
    },
  };
}
