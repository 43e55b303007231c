/**
 * A span per subscription delivery (a change given to one subscription's queue), in a trace of its
 * own with a link to the write's trace where the change feed keeps it (PostgreSQL's change log
 * records the writing store call's traceparent). Carries no id and no record data.
 */
import type { RecordChange } from '../engine/contract.js';
import { recordRootSpan, tracingOn } from '../../../model/telemetry/tracing.js';

export function traceDelivery(dataset: string, change: RecordChange): void {
  if (!tracingOn()) return;
  recordRootSpan(
    `deliver ${change.schema}`,
    () => ({ 'das.dataset': dataset, 'db.collection.name': change.schema, 'das.change.op': change.op }),
    { kind: 'consumer', links: change.writeTrace ? [change.writeTrace] : undefined },
  );
}
