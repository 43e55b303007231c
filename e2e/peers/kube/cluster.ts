/**
 * Test peer: a real Kubernetes control plane (etcd + kube-apiserver, optionally
 * kube-controller-manager) as local processes on 127.0.0.1. No kubelet, no
 * container runtime: Pods are accepted and stay Pending.
 *
 * Binaries come from $KUBEBUILDER_ASSETS (if it holds kube-apiserver and etcd)
 * or from the cache filled by scripts/kube-peer/build.sh and tools.sh
 * (${KUBE_PEER_CACHE:-$HOME/.cache/data-access-kube}/bin). See README.md.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes, generateKeyPairSync } from "node:crypto";
import { once } from "node:events";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

export interface RunResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface RunOptions {
  /** Written to the tool's stdin (e.g. a manifest for `kubectl apply -f -`). */
  input?: string;
  /** Kill the tool after this many ms (default 120000). */
  timeoutMs?: number;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Working directory (default: the cluster's work dir). */
  cwd?: string;
  /** Reject when the exit code is not 0 (default false). */
  check?: boolean;
}

export interface KubeCluster {
  /** Kubeconfig for an admin user (group system:masters), token auth. */
  kubeconfigPath: string;
  /** https://127.0.0.1:PORT */
  server: string;
  /** Bearer token of the admin user. */
  token: string;
  /** PEM bundle that verifies the apiserver's self-signed serving certificate. */
  caPath: string;
  /** The directory the binaries came from (kubectl/helm may come from the cache dir). */
  binDir: string;
  /** Work dir: etcd data, certificates, keys, kubeconfig and the peers' log files. */
  workDir: string;
  /** e.g. "v1.20.2" */
  serverVersion: string;
  /** Whether kube-controller-manager runs (GC, Deployments -> ReplicaSets -> Pods, SA tokens). */
  controllerManager: boolean;
  /** Environment for tools that should talk to this cluster (KUBECONFIG, helm dirs...). */
  env: Record<string, string>;
  kubectl(args: string[], opts?: RunOptions): Promise<RunResult>;
  helm(args: string[], opts?: RunOptions): Promise<RunResult>;
  /** Stops every peer process (controller-manager, apiserver, etcd). Idempotent. */
  stop(): Promise<void>;
}

export interface StartKubeClusterOptions {
  /** Where to put data, certs and logs. Default: a fresh temp dir, removed on stop(). */
  workDir?: string;
  /** Also run kube-controller-manager (default false). */
  controllerManager?: boolean;
  /** Max time to wait for the control plane to be ready (default 120000 ms). */
  startTimeoutMs?: number;
  /** Extra kube-apiserver flags (e.g. "--feature-gates=..."). */
  apiserverArgs?: string[];
  /** Extra kube-controller-manager flags. */
  controllerManagerArgs?: string[];
}

export const KUBE_PEER_CACHE =
  process.env.KUBE_PEER_CACHE ?? path.join(os.homedir(), ".cache", "data-access-kube");
export const KUBE_PEER_CACHE_BIN = path.join(KUBE_PEER_CACHE, "bin");

const INSTALL_HINT =
  "run `bash scripts/kube-peer/build.sh && bash scripts/kube-peer/tools.sh` " +
  `(fills ${KUBE_PEER_CACHE_BIN}), or set KUBEBUILDER_ASSETS to a directory with kube-apiserver and etcd`;

// ---------------------------------------------------------------------------
// Child process bookkeeping: nothing may outlive the test process.

interface Peer {
  name: string;
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
  exitCode: number | null | undefined; // undefined while running
}

const livePeers = new Set<Peer>();
let hooksInstalled = false;

function killAllNow(): void {
  for (const p of livePeers) {
    try {
      if (p.child.pid) process.kill(-p.child.pid, "SIGKILL");
    } catch {
      try {
        p.child.kill("SIGKILL");
      } catch {
        /* already gone */
      }
    }
  }
  livePeers.clear();
}

/** Temp work dirs made by startKubeCluster and not yet removed by stop(). */
const ownedWorkDirs = new Set<string>();

