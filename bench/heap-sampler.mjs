/**
 * Preloaded (`--import`) into a server by bench/alloc-sites.ts: V8's sampling heap profiler,
 * started on the first SIGUSR2 and stopped on the next, which writes the profile (every sampled
 * allocation, collected or not) to HEAP_SAMPLER_OUT.
 */
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';

const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.startSampling', {
      samplingInterval: Number(process.env.HEAP_SAMPLER_INTERVAL ?? 256),
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return;
  }
  sampling = false;
  session.post('HeapProfiler.stopSampling', (err, result) => {
    writeFileSync(process.env.HEAP_SAMPLER_OUT, err ? JSON.stringify({ error: String(err) }) : JSON.stringify(result.profile));
  });
});
