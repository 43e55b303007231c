/**
 * Config source for `npm start` and other runs off the cluster: the Environment and Dataset
 * manifests in a file or a directory, loaded at start and hot-reloaded when they change.
 *
 * - At start an invalid manifest throws ManifestError (main.ts exits 1 naming the file and the
 *   JSON path), and a missing Environment throws.
 * - Afterwards every change re-reads the whole file or directory: changed datasets are upserted,
 *   datasets whose manifests are gone are removed (their stored data is kept: removing a file is not
 *   a `deletionPolicy: Delete`), and the environment is updated. An invalid edit is logged (file,
 *   JSON path, problem) and the previous config keeps serving until the files are valid again.
 * - Changes are noticed by fs.watch (debounced, since editors write a file in several steps) and,
 *   as a fallback where fs.watch misses events (network mounts, a replaced directory), by a slow
 *   poll of the files' names, sizes and modification times.
 * - `adminDirectory` (DATA_DIR/datasets): the Dataset manifests the administrative API writes
 *   (admin/), read and watched like the others, created if missing.
 */
import { mkdirSync, watch, readdirSync, statSync, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import { loadManifests, ManifestError, type ManifestSet } from '../../../model/manifests.js';
import { renderDatasetConfig, renderEnvironmentConfig } from '../../../model/render.js';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { ConfigSink } from './sink.js';

export interface FileConfigSourceOptions {
  /** A manifest file, or a directory whose .yaml/.yml files are read. */
  path: string;
  /** The Environment served; default the first one found at start. */
  environment?: string;
  logger?: Logger;
  /** Quiet time after a change before re-reading (default 200 ms). */
  debounceMs?: number;
  /** Interval of the fallback poll (default 2 s); 0 turns it off. */
  pollMs?: number;
  /** Use fs.watch (default true); off, only the poll notices changes. */
  watch?: boolean;
  /** A directory of Dataset manifests written by the administrative API, read and watched too. */
  adminDirectory?: string;
}

interface Desired {
  environment: EnvironmentConfig;
  datasets: Map<string, DatasetConfig>;
}

/** What a manifest set asks this data plane to serve: one Environment and its Datasets. */
export function desiredConfig(set: ManifestSet, environment: string, path: string): Desired {
  const env = set.environments.find((e) => e.metadata.name === environment);
  if (!env) throw new Error(`no Environment "${environment}" in ${path}`);
  const datasets = new Map<string, DatasetConfig>();
  // In name order: of two datasets whose storage overlaps, the store keeps the one it gets first (config/store.ts).
  const ours = set.datasets.filter((d) => d.spec.environment === environment).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const dataset of ours) datasets.set(dataset.metadata.name, renderDatasetConfig(dataset));
  return { environment: renderEnvironmentConfig(env), datasets };
}

/** Names, sizes and modification times of the manifest files: what the poll compares. */
function fingerprint(path: string): string {
  try {
    const stat = statSync(path);
    if (!stat.isDirectory()) return `${stat.size}:${stat.mtimeMs}`;
    return readdirSync(path)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .map((f) => {
        try {
          const s = statSync(join(path, f));
          return `${f}:${s.size}:${s.mtimeMs}`;
        } catch {
          return `${f}:gone`;
        }
      })
      .join('|');
  } catch {
    return 'missing';
  }
}

const withoutGeneration = (config: DatasetConfig) => JSON.stringify({ ...config, generation: 0 });

