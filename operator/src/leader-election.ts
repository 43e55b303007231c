/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the holder renews the
 * lease every retry period; the others take it over only after it went unrenewed for a full lease
 * duration by their own clock (no trust in the holder's clock). A leader that cannot renew within
 * the renew deadline (shorter than the lease duration) stops leading before anyone else can start,
 * so two replicas never reconcile at once. On shutdown the holder releases the lease at once.
 */
import type { Logger } from 'pino';
import { statusCodeOf, type KubeObject, type ObjectWriter } from './kube/object-client.js';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export type LeaseObject = KubeObject & { spec?: LeaseSpec };

/** Which Lease, who holds it, and the timing: what the operator's configuration decides. */
export interface LeaseSettings {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface LeaderElectionOptions extends LeaseSettings {
  client: ObjectWriter;
  logger: Logger;
  /** Monotonic milliseconds (injected in tests). */
  clock?: () => number;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** What to do with the lease as observed: pure, so the rules are testable. */
export type LeaseDecision = 'create' | 'renew' | 'take-over' | 'wait';

export function decideLease(
  lease: LeaseObject | undefined,
  identity: string,
  observedChangeAtMs: number,
  nowMs: number,
  defaultDurationMs: number,
): LeaseDecision {
  if (!lease) return 'create';
  const holder = lease.spec?.holderIdentity;
  if (holder === identity) return 'renew';
  if (!holder) return 'take-over'; // released
  const durationMs = (lease.spec?.leaseDurationSeconds ?? defaultDurationMs / 1000) * 1000;
  return nowMs - observedChangeAtMs >= durationMs ? 'take-over' : 'wait';
}

export interface LeaderCallbacks {
  onStartedLeading(): Promise<void> | void;
  /** Called when leadership is lost (not on a requested stop). */
  onStoppedLeading(): void;
}

export class LeaderElector {
  private readonly clock: () => number;
  private observed?: { record: string; atMs: number };
  private leading = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private lastRenewalMs = 0;
  private lease?: LeaseObject;
  private wake?: () => void;

  constructor(private readonly options: LeaderElectionOptions) {
    this.clock = options.clock ?? (() => performance.now());
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Campaigns until leading, then renews until stopped or lost. Resolves after stop(). */
  async run(callbacks: LeaderCallbacks): Promise<void> {
    const { logger, identity, namespace, name } = this.options;
    while (!this.stopped) {
      const acquired = await this.tryAcquireOrRenew();
      const now = this.clock();
      if (acquired) {
        this.lastRenewalMs = now;
        if (!this.leading) {
          this.leading = true;
          logger.info({ identity, lease: `${namespace}/${name}` }, 'became leader');
          // Not awaited: renewing must go on while the leader starts up.
          Promise.resolve()
            .then(() => callbacks.onStartedLeading())
            .catch((err: unknown) => logger.error({ err }, 'starting to lead failed'));
        }
      } else if (this.leading && now - this.lastRenewalMs >= this.options.renewDeadlineMs) {
        this.leading = false;
        logger.error({ identity, lease: `${namespace}/${name}` }, 'could not renew the lease within the renew deadline; leadership lost');
        callbacks.onStoppedLeading();
        return;
      }
      await this.sleep(this.options.retryPeriodMs);
    }
  }

  /** Stops campaigning; a leader releases the lease so that a standby takes over without waiting. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    if (!this.leading || !this.lease) return;
    this.leading = false;
    try {
      const current = (await this.options.client.read<LeaseObject>(this.leaseRef())) ?? this.lease;
      if (current.spec?.holderIdentity !== this.options.identity) return;
      const now = microTime(new Date());
      await this.options.client.replace({
        ...current,
        spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
      });
      this.options.logger.info({ identity: this.options.identity }, 'released the lease');
    } catch (err) {
      this.options.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not release the lease');
    }
  }

  private leaseRef() {
    return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: this.options.namespace, name: this.options.name };
  }

  /** One round: acquire, take over or renew the lease. True while this replica holds it. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, identity, leaseDurationMs, logger } = this.options;
    const durationSeconds = Math.ceil(leaseDurationMs / 1000);
    const now = microTime(new Date());
    try {
      const lease = await client.read<LeaseObject>(this.leaseRef());
      this.observe(lease);
      const decision = decideLease(lease, identity, this.observed?.atMs ?? this.clock(), this.clock(), leaseDurationMs);
      if (decision === 'wait') return false;
      if (decision === 'create' || !lease) {
        this.lease = await client.create<LeaseObject>({
          ...this.leaseRef(),
          metadata: { name: this.options.name, namespace: this.options.namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
        return true;
      }
      const spec = lease.spec ?? {};
      const next: LeaseSpec =
        decision === 'renew'
          ? { ...spec, renewTime: now, leaseDurationSeconds: durationSeconds }
          : {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: (spec.leaseTransitions ?? 0) + 1,
            };
      this.lease = await client.replace<LeaseObject>({ ...lease, spec: next });
      return true;
    } catch (err) {
      // 409: someone else wrote the lease first. Anything else: try again next period.
      if (statusCodeOf(err) !== 409) logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'lease request failed');
      return false;
    }
  }

  /** Remembers when the lease record last changed (any write changes its resourceVersion), by our own clock. */
  private observe(lease: LeaseObject | undefined): void {
    const record = lease?.metadata.resourceVersion ?? '';
    if (this.observed?.record !== record) this.observed = { record, atMs: this.clock() };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
    });
  }
}
