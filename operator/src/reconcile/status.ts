/** The status the operator reports for an Environment or a Dataset: pure functions of the outcome. */
import type { SpecProblem } from '../../../model/validate.js';
import { COMPONENT, LABELS, objectNames } from '../names.js';
import { SERVICE_PORT } from '../render/types.js';
import { outcomeConditions, setConditions, type Condition, type Problem } from './conditions.js';

/** What a reconcile came to. */
export type Outcome =
  | { kind: 'applied' }
  | { kind: 'waiting'; message: string }
  | { kind: 'invalid'; problems: SpecProblem[] }
  | { kind: 'environment-missing'; environment: string; namespace: string }
  | { kind: 'conflict'; message: string }
  | { kind: 'storage-in-use'; dataset: string; message: string }
  | { kind: 'storage-retained'; message: string }
  | { kind: 'failed'; message: string };

export function describeProblems(problems: readonly SpecProblem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('; ');
}

export function problemOf(outcome: Outcome): Problem | undefined {
  switch (outcome.kind) {
    case 'applied':
      return undefined;
    case 'waiting':
      return { reason: 'WaitingForGarbageCollection', message: outcome.message, degraded: false };
    case 'invalid':
      return {
        reason: 'InvalidSpec',
        message: `The spec is invalid, so nothing was applied. Fix ${describeProblems(outcome.problems)}`,
        degraded: true,
      };
    case 'environment-missing':
      return {
        reason: 'EnvironmentNotFound',
        message:
          `Environment "${outcome.environment}" does not exist in namespace "${outcome.namespace}" (or is being deleted), ` +
          'so nothing was applied. Create it, or set spec.environment to an existing Environment.',
        degraded: true,
      };
    case 'conflict':
      return { reason: 'OwnershipConflict', message: outcome.message, degraded: true };
    case 'storage-in-use':
      return {
        reason: 'StorageInUse',
        message: `The storage this spec names belongs to Dataset "${outcome.dataset}": ${outcome.message}. Nothing was applied; give this Dataset storage of its own.`,
        degraded: true,
      };
    case 'storage-retained':
      return {
        reason: 'StorageRetained',
        message: `The data plane does not serve this Dataset: ${outcome.message}`,
        degraded: true,
      };
    case 'failed':
      return { reason: 'ApplyFailed', message: `Applying failed and is retried with backoff: ${outcome.message}`, degraded: true };
  }
}

interface ResourceView {
  metadata: { name: string; namespace?: string; generation?: number };
  status?: { conditions?: Condition[] };
}

export interface DeploymentView {
  spec?: { replicas?: number };
  status?: { availableReplicas?: number };
}

export interface EnvironmentStatus {
  observedGeneration: number;
  conditions: Condition[];
  datasets: number;
  /** The data plane Deployment's replica count now (the autoscaler's choice while autoscaling is set). */
  replicas?: number;
  endpoints: { api: string; internal?: string; functionGateway?: string };
}

export function environmentStatus(
  env: ResourceView & { spec: { type: string; functionGateway?: { enabled?: boolean } } },
  outcome: Outcome,
  facts: { datasets: number; dataplane: DeploymentView | undefined },
  now: Date,
): EnvironmentStatus {
  const name = env.metadata.name;
  const namespace = env.metadata.namespace ?? 'default';
  const problem = problemOf(outcome);
  const ready = problem ? { ok: false, reason: problem.reason, message: problem.message } : dataplaneReadiness(name, namespace, facts.dataplane);
  const generation = env.metadata.generation ?? 0;
  const svc = (service: string) => `${service}.${namespace}.svc:${SERVICE_PORT}`;
  return {
    observedGeneration: generation,
    conditions: setConditions(env.status?.conditions, outcomeConditions(ready, problem), generation, now),
    datasets: facts.datasets,
    ...(facts.dataplane?.spec?.replicas === undefined ? {} : { replicas: facts.dataplane.spec.replicas }),
    endpoints: {
      api: svc(objectNames.apiService(name)),
      ...(env.spec.type === 'internal' ? { internal: svc(objectNames.internalService(name)) } : {}),
      ...(env.spec.functionGateway?.enabled !== false ? { functionGateway: objectNames.functionGateway(name) } : {}),
    },
  };
}

/** Ready for an applied Environment: its data plane has an available replica. */
function dataplaneReadiness(env: string, namespace: string, deployment: DeploymentView | undefined) {
  const wanted = deployment?.spec?.replicas ?? 0;
  const available = deployment?.status?.availableReplicas ?? 0;
  const deploymentName = `${namespace}/${objectNames.dataplane(env)}`;
  if (wanted === 0) {
    return { ok: false, reason: 'ScaledToZero', message: `Deployment ${deploymentName} has 0 replicas (spec.dataplane.replicas); nothing serves requests.` };
  }
  if (available > 0) {
    return { ok: true, reason: 'DataPlaneAvailable', message: `${available}/${wanted} data plane replicas of Deployment ${deploymentName} are available.` };
  }
  const selector = `${LABELS.environment}=${env},${LABELS.component}=${COMPONENT.dataplane}`;
  return {
    ok: false,
    reason: 'DataPlaneUnavailable',
    message: `0/${wanted} data plane replicas of Deployment ${deploymentName} are available; see why with: kubectl -n ${namespace} describe pods -l ${selector}`,
  };
}

export interface DatasetStatus {
  observedGeneration: number;
  conditions: Condition[];
  /** The ConfigMap that holds the published config, once there is one. */
  configMap?: string;
}

export function datasetStatus(
  dataset: ResourceView & { spec: { environment: string; paused?: boolean } },
  outcome: Outcome,
  facts: { configMap: string | undefined },
  now: Date,
): DatasetStatus {
  const generation = dataset.metadata.generation ?? 0;
  const problem = problemOf(outcome);
  const serving = facts.configMap ? ` The data plane keeps serving the config last published in ConfigMap ${facts.configMap}.` : '';
  const ready = problem
    ? { ok: false, reason: problem.reason, message: problem.message + serving }
    : {
        ok: true,
        reason: 'ConfigPublished',
        message: `Generation ${generation} is published in ConfigMap ${facts.configMap}; the data plane of Environment "${dataset.spec.environment}" loads it without a restart.`,
      };
  return {
    observedGeneration: generation,
    conditions: setConditions(dataset.status?.conditions, [...outcomeConditions(ready, problem), pausedCondition(dataset.spec.paused === true)], generation, now),
    ...(facts.configMap ? { configMap: facts.configMap } : {}),
  };
}

/** spec.paused, as a condition: the data plane keeps the storage and config and answers 503 DATASET_PAUSED. */
function pausedCondition(paused: boolean) {
  return paused
    ? { type: 'Paused' as const, status: 'True' as const, reason: 'PausedBySpec', message: 'spec.paused is true: storage and config are kept, data requests are answered 503 DATASET_PAUSED and bulk loads wait until it is resumed.' }
    : { type: 'Paused' as const, status: 'False' as const, reason: 'NotPaused', message: 'Serving.' };
}
