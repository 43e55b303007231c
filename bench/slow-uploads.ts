/**
 * Memory under slow uploads: N connections each announce a 1 MiB body and send all of it but the
 * last bytes, then hold. Prints the data plane's RSS before and while they hold, and how they were
 * answered (the body budget, DAS_BODY_BUDGET_BYTES, answers 503 once it is in use).
 *
 *   npx tsx bench/slow-uploads.ts [--connections 300]
 *
 * Runs the compiled data plane (npm run build first) on its own embedded PostgreSQL, on loopback.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, chmodSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../dataplane/src/db/embedded.js';
import { COMPILED_MAIN, cleanEnv, ROOT } from '../dataplane/test-support/main-process.js';

const connections = Number(process.argv[process.argv.indexOf('--connections') + 1] || 300);
const BODY = 1024 * 1024;

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-uploads-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const child = spawn(process.execPath, [COMPILED_MAIN], { cwd: ROOT, env: { ...cleanEnv(), DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, stdio: 'ignore' });
  try {
    for (let i = 0; ; i++) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
      if (ready) break;
      if (i > 300) throw new Error('data plane did not become ready');
      await sleep(200);
    }
    await sleep(1000);
    const before = rssMiB(child.pid!);
    const answers = new Map<string, number>();
    const sockets: Socket[] = [];
    const chunk = Buffer.alloc(BODY - 16, 0x20);
    for (let i = 0; i < connections; i++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.once('data', (d) => {
        const status = d.toString('latin1').slice(9, 12);
        answers.set(status, (answers.get(status) ?? 0) + 1);
      });
      socket.write(`POST /demo HTTP/1.1\r\nHost: iam.localhost\r\nAuthorization: Proxy demo-admin\r\nContent-Type: application/json\r\nContent-Length: ${BODY}\r\n\r\n`);
      socket.write(chunk);
      sockets.push(socket);
    }
    await sleep(5000);
    const holding = rssMiB(child.pid!);
    console.log(`${connections} slow 1 MiB uploads: RSS ${before.toFixed(0)} MiB before, ${holding.toFixed(0)} MiB while they hold (+${(holding - before).toFixed(0)} MiB)`);
    console.log(`answered meanwhile: ${JSON.stringify(Object.fromEntries(answers))} (the rest still uploading)`);
    for (const s of sockets) s.destroy();
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
