import { expect } from 'chai';
import { pino } from 'pino';
import { FakeCluster } from '../test/fake-cluster.js';
import { LeaderElector, decideLease, microTime, type LeaseObject } from './leader-election.js';

const lease = (holder: string | undefined, seconds = 15): LeaseObject => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'l', namespace: 'ops' },
  spec: { holderIdentity: holder, leaseDurationSeconds: seconds },
});

describe('operator: leader election rules', () => {
  it('creates a missing lease, renews its own, takes over a released one', () => {
    expect(decideLease(undefined, 'a', 0, 0, 15_000)).to.equal('create');
    expect(decideLease(lease('a'), 'a', 0, 0, 15_000)).to.equal('renew');
    expect(decideLease(lease(''), 'a', 0, 0, 15_000)).to.equal('take-over');
  });

  it('takes over another holder\'s lease only after it went unchanged for the lease duration, by the local clock', () => {
    expect(decideLease(lease('b', 15), 'a', 1_000, 15_999, 15_000)).to.equal('wait');
    expect(decideLease(lease('b', 15), 'a', 1_000, 16_000, 15_000)).to.equal('take-over');
  });

  it('writes MicroTime with microseconds', () => {
    expect(microTime(new Date('2025-03-04T05:06:07.089Z'))).to.equal('2025-03-04T05:06:07.089000Z');
  });
});

describe('operator: leader election on a Lease (fake API server, fake clock)', () => {
  let clock = 0;
  const elector = (cluster: FakeCluster, identity: string) =>
    new LeaderElector({
      client: cluster,
      namespace: 'ops',
      name: 'data-access-operator',
      identity,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      logger: pino({ level: 'silent' }),
      clock: () => clock,
    });
  const holder = (cluster: FakeCluster) => (cluster.get('Lease', 'ops', 'data-access-operator') as LeaseObject).spec;

  beforeEach(() => (clock = 0));

  it('only one of two replicas holds the lease; the other takes over once renewals stop', async () => {
    const cluster = new FakeCluster();
    const a = elector(cluster, 'a');
    const b = elector(cluster, 'b');
    expect(await a.tryAcquireOrRenew()).to.equal(true);
    expect(await b.tryAcquireOrRenew()).to.equal(false);
    clock = 10_000;
    expect(await a.tryAcquireOrRenew()).to.equal(true); // renewal: b sees the record change…
    clock = 20_000;
    expect(await b.tryAcquireOrRenew()).to.equal(false); // …and restarts its wait from here
    clock = 34_999;
    expect(await b.tryAcquireOrRenew()).to.equal(false);
    clock = 35_000; // a has not renewed for a full lease duration
    expect(await b.tryAcquireOrRenew()).to.equal(true);
    expect(holder(cluster)).to.include({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(await a.tryAcquireOrRenew()).to.equal(false);
  });

  it('a released lease is taken over at once', async () => {
    const cluster = new FakeCluster();
    const a = elector(cluster, 'a');
    const b = elector(cluster, 'b');
    let lost = false;
    const running = a.run({ onStartedLeading: () => undefined, onStoppedLeading: () => (lost = true) });
    while (!a.isLeader) await new Promise((resolve) => setImmediate(resolve));
    expect(await b.tryAcquireOrRenew()).to.equal(false);
    await a.stop();
    await running;
    expect(lost).to.equal(false); // a requested stop is not a loss
    expect(holder(cluster)).to.include({ holderIdentity: '' });
    expect(await b.tryAcquireOrRenew()).to.equal(true);
  });

  it('two replicas racing to create the lease: the loser gets 409 and waits', async () => {
    const cluster = new FakeCluster();
    const [ra, rb] = await Promise.all([elector(cluster, 'a').tryAcquireOrRenew(), elector(cluster, 'b').tryAcquireOrRenew()]);
    expect([ra, rb].filter(Boolean)).to.have.length(1);
  });
});
