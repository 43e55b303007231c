/**
 * Helpers for the operator's end-to-end tests against the real control plane (e2e/peers/kube):
 * the operator and the data plane as local processes (the compiled build under dist/, as the
 * container image runs them), kubectl with JSON output, waiting for a
 * condition (polling, never sleeping a fixed time), metrics scraping, ServiceAccount kubeconfigs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import type { KubeCluster, RunOptions } from '../peers/kube/cluster.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHART = join(REPO_ROOT, 'charts', 'data-access-operator');

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let namespaceCounter = 0;
export function uniqueNamespace(prefix: string): string {
  return `${prefix}-${process.pid % 10_000}-${++namespaceCounter}`;
}

/** kubectl that fails the test with kubectl's own message. */
export async function kubectl(cluster: KubeCluster, args: string[], options: RunOptions = {}): Promise<string> {
  const result = await cluster.kubectl(args, options);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${result.code}: ${result.stderr || result.stdout}`);
  return result.stdout;
}

export async function kubectlJson<T = any>(cluster: KubeCluster, args: string[]): Promise<T> {
  return JSON.parse(await kubectl(cluster, [...args, '-o', 'json'])) as T;
}

/** The object, or undefined when it does not exist. */
export async function getObject<T = any>(cluster: KubeCluster, namespace: string, resource: string, name: string): Promise<T | undefined> {
  const result = await cluster.kubectl(['-n', namespace, 'get', resource, name, '-o', 'json', '--ignore-not-found']);
  if (result.code !== 0) throw new Error(result.stderr);
  return result.stdout.trim() ? (JSON.parse(result.stdout) as T) : undefined;
}

export async function apply(cluster: KubeCluster, namespace: string, manifest: string): Promise<void> {
  await kubectl(cluster, ['-n', namespace, 'apply', '-f', '-'], { input: manifest });
}

export async function createNamespace(cluster: KubeCluster, prefix: string): Promise<string> {
  const namespace = uniqueNamespace(prefix);
  await kubectl(cluster, ['create', 'namespace', namespace]);
  return namespace;
}

/** Polls `probe` until it returns something truthy; fails after `timeoutMs` with the last result. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (err) {
      last = err instanceof Error ? err.message : err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export function condition(object: any, type: string): { status: string; reason: string; message: string } | undefined {
  return object?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

export async function waitForCondition(cluster: KubeCluster, namespace: string, resource: string, name: string, type: string, status: string, reason?: string): Promise<any> {
  return waitFor(`${resource} ${namespace}/${name} ${type}=${status}${reason ? ` (${reason})` : ''}`, async () => {
    const object = await getObject(cluster, namespace, resource, name);
    const c = condition(object, type);
    return c && c.status === status && (!reason || c.reason === reason) && object.status.observedGeneration === object.metadata.generation ? object : undefined;
  });
}

// --- processes -----------------------------------------------------------------------------------

export interface ManagedProcess {
  child: ChildProcess;
  output(): string;
  /** Sends a signal and waits for the exit; returns the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The newest source file that goes into the build (tests aside) changed before `beforeMs`, to catch a stale dist/. */
function newestSource(beforeMs: number): { path: string; mtimeMs: number } {
  let newest = { path: '', mtimeMs: 0 };
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
        const { mtimeMs } = statSync(path);
        if (mtimeMs > newest.mtimeMs && mtimeMs < beforeMs) newest = { path, mtimeMs };
      }
    }
  };
  for (const dir of ['model', 'dataplane/src', 'operator/src']) walk(join(REPO_ROOT, dir));
  return newest;
}

const checkedEntryPoints = new Set<string>();

/**
 * The compiled entry point under dist/ (`npm run build`; `npm test` builds it first). A missing or
 * stale build fails here rather than testing code other than the checkout's.
 */
export function compiledEntryPoint(script: string): string {
  const path = join(REPO_ROOT, 'dist', script);
  if (!existsSync(path)) throw new Error(`${path} is missing: run npm run build (the e2e runs the compiled JavaScript, as the container image does)`);
  // Checked once per test process, against the sources as they were when it started: an edit made
  // while the suite runs does not fail its later tests (the in-process tests have loaded theirs too).
  if (!checkedEntryPoints.has(path)) {
    const source = newestSource(performance.timeOrigin);
    if (source.mtimeMs > statSync(path).mtimeMs) throw new Error(`dist/ is older than ${source.path}: run npm run build`);
    checkedEntryPoints.add(path);
  }
  return path;
}

/** `env` adds variables; `unset` removes inherited ones. */
function startProcess(script: string, env: Record<string, string>, unset: string[] = []): ManagedProcess {
  const inherited = { ...process.env };
  for (const name of unset) delete inherited[name];
  const child = spawn(process.execPath, [compiledEntryPoint(script)], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const cleanup = () => child.kill('SIGKILL');
  process.once('exit', cleanup);
  return {
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      process.removeListener('exit', cleanup);
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

export interface OperatorProcess extends ManagedProcess {
  metricsPort: number;
  metrics(): Promise<Metrics>;
}

export async function startOperator(kubeconfigPath: string, env: Record<string, string> = {}): Promise<OperatorProcess> {
  const metricsPort = await freePort();
  const proc = startProcess('operator/src/main.js', {
    KUBECONFIG: kubeconfigPath,
    METRICS_PORT: String(metricsPort),
    METRICS_BIND_ADDRESS: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...env,
  });
  const operator: OperatorProcess = { ...proc, metricsPort, metrics: () => scrapeMetrics(metricsPort) };
  await waitFor(`operator /healthz on ${metricsPort}`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`operator exited: ${proc.output()}`);
    return (await httpGet(metricsPort, '/healthz')).status === 200;
  });
  return operator;
}

/** The data plane as its container runs it; inherited database settings are dropped (embedded PostgreSQL). */
export function startDataPlane(env: Record<string, string>): ManagedProcess {
  return startProcess('dataplane/src/main.js', env, ['DATABASE_URL', 'PGHOST', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGPORT']);
}

/** A fresh data directory the embedded PostgreSQL can use (as root it runs as the postgres user). */
export function dataPlaneDataDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `das-e2e-${prefix}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/**
 * The data plane as its Pod runs it: cluster mode (its config read from the API server) as the
 * Environment's own ServiceAccount, so the Role the operator made must suffice; on a free loopback
 * port. `env` adds to or overrides those settings (DATABASE_URL, DAS_SECRETS_DIR, a KUBECONFIG
 * through a proxy…). It is not waited for: see waitDataPlaneReady.
 */
export async function startClusterDataPlane(
  cluster: KubeCluster,
  namespace: string,
  options: { environment?: string; dataDirPrefix?: string; env?: Record<string, string> } = {},
): Promise<{ dataplane: ManagedProcess; port: number }> {
  const environment = options.environment ?? 'local';
  const port = await freePort();
  const dataplane = startDataPlane({
    KUBECONFIG: options.env?.KUBECONFIG ?? (await serviceAccountKubeconfig(cluster, namespace, `${environment}-dataplane`)),
    DAS_CONFIG_SOURCE: 'kubernetes',
    DAS_NAMESPACE: namespace,
    DAS_ENVIRONMENT: environment,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: options.env?.DATA_DIR ?? dataPlaneDataDir(options.dataDirPrefix ?? 'dataplane'),
    ...options.env,
  });
  return { dataplane, port };
}

/** startClusterDataPlane, then waitDataPlaneReady. */
export async function startReadyClusterDataPlane(...args: Parameters<typeof startClusterDataPlane>): Promise<{ dataplane: ManagedProcess; port: number }> {
  const started = await startClusterDataPlane(...args);
  await waitDataPlaneReady(started.dataplane, started.port);
  return started;
}

/** Waits for the data plane's /readyz to answer 200; fails with its output's tail when it exits or never does. */
export async function waitDataPlaneReady(dataplane: ManagedProcess, port: number): Promise<void> {
  await waitFor('the data plane to be ready', async () => {
    if (dataplane.child.exitCode !== null) throw new Error(`data plane exited: ${dataplane.output()}`);
    return (await httpGet(port, '/readyz').catch(() => ({ status: 0 }))).status === 200;
  }, 90_000).catch((err: Error) => {
    throw new Error(`${err.message}\ndata plane output (tail):\n${dataplane.output().slice(-4000)}`);
  });
}

// --- HTTP and metrics ---------------------------------------------------------------------------

export function httpGet(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return httpRequest(port, 'GET', path, headers);
}

export function httpRequest(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface JsonAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: any;
  text: string;
}

/** One request to 127.0.0.1, headers included (Retry-After), body sent and parsed as JSON; `localAddress` picks the source address (e.g. 127.0.0.2). */
export function callJson(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown, localAddress?: string): Promise<JsonAnswer> {
  const all = body !== undefined ? { ...headers, 'content-type': 'application/json' } : headers;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: all, localAddress }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json, text });
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

