import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATAPLANE_DEFAULT_RESOURCES, quantityValue } from '../../model/workloads.js';
import { DEFAULT_BYTES_PER_SUBSCRIBER, DEFAULT_RESERVE_BYTES, memoryCaps, memoryLimitOf, MiB, processMemoryCaps, readCgroupFiles, UNLIMITED_DEFAULT_CAP } from './memory-caps.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

const HOST = 16 * 1024 * MiB;

describe('memory caps from the cgroup limit', () => {
  it('reads cgroup v2 memory.max, v1 memory.limit_in_bytes, and treats "max" or a limit beyond the machine as none', () => {
    expect(memoryLimitOf({ v2: '536870912\n' }, HOST)).to.equal(512 * MiB);
    expect(memoryLimitOf({ v1: '268435456\n' }, HOST)).to.equal(256 * MiB);
    expect(memoryLimitOf({ v2: 'max\n' }, HOST)).to.equal(undefined);
    // cgroup v1 writes "unlimited" as 2^63 rounded down to a page.
    expect(memoryLimitOf({ v1: '9223372036854771712\n' }, HOST)).to.equal(undefined);
    expect(memoryLimitOf({ v2: String(32 * 1024 * MiB) }, HOST), 'more than the machine has').to.equal(undefined);
    expect(memoryLimitOf({}, HOST)).to.equal(undefined);
    expect(memoryLimitOf({ v2: 'garbage' }, HOST)).to.equal(undefined);
    expect(memoryLimitOf({ v2: '0' }, HOST)).to.equal(undefined);
  });

  it('derives both caps as (limit - reserve) / bytes per subscriber; explicit settings win; no limit keeps the defaults', () => {
    const settings = { reserveBytes: 100 * MiB, bytesPerSubscriber: 40 * 1024 };
    const caps = memoryCaps(512 * MiB, settings);
    expect(caps.subscriptions).to.equal(Math.floor((412 * MiB) / (40 * 1024)));
    expect(caps.connections).to.equal(caps.subscriptions);
    expect(caps.source).to.deep.equal({ subscriptions: 'memory limit', connections: 'memory limit' });

    const half = memoryCaps(256 * MiB, settings);
    expect(half.subscriptions, 'a smaller Pod takes fewer').to.be.below(caps.subscriptions);

    const explicit = memoryCaps(512 * MiB, { ...settings, subscriptions: 50, connections: 7 });
    expect(explicit).to.deep.include({ subscriptions: 50, connections: 7, source: { subscriptions: 'setting', connections: 'setting' } });

    expect(memoryCaps(undefined, settings)).to.deep.include({ subscriptions: UNLIMITED_DEFAULT_CAP, connections: UNLIMITED_DEFAULT_CAP, source: { subscriptions: 'default', connections: 'default' } });
    expect(memoryCaps(64 * MiB, settings).subscriptions, 'a limit below the reserve takes none').to.equal(0);
    expect(memoryCaps(undefined, { ...settings, unlimited: { subscriptions: 10_000, connections: 5_000 } }), 'the caller\'s defaults without a limit').to.deep.include({ subscriptions: 10_000, connections: 5_000 });
  });

  it("with the defaults, the operator's default memory limit lands at a cap of at least 10,000 subscribers", () => {
    const limit = quantityValue(DATAPLANE_DEFAULT_RESOURCES.limits!.memory!)!;
    const caps = memoryCaps(limit, { reserveBytes: DEFAULT_RESERVE_BYTES, bytesPerSubscriber: DEFAULT_BYTES_PER_SUBSCRIBER });
    expect(caps.subscriptions).to.be.at.least(10_000);
  });

  it('reads the files under DAS_CGROUP_ROOT (v2 and v1 layouts), and refuses a malformed setting', () => {
    const root = mkdtempSync(join(tmpdir(), 'das-cgroup-'));
    try {
      writeFileSync(join(root, 'memory.max'), `${256 * MiB}\n`);
      expect(readCgroupFiles(root)).to.deep.equal({ v2: `${256 * MiB}\n`, v1: undefined });
      const caps = processMemoryCaps(dataPlaneSettings({ DAS_CGROUP_ROOT: root, DAS_MEMORY_RESERVE_BYTES: String(56 * MiB), DAS_MEMORY_PER_SUBSCRIBER_BYTES: String(100 * 1024) }));
      expect(caps).to.deep.include({ limitBytes: 256 * MiB, subscriptions: 2048, connections: 2048 });

      rmSync(join(root, 'memory.max'));
      mkdirSync(join(root, 'memory'));
      writeFileSync(join(root, 'memory/memory.limit_in_bytes'), '9223372036854771712\n');
      expect(processMemoryCaps(dataPlaneSettings({ DAS_CGROUP_ROOT: root })).subscriptions).to.equal(UNLIMITED_DEFAULT_CAP);
      expect(processMemoryCaps(dataPlaneSettings({ DAS_CGROUP_ROOT: root, DAS_SUBSCRIPTIONS_PER_REPLICA: '3' })).subscriptions).to.equal(3);
      expect(() => dataPlaneSettings({ DAS_CGROUP_ROOT: root, DAS_WS_MAX_CONNECTIONS: 'lots' })).to.throw('DAS_WS_MAX_CONNECTIONS="lots" is not allowed: a whole number of at least 1');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
