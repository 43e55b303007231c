/** The operator's settings, from environment variables (the Helm chart sets them). */
import { hostname } from 'node:os';
import { DEFAULT_RENDER_SETTINGS, type RenderSettings } from './render/types.js';
import type { LeaseSettings } from './leader-election.js';

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

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return value;
}

function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback * 1000;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) throw new ConfigError(`${name} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return Math.round(value * 1000);
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name} must be "true" or "false", got ${JSON.stringify(raw)}`);
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

/**
 * WATCH_NAMESPACE        one namespace, or empty for all
 * METRICS_PORT           /metrics, /healthz, /readyz (default 9090)
 * METRICS_BIND_ADDRESS   default 0.0.0.0
 * LOG_LEVEL              default info
 * LEADER_ELECTION        true|false (default true)
 * LEASE_NAME, LEASE_NAMESPACE (default POD_NAMESPACE, else WATCH_NAMESPACE, else "default")
 * LEASE_DURATION_SECONDS (15), LEASE_RENEW_DEADLINE_SECONDS (10), LEASE_RETRY_PERIOD_SECONDS (2)
 * POD_NAME               leader identity (default hostname-pid)
 * RESYNC_PERIOD_SECONDS  re-queue every resource this often (600; 0 turns it off)
 * MAX_CONCURRENT_RECONCILES (4)
 * DATAPLANE_IMAGE        default the service's one image (DEFAULT_IMAGE)
 * FUNCTION_GATEWAY_IMAGE default DATAPLANE_IMAGE (the same image in function-gateway mode)
 * IMAGE_PULL_POLICY      default IfNotPresent
 */
export const USAGE = `Usage: npm run operator  (or: node dist/operator/src/main.js)

The data-access-operator: reconciles Environment and Dataset resources (dataaccess.dev/v1alpha1).
Cluster: KUBECONFIG, else ~/.kube/config, else the Pod's service account.
Settings are environment variables:
  WATCH_NAMESPACE              one namespace, or empty for all
  METRICS_PORT                 /metrics, /healthz, /readyz (default 9090)
  METRICS_BIND_ADDRESS         default 0.0.0.0
  LOG_LEVEL                    trace, debug, info, warn, error, fatal (default info)
  LEADER_ELECTION              true|false (default true)
  LEASE_NAME, LEASE_NAMESPACE  the leader Lease (default data-access-operator in POD_NAMESPACE)
  LEASE_DURATION_SECONDS (15), LEASE_RENEW_DEADLINE_SECONDS (10), LEASE_RETRY_PERIOD_SECONDS (2)
  POD_NAME                     leader identity (default hostname-pid)
  RESYNC_PERIOD_SECONDS        re-queue every resource this often (600; 0 turns it off)
  MAX_CONCURRENT_RECONCILES    (4)
  DATAPLANE_IMAGE, FUNCTION_GATEWAY_IMAGE, IMAGE_PULL_POLICY
Signals: SIGTERM/SIGINT finish the running reconciles, release the lease and exit; SIGHUP resyncs.
`;

export function loadConfig(env: NodeJS.ProcessEnv): OperatorConfig {
  const watchNamespace = env.WATCH_NAMESPACE || undefined;
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const leaseDurationMs = seconds(env, 'LEASE_DURATION_SECONDS', 15, 1, 3600);
  const renewDeadlineMs = seconds(env, 'LEASE_RENEW_DEADLINE_SECONDS', Math.min(10, ((leaseDurationMs / 1000) * 2) / 3), 0.5, 3600);
  const retryPeriodMs = seconds(env, 'LEASE_RETRY_PERIOD_SECONDS', Math.min(2, renewDeadlineMs / 1000 / 2), 0.1, 600);
  if (renewDeadlineMs >= leaseDurationMs) {
    throw new ConfigError('LEASE_RENEW_DEADLINE_SECONDS must be shorter than LEASE_DURATION_SECONDS (a leader must give up before others may take over)');
  }
  if (retryPeriodMs >= renewDeadlineMs) throw new ConfigError('LEASE_RETRY_PERIOD_SECONDS must be shorter than LEASE_RENEW_DEADLINE_SECONDS');
  const pullPolicy = env.IMAGE_PULL_POLICY || DEFAULT_RENDER_SETTINGS.imagePullPolicy;
  if (!(PULL_POLICIES as readonly string[]).includes(pullPolicy)) throw new ConfigError(`IMAGE_PULL_POLICY must be one of ${PULL_POLICIES.join(', ')}`);
  return {
    watchNamespace,
    metricsPort: integer(env, 'METRICS_PORT', 9090, 0, 65535),
    metricsBindAddress: env.METRICS_BIND_ADDRESS || '0.0.0.0',
    logLevel,
    leaderElection: {
      enabled: boolean(env, 'LEADER_ELECTION', true),
      namespace: env.LEASE_NAMESPACE || env.POD_NAMESPACE || watchNamespace || 'default',
      name: env.LEASE_NAME || 'data-access-operator',
      identity: env.POD_NAME || `${hostname()}-${process.pid}`,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
    },
    resyncPeriodMs: seconds(env, 'RESYNC_PERIOD_SECONDS', 600, 0, 86_400),
    workers: integer(env, 'MAX_CONCURRENT_RECONCILES', 4, 1, 64),
    render: {
      dataplaneImage: env.DATAPLANE_IMAGE || DEFAULT_RENDER_SETTINGS.dataplaneImage,
      functionGatewayImage: env.FUNCTION_GATEWAY_IMAGE || env.DATAPLANE_IMAGE || DEFAULT_RENDER_SETTINGS.functionGatewayImage,
      imagePullPolicy: pullPolicy as RenderSettings['imagePullPolicy'],
    },
  };
}