export class Metrics {
  constructor(private readonly samples: Map<string, number>) {}

  /** Sum of the samples of `name` whose labels include `labels`. */
  sum(name: string, labels: Record<string, string> = {}, exclude: Record<string, string[]> = {}): number {
    let total = 0;
    for (const [series, value] of this.samples) {
      const match = /^([^{]+)(?:\{(.*)\})?$/.exec(series);
      if (!match || match[1] !== name) continue;
      const seriesLabels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      if (Object.entries(labels).some(([k, v]) => seriesLabels[k] !== v)) continue;
      if (Object.entries(exclude).some(([k, values]) => values.includes(seriesLabels[k]))) continue;
      total += value;
    }
    return total;
  }

  /** API requests that change something: everything but GET, the leader Lease aside. */
  writes(): number {
    return ['post', 'put', 'patch', 'delete'].reduce(
      (sum, verb) => sum + this.sum('data_access_operator_api_requests_total', { verb }, { resource: ['leases'] }),
      0,
    );
  }
}

export async function scrapeMetrics(port: number): Promise<Metrics> {
  const { status, body } = await httpGet(port, '/metrics');
  if (status !== 200) throw new Error(`/metrics answered ${status}`);
  const samples = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return new Metrics(samples);
}

/**
 * Triggers a full resync (SIGHUP) and waits until every resource has been reconciled once more.
 * Returns the API write requests the resync caused.
 */
export async function resyncAndCountWrites(operator: OperatorProcess): Promise<{ writes: number; reconciles: number }> {
  const before = await operator.metrics();
  const completed = before.sum('data_access_operator_resyncs_completed_total');
  operator.child.kill('SIGHUP');
  const after = await waitFor('the resync to complete', async () => {
    const m = await operator.metrics();
    return m.sum('data_access_operator_resyncs_completed_total') > completed ? m : undefined;
  });
  return {
    writes: after.writes() - before.writes(),
    reconciles: after.sum('data_access_operator_reconciles_total') - before.sum('data_access_operator_reconciles_total'),
  };
}

/** The kinds the operator writes (Events and Leases aside), as the API server's metrics name them. */
const OPERATOR_RESOURCES = new Set(['environments', 'datasets', 'configmaps', 'deployments', 'services', 'networkpolicies', 'serviceaccounts', 'roles', 'rolebindings']);
const WRITE_VERBS = new Set(['POST', 'CREATE', 'PUT', 'UPDATE', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/**
 * Write requests the API server itself has counted (`apiserver_request_total`) on the kinds the
 * operator manages, from every client: a check that does not rely on the operator's own metrics.
 */
export async function apiServerWrites(cluster: KubeCluster): Promise<number> {
  let total = 0;
  for (const line of (await kubectl(cluster, ['get', '--raw', '/metrics'])).split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (WRITE_VERBS.has(labels.verb) && OPERATOR_RESOURCES.has(labels.resource)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Once nothing (controllers included) has written those kinds for a second: the count then. */
export async function quiescentApiServerWrites(cluster: KubeCluster): Promise<number> {
  let previous = await apiServerWrites(cluster);
  return waitFor('the cluster to stop writing', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await apiServerWrites(cluster);
    const settled = now === previous;
    previous = now;
    return settled ? { now } : undefined;
  }).then((r) => r.now);
}

// --- credentials ---------------------------------------------------------------------------------

/**
 * A kubeconfig that authenticates as a ServiceAccount (its token Secret, made by the token
 * controller), so that a local process runs with exactly the RBAC the chart or the operator grants.
 */
export async function serviceAccountKubeconfig(cluster: KubeCluster, namespace: string, serviceAccount: string): Promise<string> {
  const secretName = await waitFor(`a token Secret for ServiceAccount ${namespace}/${serviceAccount}`, async () => {
    const sa = await getObject(cluster, namespace, 'serviceaccount', serviceAccount);
    return sa?.secrets?.[0]?.name as string | undefined;
  });
  const secret = await waitFor(`token in Secret ${secretName}`, async () => {
    const s = await getObject(cluster, namespace, 'secret', secretName);
    return s?.data?.token ? s : undefined;
  });
  const token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  const config = parse(readFileSync(cluster.kubeconfigPath, 'utf8'));
  config.users = [{ name: serviceAccount, user: { token } }];
  config.contexts = [{ name: serviceAccount, context: { cluster: config.clusters[0].name, user: serviceAccount, namespace } }];
  config['current-context'] = serviceAccount;
  const path = join(mkdtempSync(join(tmpdir(), 'sa-kubeconfig-')), 'kubeconfig');
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

/** The same kubeconfig pointing at another server address (e.g. a proxy in front of the API server). */
export function kubeconfigWithServer(cluster: KubeCluster, server: string): string {
  const config = parse(readFileSync(cluster.kubeconfigPath, 'utf8'));
  config.clusters[0].cluster.server = server;
  const path = join(mkdtempSync(join(tmpdir(), 'proxy-kubeconfig-')), 'kubeconfig');
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

/**
 * A control plane with the chart installed (CRDs, RBAC) and the operator running as the chart's
 * ServiceAccount, leading through the chart's Lease, with periodic resyncs off (tests trigger them).
 */
export async function startChartOperator(cluster: KubeCluster, release: string, podName: string): Promise<OperatorProcess> {
  const releaseNamespace = `${release}-system`;
  const fullname = `${release}-data-access-operator`;
  const install = await cluster.helm(['install', release, CHART, '--namespace', releaseNamespace, '--create-namespace']);
  if (install.code !== 0) throw new Error(`helm install exited ${install.code}: ${install.stderr}`);
  const kubeconfig = await serviceAccountKubeconfig(cluster, releaseNamespace, fullname);
  return startOperator(kubeconfig, { LEASE_NAMESPACE: releaseNamespace, LEASE_NAME: fullname, RESYNC_PERIOD_SECONDS: '0', POD_NAME: podName });
}