export async function startFileConfigSource(options: FileConfigSourceOptions, sink: ConfigSink): Promise<{ stop(): Promise<void> }> {
  const { path, adminDirectory } = options;
  const logger = options.logger ?? pino({ name: 'file-config-source' });
  const isDirectory = statSync(path).isDirectory();
  if (adminDirectory) mkdirSync(adminDirectory, { recursive: true });
  /** The manifests, those the administrative API wrote included. */
  const load = (): ManifestSet => {
    const set = loadManifests(path);
    if (!adminDirectory) return set;
    const admin = loadManifests(adminDirectory);
    return { environments: [...set.environments, ...admin.environments], datasets: [...set.datasets, ...admin.datasets] };
  };
  const printAll = () => `${fingerprint(path)}#${adminDirectory ? fingerprint(adminDirectory) : ''}`;

  // Start: problems throw, as before hot reload existed.
  const first = load();
  const environment = options.environment ?? first.environments[0]?.metadata.name;
  if (!environment) throw new Error(`no Environment in ${path}`);
  let lastPrint = printAll();

  /** What was handed to the sink: the environment, and per dataset its config (with our generation). */
  let servedEnvironment = '';
  const served = new Map<string, { config: DatasetConfig; spec: string }>();

  const apply = (next: Desired): string[] => {
    const changes: string[] = [];
    const env = JSON.stringify(next.environment);
    if (env !== servedEnvironment) {
      sink.setEnvironment(next.environment);
      servedEnvironment = env;
      changes.push(`environment ${environment}`);
    }
    for (const [id, config] of next.datasets) {
      const spec = withoutGeneration(config);
      const previous = served.get(id);
      if (previous?.spec === spec) continue;
      // Files have no API server to count generations: each change counts one up, so a refused
      // change is reported as "generation N refused" against the one still serving.
      const generation = previous ? Math.max(config.generation, previous.config.generation + 1) : config.generation;
      const versioned = { ...config, generation };
      sink.upsertDataset(versioned);
      served.set(id, { config: versioned, spec });
      changes.push(`${previous ? 'updated' : 'added'} dataset ${id} (generation ${generation})`);
    }
    for (const id of [...served.keys()]) {
      if (next.datasets.has(id)) continue;
      sink.removeDataset(id);
      served.delete(id);
      changes.push(`removed dataset ${id} (stored data kept)`);
    }
    return changes;
  };
  apply(desiredConfig(first, environment, path));

  /** Re-reads everything; an invalid state is logged and changes nothing. */
  const reload = () => {
    const print = printAll();
    lastPrint = print;
    let next: Desired;
    try {
      next = desiredConfig(load(), environment, path);
    } catch (err) {
      if (err instanceof ManifestError) {
        logger.warn({ file: err.file, problems: err.problems }, `invalid manifest, not loaded; the previous config keeps serving:\n${err.message}`);
      } else {
        logger.warn({ path, err: (err as Error).message }, 'manifests could not be read; the previous config keeps serving');
      }
      return;
    }
    try {
      const changes = apply(next);
      if (changes.length) logger.info({ path, changes }, 'manifests reloaded');
    } catch (err) {
      logger.error({ path, err: (err as Error).message }, 'the config sink rejected a reloaded config');
    }
  };

  let stopped = false;
  let debounce: NodeJS.Timeout | undefined;
  const changed = () => {
    if (stopped) return;
    if (debounce) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      if (!stopped) reload();
    }, options.debounceMs ?? 200);
  };

  // A single file is watched through its directory: editors replace files by renaming over them,
  // which ends a watch on the file itself.
  let watcher: FSWatcher | undefined;
  if (options.watch ?? true) {
    const target = isDirectory ? path : dirname(path);
    const name = basename(path);
    try {
      watcher = watch(target, { persistent: false }, (_event, file) => {
        if (isDirectory ? file === null || /\.ya?ml$/.test(String(file)) : file === null || String(file) === name) changed();
      });
      watcher.on('error', (err) => {
        logger.warn({ path, err: err.message }, 'watching the manifests failed; the poll still notices changes');
        watcher?.close();
        watcher = undefined;
      });
    } catch (err) {
      logger.warn({ path, err: (err as Error).message }, 'the manifests cannot be watched; the poll notices changes');
    }
  }
  let adminWatcher: FSWatcher | undefined;
  if (adminDirectory && (options.watch ?? true)) {
    try {
      adminWatcher = watch(adminDirectory, { persistent: false }, (_event, file) => (file === null || /\.ya?ml$/.test(String(file))) && changed());
      adminWatcher.on('error', () => {
        adminWatcher?.close();
        adminWatcher = undefined;
      });
    } catch (err) {
      logger.warn({ path: adminDirectory, err: (err as Error).message }, 'the admin manifests cannot be watched; the poll notices changes');
    }
  }
  const pollMs = options.pollMs ?? 2000;
  const poll = pollMs > 0 ? setInterval(() => printAll() !== lastPrint && changed(), pollMs) : undefined;
  poll?.unref();
  logger.info({ path, environment, datasets: [...served.keys()], watching: Boolean(watcher), pollMs }, 'manifest config source loaded; edits are picked up');

  return {
    async stop() {
      stopped = true;
      if (debounce) clearTimeout(debounce);
      if (poll) clearInterval(poll);
      watcher?.close();
      adminWatcher?.close();
    },
  };
}
