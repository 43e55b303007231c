/**
 * `npm run bench:tracing`: the cost of OpenTelemetry traces on reads by id. Two data planes
 * (main.ts processes, each with its embedded PostgreSQL), one without an OTLP endpoint (tracing
 * off: the SDK is not loaded) and one exporting every trace (sampler always_on, ratio 1.0) to an
 * OTLP sink in this process (bench/otlp-sink.ts: counts the exports, does not decode them); the
 * same reads against each, rounds alternating; prints each
 * one's CPU time per read (user + system of the data plane's process, /proc/<pid>/stat) and the
 * ratio. Not a test: read the ratio.
 *
 * The reads come at a fixed rate (BENCH_RATE per second, below what either plane can serve), so
 * both planes do the same work per event-loop turn: at full load a slower plane serves fewer reads
 * per turn, amortises less per read, and its CPU per read would grow for that reason alone (on a
 * loaded machine that doubled the ratio). BENCH_RATE=0: as fast as they can.
 *
 * BENCH_SAMPLER (always_on) is the traced plane's OTEL_TRACES_SAMPLER: always_off shows what the SDK
 * costs before any span is recorded (context propagation, the context manager).
 *
 * BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (16), BENCH_RATE (400). BENCH_UNTRACED_ROOT=<a checkout of the
 * commit before tracing existed, with node_modules> adds a third plane run from that checkout (the
 * "untraced build"), to show that tracing off costs nothing. BENCH_PROFILE_DIR=<dir> writes a CPU
 * profile per plane (`npx tsx bench/profile-top.ts <dir>/on`). BENCH_NODE=<node binary> runs the data
 * planes with another Node.js (the image's is Node 24). BENCH_BEFORE_ROOT=<another checkout> adds a
 * traced plane run from it: before/after of a change in the same rounds. BENCH_ON_ENV (JSON): more
 * environment for the traced planes. BENCH_WARMUP_SECONDS (30): reads before the rounds, not counted.
 * BENCH_TOGETHER=1 reads from all planes at once in each round
 * instead of one after another (on a loaded machine the load then changes for all alike).
 * Each round's line also gives the plane's system CPU and minor page faults per read (memory
 * mapped anew and touched, as a fresh large buffer per export batch was); BENCH_TRACE_GC=1 adds
 * its collections and compilations per 1000 reads.
 */
import autocannon from 'autocannon';
import { resolve } from 'node:path';
import { startReadyMain, stopMain, type ReadyMain } from '../dataplane/test-support/main-process.js';
import { call } from '../dataplane/test-support/http.js';
import { loadavg } from 'node:os';
import { startOtlpSink } from './otlp-sink.js';
import { cpuMs, HEADERS, kernelCounters } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const RATE = Number(process.env.BENCH_RATE ?? 400);
const TOGETHER = process.env.BENCH_TOGETHER === '1';
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 30);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * BENCH_TRACE_GC=1: V8's GC, optimisation and deoptimisation traces of each plane, counted per round
 * (scavenges, mark-compacts, compilations by the optimising tiers, deoptimisations per 1000 reads).
 */
