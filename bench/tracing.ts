/**
 * `npm run bench:tracing`: the cost of OpenTelemetry traces on reads by id. Two data planes
 * (main.ts processes, each with its embedded PostgreSQL), one without an OTLP endpoint (tracing
 * off: the SDK is not loaded) and one exporting every trace (sampler always_on, ratio 1.0) to an
 * OTLP receiver in this process; the same reads against each, rounds alternating; prints each
 * one's CPU time per read (user + system of the data plane's process, /proc/<pid>/stat) and the
 * ratio. Not a test: read the ratio.
 *
 * BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (16).
 */
import autocannon from 'autocannon';
import { startReadyMain, stopMain, type ReadyMain } from '../dataplane/test-support/main-process.js';
import { call } from '../dataplane/test-support/http.js';
import { startOtlpReceiver } from '../dataplane/test-support/otlp-receiver.js';
import { cpuMs, HEADERS } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function round(plane: ReadyMain): Promise<{ cpuPerReadUs: number; reads: number }> {
  const before = cpuMs(plane.child.pid)!;
  const result = await autocannon({ url: `${plane.url}/demo/demo.Company/bench-co`, headers: HEADERS, connections: CONNECTIONS, duration: SECONDS });
  const used = cpuMs(plane.child.pid)! - before;
  const reads = result['2xx'];
  if (reads === 0 || result.non2xx > 0) throw new Error(`reads failed: ${result.non2xx} answers not 2xx`);
  return { cpuPerReadUs: (used * 1000) / reads, reads };
}

const receiver = await startOtlpReceiver();
const planes: Record<'off' | 'on', ReadyMain | undefined> = { off: undefined, on: undefined };
try {
  planes.off = await startReadyMain({ LOG_LEVEL: 'warn' });
  planes.on = await startReadyMain({ LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_SAMPLER: 'always_on', OTEL_TRACES_SAMPLER_ARG: '1.0' });
  for (const plane of [planes.off, planes.on]) {
    const created = await call(plane.url, { ...{ host: HEADERS.host, headers: { authorization: HEADERS.authorization } }, path: '/demo', body: { create: { schema: 'demo.Company', id: 'bench-co', data: { name: 'Bench Co' } } } });
    if (created.status !== 201) throw new Error(`seed failed: ${created.status} ${created.text}`);
  }
  // A round each first, not counted: JIT warm-up would otherwise decide the medians.
  for (const plane of [planes.off, planes.on]) await round(plane);
  const cpu: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const { cpuPerReadUs, reads } = await round(planes[name]!);
      cpu[name].push(cpuPerReadUs);
      console.log(`round ${r + 1} tracing ${name}: ${reads} reads, ${cpuPerReadUs.toFixed(1)} µs CPU per read`);
    }
  }
  const off = median(cpu.off);
  const on = median(cpu.on);
  console.log(`median CPU per read: off ${off.toFixed(1)} µs, on (ratio 1.0) ${on.toFixed(1)} µs: ×${(on / off).toFixed(3)}; spans received: ${receiver.spans.length}`);
} finally {
  await stopMain(planes.off);
  await stopMain(planes.on);
  await receiver.close();
}
