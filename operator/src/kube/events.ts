/** Kubernetes Events (core/v1) about the custom resources, for `kubectl describe` and event exporters. */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { OPERATOR_NAME } from '../names.js';
import { kubeTime } from '../reconcile/conditions.js';
import type { KubeObject, ObjectWriter } from './object-client.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  record(involved: KubeObject, type: EventType, reason: string, message: string): Promise<void>;
}

export class EventRecorder implements EventSink {
  constructor(
    private readonly client: Pick<ObjectWriter, 'create'>,
    private readonly logger: Logger,
    private readonly instance: string,
  ) {}

  /** Best effort: an Event that cannot be written is logged, never fails the reconcile. */
  async record(involved: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const now = kubeTime(new Date());
    const namespace = involved.metadata.namespace ?? 'default';
    try {
      await this.client.create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${involved.metadata.name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: {
          apiVersion: involved.apiVersion,
          kind: involved.kind,
          name: involved.metadata.name,
          namespace,
          uid: involved.metadata.uid,
          resourceVersion: involved.metadata.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: OPERATOR_NAME },
        reportingComponent: `dataaccess.dev/${OPERATOR_NAME}`,
        reportingInstance: this.instance,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (err) {
      this.logger.warn({ err: err instanceof Error ? err.message : String(err), reason }, 'could not record event');
    }
  }
}