const TRACE_GC = process.env.BENCH_TRACE_GC === '1';
const gcCounts = (output: string) => ({
  scavenges: output.match(/: Scavenge/g)?.length ?? 0,
  markCompacts: output.match(/: Mark-Compact/g)?.length ?? 0,
  // One line per Maglev or TurboFan compilation (TurboFan's also prints "completed optimizing" after it).
  optimised: output.match(/\[completed compiling/g)?.length ?? 0,
  deoptimised: output.match(/\[bailout/g)?.length ?? 0,
});

async function round(plane: ReadyMain, seconds = SECONDS): Promise<{ cpuPerReadUs: number; mainThreadUs: number; reads: number; gc?: string }> {
  const gcBefore = gcCounts(plane.output());
  const before = cpuMs(plane.child.pid)!;
  const mainBefore = cpuMs(plane.child.pid, true)!;
  const kernelBefore = kernelCounters(plane.child.pid)!;
  const result = await autocannon({ url: `${plane.url}/demo/demo.Company/bench-co`, headers: HEADERS, connections: CONNECTIONS, duration: seconds, ...(RATE > 0 ? { overallRate: RATE } : {}) });
  const used = cpuMs(plane.child.pid)! - before;
  const mainUsed = cpuMs(plane.child.pid, true)! - mainBefore;
  const kernelAfter = kernelCounters(plane.child.pid)!;
  const reads = result['2xx'];
  if (reads === 0 || result.non2xx > 0) throw new Error(`reads failed: ${result.non2xx} answers not 2xx`);
  const gcAfter = gcCounts(plane.output());
  const perThousand = (n: number) => ((n * 1000) / reads).toFixed(2);
  const gc = TRACE_GC ? `; per 1000 reads ${perThousand(gcAfter.scavenges - gcBefore.scavenges)} scavenges, ${perThousand(gcAfter.markCompacts - gcBefore.markCompacts)} mark-compacts, ${perThousand(gcAfter.optimised - gcBefore.optimised)} optimised, ${perThousand(gcAfter.deoptimised - gcBefore.deoptimised)} deoptimised` : undefined;
  // The kernel's part of the CPU and the minor page faults per read: fresh memory mapped and touched shows in both.
  const kernel = `; system ${(((kernelAfter.systemMs - kernelBefore.systemMs) * 1000) / reads).toFixed(1)} µs, ${((kernelAfter.minorFaults - kernelBefore.minorFaults) / reads).toFixed(3)} minor faults per read`;
  return { cpuPerReadUs: (used * 1000) / reads, mainThreadUs: (mainUsed * 1000) / reads, reads, gc: kernel + (gc ?? '') };
}

type Name = 'untraced' | 'off' | 'on' | 'onBefore';
const UNTRACED_ROOT = process.env.BENCH_UNTRACED_ROOT;
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;
const NAMES: Name[] = [...(UNTRACED_ROOT ? ['untraced' as const] : []), 'off', 'on', ...(BEFORE_ROOT ? ['onBefore' as const] : [])];
const placement = (name: Name) => ({
  node: process.env.BENCH_NODE,
  root: name === 'untraced' ? resolve(UNTRACED_ROOT!) : name === 'onBefore' ? resolve(BEFORE_ROOT!) : undefined,
  nodeArgs: [...(process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_PROFILE_DIR, name)}`] : []), ...(TRACE_GC ? ['--trace-gc', '--trace-opt', '--trace-deopt'] : [])],
});

/** BENCH_ON_ENV: more environment of the traced plane, as JSON (`{"OTEL_BSP_SCHEDULE_DELAY":"500"}`). */
const onEnv = JSON.parse(process.env.BENCH_ON_ENV ?? '{}') as Record<string, string>;
const receiver = await startOtlpSink();
const planes: Partial<Record<Name, ReadyMain>> = {};
try {
  if (UNTRACED_ROOT) planes.untraced = await startReadyMain({ LOG_LEVEL: 'warn' }, placement('untraced'));
  planes.off = await startReadyMain({ LOG_LEVEL: 'warn' }, placement('off'));
  const traced = { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_SAMPLER: process.env.BENCH_SAMPLER ?? 'always_on', OTEL_TRACES_SAMPLER_ARG: '1.0', ...onEnv };
  planes.on = await startReadyMain(traced, placement('on'));
  if (BEFORE_ROOT) planes.onBefore = await startReadyMain(traced, placement('onBefore'));
  for (const plane of NAMES.map((name) => planes[name]!)) {
    const created = await call(plane.url, { ...{ host: HEADERS.host, headers: { authorization: HEADERS.authorization } }, path: '/demo', body: { create: { schema: 'demo.Company', id: 'bench-co', data: { name: 'Bench Co' } } } });
    if (created.status !== 201) throw new Error(`seed failed: ${created.status} ${created.text}`);
  }
  // Reads first, not counted: JIT warm-up would otherwise decide the medians (BENCH_TRACE_GC=1 shows
  // the optimising compilers still at work for tens of seconds at 400 reads/s, more in a traced plane).
  if (TOGETHER) await Promise.all(NAMES.map((name) => round(planes[name]!, WARMUP_SECONDS)));
  else for (const name of NAMES) await round(planes[name]!, WARMUP_SECONDS);
  const cpu: Record<Name, number[]> = { untraced: [], off: [], on: [], onBefore: [] };
  const mainCpu: Record<Name, number[]> = { untraced: [], off: [], on: [], onBefore: [] };
  // Per-round ratios: the machine's load changes between rounds more than within one.
  const ratios: { onOff: number[]; offUntraced: number[]; beforeOff: number[]; mainOnOff: number[]; mainBeforeOff: number[] } = { onOff: [], offUntraced: [], beforeOff: [], mainOnOff: [], mainBeforeOff: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? NAMES : [...NAMES].reverse();
    const thisRound: Partial<Record<Name, number>> = {};
    const mainThisRound: Partial<Record<Name, number>> = {};
    // BENCH_TOGETHER=1: every plane read at once (each at BENCH_RATE), so each round's load on the machine is the same for all.
    const together = TOGETHER ? await Promise.all(order.map((name) => round(planes[name]!))) : undefined;
    for (const [i, name] of order.entries()) {
      const { cpuPerReadUs, mainThreadUs, reads, gc } = together?.[i] ?? (await round(planes[name]!));
      cpu[name].push(cpuPerReadUs);
      thisRound[name] = cpuPerReadUs;
      mainCpu[name].push(mainThreadUs);
      mainThisRound[name] = mainThreadUs;
      console.log(`round ${r + 1} ${name === 'untraced' ? 'untraced build' : name === 'onBefore' ? 'tracing on (before)' : `tracing ${name}`}: ${reads} reads, ${cpuPerReadUs.toFixed(1)} µs CPU per read (main thread ${mainThreadUs.toFixed(1)} µs)${gc ?? ''}`);
    }
    ratios.onOff.push(thisRound.on! / thisRound.off!);
    ratios.mainOnOff.push(mainThisRound.on! / mainThisRound.off!);
    if (BEFORE_ROOT) ratios.mainBeforeOff.push(mainThisRound.onBefore! / mainThisRound.off!);
    if (UNTRACED_ROOT) ratios.offUntraced.push(thisRound.off! / thisRound.untraced!);
    if (BEFORE_ROOT) ratios.beforeOff.push(thisRound.onBefore! / thisRound.off!);
    console.log(`round ${r + 1} ratios: on/off ×${ratios.onOff.at(-1)!.toFixed(3)}${BEFORE_ROOT ? `, on (before)/off ×${ratios.beforeOff.at(-1)!.toFixed(3)}` : ''}${UNTRACED_ROOT ? `, off/untraced ×${ratios.offUntraced.at(-1)!.toFixed(3)}` : ''}; main thread on/off ×${ratios.mainOnOff.at(-1)!.toFixed(3)}${BEFORE_ROOT ? `, on (before)/off ×${ratios.mainBeforeOff.at(-1)!.toFixed(3)}` : ''}`);
  }
  const off = median(cpu.off);
  const on = median(cpu.on);
  const untraced = UNTRACED_ROOT ? `untraced build ${median(cpu.untraced).toFixed(1)} µs, ` : '';
  const before = BEFORE_ROOT ? `, on (before) ${median(cpu.onBefore).toFixed(1)} µs` : '';
  const received = await receiver.counts();
  console.log(`median CPU per read: ${untraced}off ${off.toFixed(1)} µs, on (ratio 1.0) ${on.toFixed(1)} µs: ×${(on / off).toFixed(3)}${before}; exports received: ${received.exports} (${(received.bytes / 1e6).toFixed(1)} MB)`);
  console.log(`median of the per-round ratios: on/off ×${median(ratios.onOff).toFixed(3)}${BEFORE_ROOT ? `, on (before)/off ×${median(ratios.beforeOff).toFixed(3)}` : ''}${UNTRACED_ROOT ? `, off/untraced ×${median(ratios.offUntraced).toFixed(3)}` : ''}`);
  // The main thread runs the JavaScript (the spans, the encoding); the process total adds V8's GC and compiler threads.
  console.log(`main thread: median CPU per read off ${median(mainCpu.off).toFixed(1)} µs, on ${median(mainCpu.on).toFixed(1)} µs${BEFORE_ROOT ? `, on (before) ${median(mainCpu.onBefore).toFixed(1)} µs` : ''}; median of the per-round ratios on/off ×${median(ratios.mainOnOff).toFixed(3)}${BEFORE_ROOT ? `, on (before)/off ×${median(ratios.mainBeforeOff).toFixed(3)}` : ''}`);
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  for (const name of NAMES) await stopMain(planes[name]);
  await receiver.close();
}