function onExit(): void {
  killAllNow();
  if (process.env.KUBE_PEER_KEEP_WORKDIR) return;
  for (const d of ownedWorkDirs) {
    try {
      fs.rmSync(d, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      /* best effort */
    }
  }
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on("exit", onExit);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const handler = (): void => {
      onExit();
      process.removeListener(sig, handler);
      // Nobody else handles it: behave like the default (die by the signal).
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

/**
 * A watchdog that SIGKILLs the peer's process group if this Node process dies
 * without running its exit hooks (e.g. SIGKILL). It ends by itself when the
 * peer ends. The start time from /proc guards against pid reuse.
 */
function spawnWatchdog(childPid: number): void {
  // stat PID FIELD: a field of /proc/PID/stat counted after the "(comm)" part
  // (1 = state, 20 = start time); fails when PID is gone.
  const script = [
    'stat() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; echo "$s" | cut -d" " -f"$2"; }',
    'st=$(stat "$2" 20) || exit 0',
    // while the parent lives (a zombie counts as dead) and the child is the same process
    'while p=$(stat "$1" 1) && [ "$p" != Z ]; do',
    '  [ "$(stat "$2" 20)" = "$st" ] || exit 0',
    "  sleep 1",
    "done",
    '[ "$(stat "$2" 20)" = "$st" ] && kill -9 "-$2" 2>/dev/null',
    "exit 0",
  ].join("\n");
  const w = spawn("/bin/sh", ["-c", script, "kube-peer-watchdog", String(process.pid), String(childPid)], {
    stdio: "ignore",
    detached: true,
  });
  w.on("error", () => {});
  w.unref();
}

function startPeer(name: string, bin: string, args: string[], logDir: string, env?: NodeJS.ProcessEnv): Peer {
  installExitHooks();
  const logPath = path.join(logDir, `${name}.log`);
  const fd = fs.openSync(logPath, "a");
  fs.writeSync(fd, `# ${new Date().toISOString()} ${bin} ${args.join(" ")}\n`);
  let child: ChildProcess;
  try {
    child = spawn(bin, args, {
      stdio: ["ignore", fd, fd],
      // Own process group: stop() and the watchdog kill the whole group.
      detached: true,
      env: { ...process.env, ...env },
    });
  } finally {
    fs.closeSync(fd);
  }
  const peer: Peer = {
    name,
    child,
    logPath,
    exitCode: undefined,
    exited: new Promise<number | null>((resolve) => {
      child.once("exit", (code, signal) => {
        peer.exitCode = code ?? (signal ? -1 : null);
        livePeers.delete(peer);
        resolve(peer.exitCode);
      });
      child.once("error", (err) => {
        fs.appendFileSync(logPath, `# spawn error: ${String(err)}\n`);
        peer.exitCode = -1;
        livePeers.delete(peer);
        resolve(-1);
      });
    }),
  };
  livePeers.add(peer);
  // Do not keep the event loop alive for the peers: if a test forgets stop(),
  // the process still exits and the 'exit' hook kills them.
  child.unref();
  if (child.pid) spawnWatchdog(child.pid);
  return peer;
}

async function stopPeer(peer: Peer, graceMs = 10_000): Promise<void> {
  if (peer.exitCode !== undefined) return;
  // While stopping, the child must keep the event loop alive (it is unref'd while
  // running), or a caller awaiting stop() with nothing else pending would see Node
  // exit before the peer is gone.
  peer.child.ref();
  const pid = peer.child.pid;
  const signal = (sig: NodeJS.Signals): void => {
    try {
      if (pid) process.kill(-pid, sig);
      else peer.child.kill(sig);
    } catch {
      /* gone */
    }
  };
  signal("SIGTERM");
  let timeout: NodeJS.Timeout | undefined;
  const timer = new Promise<"timeout">((r) => (timeout = setTimeout(() => r("timeout"), graceMs)));
  const first = await Promise.race([peer.exited, timer]);
  clearTimeout(timeout);
  if (first === "timeout") {
    signal("SIGKILL");
    await peer.exited;
  }
}

async function tail(file: string, lines = 40): Promise<string> {
  try {
    const text = await fsp.readFile(file, "utf8");
    return text.split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

// ---------------------------------------------------------------------------
// Helpers

async function freePort(): Promise<number> {
  const srv = net.createServer();
  srv.unref();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const addr = srv.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  await new Promise<void>((r) => srv.close(() => r()));
  if (!port) throw new Error("could not pick a free port");
  return port;
}

async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

interface Binaries {
  dir: string;
  etcd: string;
  apiserver: string;
  controllerManager?: string;
  kubectl?: string;
  helm?: string;
}

/** Locate the peer binaries; throws with install instructions if missing. */
export function findKubeBinaries(): Binaries {
  const assets = process.env.KUBEBUILDER_ASSETS;
  const dirs: string[] = [];
  if (assets && isExecutable(path.join(assets, "kube-apiserver")) && isExecutable(path.join(assets, "etcd"))) {
    dirs.push(assets);
  }
  dirs.push(KUBE_PEER_CACHE_BIN);
  const find = (name: string, order: string[] = dirs): string | undefined =>
    order.map((d) => path.join(d, name)).find(isExecutable);
  const dir = dirs[0];
  const apiserver = find("kube-apiserver", [dir]);
  const etcd = find("etcd", [dir]);
  if (!apiserver || !etcd) {
    throw new Error(
      `kube test peer: kube-apiserver/etcd not found in ${dir}` +
        (assets ? ` (KUBEBUILDER_ASSETS=${assets} lacks them too)` : "") +
        `; ${INSTALL_HINT}`,
    );
  }
  // kubectl/helm: prefer the cache (kubectl v1.35 / helm v4 from tools.sh).
  const toolDirs = [KUBE_PEER_CACHE_BIN, ...(assets ? [assets] : [])];
  return {
    dir,
    etcd,
    apiserver,
    controllerManager: find("kube-controller-manager"),
    kubectl: find("kubectl", toolDirs),
    helm: find("helm", toolDirs),
  };
}

function run(bin: string, args: string[], opts: RunOptions & { baseEnv: Record<string, string>; defaultCwd: string }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      bin,
      args,
      {
        cwd: opts.cwd ?? opts.defaultCwd,
        env: { ...process.env, ...opts.baseEnv, ...opts.env },
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: "utf8",
      },
      (err, stdout, stderr) => {
        let code = 0;
        if (err) {
          const e = err as NodeJS.ErrnoException & { code?: unknown; killed?: boolean };
          if (typeof e.code === "number") code = e.code;
          else if (e.killed) code = 124;
          else if (typeof e.code === "string") return reject(err); // ENOENT etc.
          else code = 1;
        }
        const res = { stdout, stderr, code };
        if (opts.check && code !== 0) {
          return reject(
            new Error(`${path.basename(bin)} ${args.join(" ")} exited ${code}\n${stderr || stdout}`),
          );
        }
        resolve(res);
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

function httpsGet(url: string, token: string, ca?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      {
        headers: { Authorization: `Bearer ${token}` },
        ...(ca ? { ca } : { rejectUnauthorized: false }),
        timeout: 5000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(
  what: string,
  deadline: number,
  peers: Peer[],
  probe: () => Promise<boolean>,
): Promise<void> {
  let lastErr = "";
  while (Date.now() < deadline) {
    for (const p of peers) {
      if (p.exitCode !== undefined) {
        throw new Error(
          `kube test peer: ${p.name} exited (code ${p.exitCode}) while waiting for ${what}; ` +
            `log ${p.logPath}:\n${await tail(p.logPath)}`,
        );
      }
    }
    try {
      if (await probe()) return;
    } catch (e) {
      lastErr = String(e);
    }
    await sleep(250);
  }
  throw new Error(`kube test peer: timed out waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ""}`);
}

function majorMinor(v: string): [number, number] {
  const m = /v?(\d+)\.(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}

async function binaryVersion(bin: string): Promise<string> {
  const r = await run(bin, ["--version"], { baseEnv: {}, defaultCwd: os.tmpdir(), timeoutMs: 30_000 });
  return (r.stdout + r.stderr).trim().replace(/^Kubernetes\s+/, "");
}

// ---------------------------------------------------------------------------

export async function startKubeCluster(opts: StartKubeClusterOptions = {}): Promise<KubeCluster> {
  const bins = findKubeBinaries();
  const wantKcm = opts.controllerManager ?? false;
  if (wantKcm && !bins.controllerManager) {
    throw new Error(`kube test peer: kube-controller-manager not found; ${INSTALL_HINT}`);
  }
  const ownWorkDir = !opts.workDir;
  const workDir = opts.workDir
    ? path.resolve(opts.workDir)
    : await fsp.mkdtemp(path.join(os.tmpdir(), "kube-peer-"));
  await fsp.mkdir(workDir, { recursive: true });
  installExitHooks();
  if (ownWorkDir) ownedWorkDirs.add(workDir);
  const deadline = Date.now() + (opts.startTimeoutMs ?? 120_000);
  const started: Peer[] = [];

  const stopAll = async (): Promise<void> => {
    for (const p of [...started].reverse()) await stopPeer(p);
  };

  try {
    // --- credentials -------------------------------------------------------
    const pki = path.join(workDir, "pki");
    const certDir = path.join(workDir, "apiserver-certs");
    await fsp.mkdir(pki, { recursive: true, mode: 0o700 });
    await fsp.mkdir(certDir, { recursive: true, mode: 0o700 });
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const saKey = path.join(pki, "sa.key");
    const saPub = path.join(pki, "sa.pub");
    await fsp.writeFile(saKey, privateKey.export({ type: "pkcs1", format: "pem" }), { mode: 0o600 });
    await fsp.writeFile(saPub, publicKey.export({ type: "spki", format: "pem" }));
    const token = randomBytes(24).toString("hex");
    const tokenFile = path.join(pki, "tokens.csv");
    await fsp.writeFile(tokenFile, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });

    const [etcdClient, etcdPeer, apiPort, kcmPort] = await freePorts(4);

    // --- etcd ----------------------------------------------------------------
    const etcdData = path.join(workDir, "etcd-data");
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const etcdPeerUrl = `http://127.0.0.1:${etcdPeer}`;
    const etcd = startPeer(
      "etcd",
      bins.etcd,
      [
        "--name=default",
        `--data-dir=${etcdData}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${etcdPeerUrl}`,
        `--initial-advertise-peer-urls=${etcdPeerUrl}`,
        `--initial-cluster=default=${etcdPeerUrl}`,
        "--initial-cluster-state=new",
      ],
      workDir,
      process.arch === "arm64" ? { ETCD_UNSUPPORTED_ARCH: "arm64" } : undefined,
    );
    started.push(etcd);
    await waitFor("etcd", deadline, [etcd], async () => {
      const body = await new Promise<string>((resolve, reject) => {
        const req = http.get(`${etcdUrl}/health`, { timeout: 2000 }, (res) => {
          let b = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (b += c));
          res.on("end", () => resolve(b));
        });
        req.on("timeout", () => req.destroy(new Error("timeout")));
        req.on("error", reject);
      });
      return body.includes('"health":"true"') || body.includes('"health": "true"');
    });

    // --- kube-apiserver ---------------------------------------------------------
    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = startPeer(
      "kube-apiserver",
      bins.apiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        // The "kubernetes" Service's Endpoints may not hold a loopback address: without
        // this the apiserver logs "may not be in the loopback range" every 10 s.
        "--endpoint-reconciler-type=none",
        `--secure-port=${apiPort}`,
        `--cert-dir=${certDir}`,
        `--token-auth-file=${tokenFile}`,
        "--authorization-mode=RBAC",
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        ...(opts.apiserverArgs ?? []),
      ],
      workDir,
    );
    started.push(apiserver);
    await waitFor("kube-apiserver /readyz", deadline, [etcd, apiserver], async () => {
      const r = await httpsGet(`${server}/readyz`, token);
      return r.status === 200;
    });

    // The self-signed serving cert (written by --cert-dir) carries its CA.
    const selfSigned = (await fsp.readdir(certDir)).find((f) => f.endsWith(".crt"));
    if (!selfSigned) throw new Error(`kube test peer: no certificate in ${certDir}`);
    const caPath = path.join(pki, "ca.crt");
    await fsp.copyFile(path.join(certDir, selfSigned), caPath);
    const caPem = await fsp.readFile(caPath, "utf8");
    let caVerifies = false;
    try {
      caVerifies = (await httpsGet(`${server}/readyz`, token, caPem)).status === 200;
    } catch {
      caVerifies = false;
    }

    // --- kubeconfig -------------------------------------------------------------
    const kubeconfigPath = path.join(workDir, "kubeconfig");
    const clusterTls = caVerifies
      ? `    certificate-authority-data: ${Buffer.from(caPem).toString("base64")}\n`
      : "    insecure-skip-tls-verify: true\n";
    await fsp.writeFile(
      kubeconfigPath,
      "apiVersion: v1\n" +
        "kind: Config\n" +
        "clusters:\n" +
        "- name: kube-peer\n" +
        "  cluster:\n" +
        `    server: ${server}\n` +
        clusterTls +
        "users:\n" +
        "- name: admin\n" +
        "  user:\n" +
        `    token: ${token}\n` +
        "contexts:\n" +
        "- name: kube-peer\n" +
        "  context:\n" +
        "    cluster: kube-peer\n" +
        "    user: admin\n" +
        "    namespace: default\n" +
        "current-context: kube-peer\n",
      { mode: 0o600 },
    );

    const serverVersion = JSON.parse((await httpsGet(`${server}/version`, token)).body).gitVersion as string;

    // --- kube-controller-manager -----------------------------------------------------
    if (wantKcm && bins.controllerManager) {
      const kcmVersion = await binaryVersion(bins.controllerManager);
      const [maj, min] = majorMinor(kcmVersion);
      const kcm = startPeer(
        "kube-controller-manager",
        bins.controllerManager,
        [
          `--kubeconfig=${kubeconfigPath}`,
          `--root-ca-file=${caPath}`,
          `--service-account-private-key-file=${saKey}`,
          "--controllers=*",
          "--leader-elect=false",
          "--use-service-account-credentials=false",
          "--bind-address=127.0.0.1",
          `--secure-port=${kcmPort}`,
          `--cert-dir=${path.join(workDir, "kcm-certs")}`,
          // The insecure port (default 10252) exists up to 1.23; turn it off.
          ...(maj === 1 && min < 24 ? ["--port=0"] : []),
          ...(opts.controllerManagerArgs ?? []),
        ],
        workDir,
      );
      started.push(kcm);
      await waitFor("kube-controller-manager /healthz", deadline, [etcd, apiserver, kcm], async () => {
        const r = await httpsGet(`https://127.0.0.1:${kcmPort}/healthz`, token);
        return r.status === 200;
      });
      // Controllers are running once the service account controller made "default".
      await waitFor("service account default/default", deadline, [etcd, apiserver, kcm], async () => {
        const r = await httpsGet(`${server}/api/v1/namespaces/default/serviceaccounts/default`, token);
        return r.status === 200;
      });
    }

    // --- tools --------------------------------------------------------------------
    const toolEnv: Record<string, string> = {
      KUBECONFIG: kubeconfigPath,
      KUBECACHEDIR: path.join(workDir, "kube-cache"),
      HELM_CACHE_HOME: path.join(workDir, "helm", "cache"),
      HELM_CONFIG_HOME: path.join(workDir, "helm", "config"),
      HELM_DATA_HOME: path.join(workDir, "helm", "data"),
    };
    const tool = (name: "kubectl" | "helm", bin: string | undefined) =>
      (args: string[], ro: RunOptions = {}): Promise<RunResult> => {
        if (!bin) {
          return Promise.reject(new Error(`kube test peer: ${name} not found; ${INSTALL_HINT}`));
        }
        return run(bin, args, { ...ro, baseEnv: toolEnv, defaultCwd: workDir });
      };

    let stopped: Promise<void> | undefined;
    const cluster: KubeCluster = {
      kubeconfigPath,
      server,
      token,
      caPath,
      binDir: bins.dir,
      workDir,
      serverVersion,
      controllerManager: wantKcm,
      env: toolEnv,
      kubectl: tool("kubectl", bins.kubectl),
      helm: tool("helm", bins.helm),
      stop: () => {
        stopped ??= (async () => {
          await stopAll();
          if (ownWorkDir && !process.env.KUBE_PEER_KEEP_WORKDIR) {
            await fsp.rm(workDir, { recursive: true, force: true });
          }
          ownedWorkDirs.delete(workDir);
        })();
        return stopped;
      },
    };
    return cluster;
  } catch (err) {
    await stopAll();
    ownedWorkDirs.delete(workDir); // keep the logs of a failed start
    if (err instanceof Error) err.message += `\n(kube test peer work dir with logs: ${workDir})`;
    throw err;
  }
}
