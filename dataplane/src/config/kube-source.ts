/**
 * Config source for the data plane in a cluster: watches the ConfigMaps the operator renders for
 * one Environment and hands the parsed configs to the sink, so configs reload without a restart.
 *
 * - `startKubeConfigSource` resolves once the initial list has been delivered.
 * - A dropped watch resumes from the last resourceVersion; an expired one (410) re-lists, and
 *   datasets whose ConfigMaps vanished meanwhile are removed. Other failures retry with backoff.
 * - Malformed JSON, or JSON that is not a valid rendered config (model/config-schema.ts, checked
 *   with the model's ajv validation), is logged with the ConfigMap and the JSON paths and skipped:
 *   the last good config stays in force.
 */
import { CoreV1Api, KubeConfig, ListWatch, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { PURGE_ANNOTATION } from '../../../model/configmaps.js';
import { checkDatasetConfig, checkEnvironmentConfig, type SpecProblem } from '../../../model/validate.js';
import { CONFIGMAP_LABELS, DATASET_CONFIG_KEY, ENVIRONMENT_CONFIG_KEY, MANAGED_BY, type ConfigSink } from './sink.js';

/** Set by the operator on a dataset ConfigMap it deletes under `deletionPolicy: Delete` (model/configmaps.ts). */
export { PURGE_ANNOTATION };

export interface KubeConfigSourceOptions {
  namespace: string;
  environment: string;
  kubeConfig?: KubeConfig;
  logger?: Logger;
  /** Attempts at the initial list before giving up (default 8, about half a minute of backoff). */
  initialListAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

/** A sink that can also drop a dataset's stored data (deletionPolicy Delete). */
export type PurgingConfigSink = ConfigSink & { purgeDataset?(config: DatasetConfig): void | Promise<void> };

export function configMapSelector(environment: string): string {
  return `${CONFIGMAP_LABELS.environment}=${environment},${CONFIGMAP_LABELS.managedBy}=${MANAGED_BY}`;
}

type ParsedConfig = { kind: 'environment'; config: EnvironmentConfig } | { kind: 'dataset'; config: DatasetConfig };

/** A ConfigMap that holds no usable config; `problems` name the JSON paths inside its key. */
export class ConfigMapError extends Error {
  constructor(
    message: string,
    readonly problems: SpecProblem[] = [],
  ) {
    super(message);
  }
}

const MAX_PROBLEMS_IN_MESSAGE = 5;

/** Parses one ConfigMap; throws a ConfigMapError naming the problem. Undefined: not a config. */
export function parseConfigMap(configMap: V1ConfigMap): ParsedConfig | undefined {
  const label = configMap.metadata?.labels?.[CONFIGMAP_LABELS.config];
  const data = configMap.data ?? {};
  const kind = label === 'environment' || label === 'dataset' ? label : ENVIRONMENT_CONFIG_KEY in data ? 'environment' : DATASET_CONFIG_KEY in data ? 'dataset' : undefined;
  if (!kind) return undefined;
  const key = kind === 'environment' ? ENVIRONMENT_CONFIG_KEY : DATASET_CONFIG_KEY;
  const text = data[key];
  if (text === undefined) throw new ConfigMapError(`key ${key} is missing`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigMapError(`key ${key} is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigMapError(`key ${key} must hold a JSON object`);
  // The operator renders these (model/render.ts); anything else (a hand edit, a skewed version) is refused, not cast.
  const problems = kind === 'environment' ? checkEnvironmentConfig(value) : checkDatasetConfig(value);
  if (problems.length) {
    const shown = problems.slice(0, MAX_PROBLEMS_IN_MESSAGE).map((p) => `${p.path}: ${p.message}`);
    if (problems.length > shown.length) shown.push(`and ${problems.length - shown.length} more`);
    throw new ConfigMapError(`key ${key} is not a valid ${kind} config: ${shown.join('; ')}`, problems);
  }
  return kind === 'environment' ? { kind, config: value as EnvironmentConfig } : { kind, config: value as DatasetConfig };
}

/**
 * What the watch does with ConfigMap events: `deliver` (added or updated) hands a valid config to
 * the sink and skips, with a warning naming the ConfigMap and the JSON paths, one that is not;
 * `remove` (deleted) removes the dataset it served and passes on a purge request.
 */
export function configMapHandlers(namespace: string, sink: PurgingConfigSink, logger: Logger) {
  /** Dataset id served per ConfigMap name, to remove the right dataset when its ConfigMap goes. */
  const served = new Map<string, DatasetConfig>();
  /** ConfigMaps whose content was refused (the last good config serves): /readyz reports them (degraded). */
  const refused = new Map<string, string>();
  const report = () => {
    const [first] = refused;
    if (!first) return sink.reportSourceProblem?.(undefined);
    const more = refused.size > 1 ? ` (and ${refused.size - 1} more ConfigMap${refused.size > 2 ? 's' : ''} refused)` : '';
    sink.reportSourceProblem?.({ file: `ConfigMap ${namespace}/${first[0]}`, problem: `invalid config, not loaded (the previous config keeps serving): ${first[1]}${more}` });
  };
  const settle = (name: string, problem: string | undefined) => {
    if (problem === undefined ? !refused.delete(name) : refused.get(name) === problem) return;
    if (problem !== undefined) refused.set(name, problem);
    report();
  };

  const deliver = (configMap: V1ConfigMap) => {
    const name = configMap.metadata?.name ?? '';
    let parsed: ParsedConfig | undefined;
    try {
      parsed = parseConfigMap(configMap);
    } catch (err) {
      const problems = err instanceof ConfigMapError ? err.problems : [];
      logger.warn({ configMap: `${namespace}/${name}`, err: (err as Error).message, problems }, 'skipping malformed config; the last good one stays in force');
      settle(name, (err as Error).message);
      return;
    }
    settle(name, undefined);
    if (!parsed) return;
    try {
      if (parsed.kind === 'environment') {
        sink.setEnvironment(parsed.config);
      } else {
        sink.upsertDataset(parsed.config);
        served.set(name, parsed.config);
      }
      logger.info({ configMap: `${namespace}/${name}`, kind: parsed.kind, id: parsed.config.id }, 'config loaded');
    } catch (err) {
      logger.error({ configMap: `${namespace}/${name}`, err }, 'the config sink rejected a config');
    }
  };

  const remove = (configMap: V1ConfigMap) => {
    const name = configMap.metadata?.name ?? '';
    settle(name, undefined);
    const config = served.get(name);
    if (!config) return;
    served.delete(name);
    try {
      sink.removeDataset(config.id);
      logger.info({ configMap: `${namespace}/${name}`, id: config.id }, 'dataset removed');
      if (configMap.metadata?.annotations?.[PURGE_ANNOTATION] === 'true' && sink.purgeDataset) {
        Promise.resolve(sink.purgeDataset(config)).catch((err: unknown) => logger.error({ err, id: config.id }, 'purging the dataset\'s data failed'));
      }
    } catch (err) {
      logger.error({ configMap: `${namespace}/${name}`, err }, 'the config sink failed to remove a dataset');
    }
  };

  return { deliver, remove };
}

export async function startKubeConfigSource(options: KubeConfigSourceOptions, sink: PurgingConfigSink): Promise<{ stop(): Promise<void> }> {
  const { namespace, environment } = options;
  const logger = options.logger ?? pino({ name: 'kube-config-source' });
  const kubeConfig = options.kubeConfig ?? defaultKubeConfig();
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const labelSelector = configMapSelector(environment);
  // What makeInformer builds, kept as a ListWatch to see whether a list succeeded.
  const informer = new ListWatch<V1ConfigMap>(
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
    new Watch(kubeConfig),
    () => core.listNamespacedConfigMap({ namespace, labelSelector }),
    false,
    labelSelector,
  );
  const { deliver, remove } = configMapHandlers(namespace, sink, logger);

  informer.on('add', deliver);
  informer.on('update', deliver);
  informer.on('delete', remove);

  let stopped = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let lastError: unknown;
  const baseMs = options.retryBaseMs ?? 250;
  const maxMs = options.retryMaxMs ?? 10_000;
  const delay = () => Math.min(maxMs, baseMs * 2 ** Math.min(failures++, 20));

  // ListWatch stops on an error; start it again after a pause (it resumes from its resourceVersion).
  informer.on('error', (err: unknown) => {
    lastError = err;
    if (stopped || retryTimer) return;
    const wait = delay();
    logger.warn({ err: err instanceof Error ? err.message : String(err), retryInMs: wait }, 'ConfigMap watch failed; retrying');
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (!stopped) void informer.start();
    }, wait);
  });
  informer.on('connect', () => {
    if (lastError === undefined) failures = 0;
  });

  const attempts = options.initialListAttempts ?? 8;
  for (let attempt = 1; ; attempt++) {
    lastError = undefined;
    await informer.start();
    // A successful list leaves a resourceVersion behind.
    if (informer.latestResourceVersion() && lastError === undefined) break;
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = undefined;
    if (attempt >= attempts) {
      stopped = true;
      await informer.stop();
      throw new Error(
        `could not list ConfigMaps ${labelSelector} in namespace ${namespace}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay()));
  }
  failures = 0;
  logger.info({ namespace, environment, configMaps: informer.list(namespace).length }, 'ConfigMap config source synced');

  return {
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      await informer.stop();
    },
  };
}

function defaultKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
