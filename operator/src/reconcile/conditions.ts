/** status.conditions in the metav1.Condition shape, with lastTransitionTime kept while nothing flips. */

export type ConditionStatus = 'True' | 'False' | 'Unknown';
/** StorageRetained is the data plane's (model/types.ts STORAGE_RETAINED_CONDITION): the operator keeps it and reads it. */
export type ConditionType = 'Ready' | 'Reconciled' | 'Degraded' | 'Paused' | 'StorageRetained';

export interface Condition {
  type: ConditionType;
  status: ConditionStatus;
  observedGeneration: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export type ConditionUpdate = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export const CONDITION_ORDER: readonly ConditionType[] = ['Ready', 'Reconciled', 'Degraded', 'Paused', 'StorageRetained'];

/** Condition types another writer owns (the data plane): a status write carries the stored one, never a stale copy. */
export const FOREIGN_CONDITIONS: readonly ConditionType[] = ['StorageRetained'];

/** metav1.Time: RFC 3339 with second precision. */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The new condition list. A condition whose status does not change keeps its lastTransitionTime, so
 * that recomputing identical conditions yields an identical status (and no write).
 */
export function setConditions(
  previous: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  observedGeneration: number,
  now: Date,
): Condition[] {
  const byType = new Map((previous ?? []).map((c) => [c.type, c]));
  for (const update of updates) {
    const old = byType.get(update.type);
    const lastTransitionTime = old && old.status === update.status ? old.lastTransitionTime : kubeTime(now);
    byType.set(update.type, { ...update, observedGeneration, lastTransitionTime });
  }
  return [...byType.values()].sort((a, b) => CONDITION_ORDER.indexOf(a.type) - CONDITION_ORDER.indexOf(b.type));
}

export function findCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** The Ready transition worth an Event, if Ready's status or reason changed. */
export function readyTransition(
  previous: readonly Condition[] | undefined,
  next: readonly Condition[],
): { type: 'Normal' | 'Warning'; reason: string; message: string } | undefined {
  const before = findCondition(previous, 'Ready');
  const after = findCondition(next, 'Ready');
  if (!after || (before && before.status === after.status && before.reason === after.reason)) return undefined;
  return { type: after.status === 'True' ? 'Normal' : 'Warning', reason: after.reason, message: after.message };
}

export interface Problem {
  reason: string;
  message: string;
  /** False for a state that resolves by itself (waiting for garbage collection). */
  degraded: boolean;
}

/** The three conditions: Ready as given; Reconciled and Degraded follow from the problem, if any. */
export function outcomeConditions(ready: { ok: boolean; reason: string; message: string }, problem?: Problem): ConditionUpdate[] {
  return [
    { type: 'Ready', status: ready.ok ? 'True' : 'False', reason: ready.reason, message: ready.message },
    problem
      ? { type: 'Reconciled', status: 'False', reason: problem.reason, message: problem.message }
      : { type: 'Reconciled', status: 'True', reason: 'Applied', message: 'The desired state of this generation is applied.' },
    problem?.degraded
      ? { type: 'Degraded', status: 'True', reason: problem.reason, message: problem.message }
      : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'No problems.' },
  ];
}
