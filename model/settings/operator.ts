/**
 * Every environment variable the operator reads (the Helm chart sets them), declared once;
 * operator/src/config.ts parses them and derives the operator's configuration.
 */
import { TELEMETRY_SETTINGS } from './telemetry.js';
import { choice, flag, parseSettings, seconds, text, wholeNumber, type SettingsOf } from './declare.js';

const OP = ['operator'] as const;

export const OPERATOR_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

export const OPERATOR_SETTINGS = {
  WATCH_NAMESPACE: text(undefined, { shownDefault: 'all namespaces', description: 'one namespace to watch, or empty for all', readers: OP }),
  METRICS_PORT: wholeNumber(9090, { min: 0, max: 65535 }, { description: '/metrics, /healthz, /readyz', readers: OP }),
  METRICS_BIND_ADDRESS: text('0.0.0.0', { description: 'the address /metrics listens on', readers: OP }),
  LOG_LEVEL: choice(OPERATOR_LOG_LEVELS, 'info', { description: 'pino level', readers: OP }),
  LEADER_ELECTION: flag(true, { description: 'take a Lease before reconciling (one active replica)', readers: OP }),
  LEASE_NAME: text('data-access-operator', { description: 'the leader Lease', readers: OP }),
  LEASE_NAMESPACE: text(undefined, { shownDefault: 'POD_NAMESPACE, else WATCH_NAMESPACE, else default', description: 'the leader Lease\'s namespace', readers: OP }),
  POD_NAMESPACE: text(undefined, { description: 'the operator Pod\'s namespace (from the Pod)', readers: OP }),
  LEASE_DURATION_SECONDS: seconds(15, { min: 1, max: 3600 }, { description: 'how long a Lease holds without renewal', readers: OP }),
  LEASE_RENEW_DEADLINE_SECONDS: seconds(undefined, { min: 0.5, max: 3600 }, { shownDefault: '10 (at most 2/3 of the duration)', description: 'a leader gives up when it could not renew for this long (shorter than the duration)', readers: OP }),
  LEASE_RETRY_PERIOD_SECONDS: seconds(undefined, { min: 0.1, max: 600 }, { shownDefault: '2 (at most half the deadline)', description: 'how often a candidate tries to take or renew the Lease (shorter than the deadline)', readers: OP }),
  POD_NAME: text(undefined, { shownDefault: 'hostname-pid', description: 'leader identity', readers: OP }),
  RESYNC_PERIOD_SECONDS: seconds(600, { min: 0, max: 86_400 }, { description: 're-queue every resource this often (0 turns it off)', readers: OP }),
  MAX_CONCURRENT_RECONCILES: wholeNumber(4, { min: 1, max: 64 }, { description: 'reconciles at once', readers: OP }),
  DATAPLANE_IMAGE: text(undefined, { shownDefault: 'the service\'s one image (DEFAULT_IMAGE)', description: 'the data plane\'s image', readers: OP }),
  FUNCTION_GATEWAY_IMAGE: text(undefined, { shownDefault: 'DATAPLANE_IMAGE', description: 'the function gateway\'s image (the same image in function-gateway mode)', readers: OP }),
  IMAGE_PULL_POLICY: choice(PULL_POLICIES, 'IfNotPresent', { description: 'the workloads\' imagePullPolicy', readers: OP }),
  KUBECONFIG: text(undefined, { shownDefault: '~/.kube/config', description: 'the cluster (else ~/.kube/config, else the Pod\'s service account)', readers: OP }),
  KUBERNETES_SERVICE_HOST: text(undefined, { description: 'set by Kubernetes in a Pod: in-cluster credentials', readers: OP }),
  KUBERNETES_SERVICE_PORT: text(undefined, { description: 'set by Kubernetes in a Pod', readers: OP }),
  // OpenTelemetry traces (model/settings/telemetry.ts); handed on to the rendered workloads
  ...TELEMETRY_SETTINGS,
};

export type OperatorSettings = SettingsOf<typeof OPERATOR_SETTINGS>;

export function operatorSettings(env: Readonly<Record<string, string | undefined>>): OperatorSettings {
  return parseSettings(OPERATOR_SETTINGS, env);
}
