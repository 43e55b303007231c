/**
 * Stops a server process by escalating signals, and always resolves: the embedded PostgreSQL's own
 * stop() sends SIGINT and waits for an `exit` event with no deadline, and never resolves when the
 * process is already gone (a CI run once failed in its last hook because of it).
 *
 * PostgreSQL's shutdown modes, in order (https://www.postgresql.org/docs/current/server-shutdown.html):
 *   SIGINT   fast shutdown: running transactions roll back, committed data is written out
 *   SIGQUIT  immediate shutdown: children quit at once; the next start runs crash recovery
 *   SIGKILL  the postmaster cannot refuse it (its children exit when they notice it is gone)
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface StopStep {
  signal: NodeJS.Signals;
  /** How long to wait for the process to go after sending the signal, in milliseconds. */
  waitMs: number;
}

/** The documented escalation: 10 s for a fast shutdown, 5 s for an immediate one, 5 s after SIGKILL. */
export const POSTGRES_STOP_STEPS: readonly StopStep[] = [
  { signal: 'SIGINT', waitMs: 10_000 },
  { signal: 'SIGQUIT', waitMs: 5_000 },
  { signal: 'SIGKILL', waitMs: 5_000 },
];

export interface StopOutcome {
  /** The signal after which the process went; undefined when it was gone before any was sent. */
  stoppedBy?: NodeJS.Signals;
  /** False only when the process outlived every step (it cannot outlive SIGKILL unless stuck in the kernel). */
  gone: boolean;
}

/** True while `pid` names a process that has not exited (a zombie has exited). */
export function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ..."; state Z is a zombie waiting for its parent to reap it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (not Linux): kill(pid, 0) succeeded
  }
}

function childGone(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Sends each step's signal in turn until the process is gone. `target` is the ChildProcess when this
 * process spawned it (its `exit` event is awaited), or a bare pid (polled).
 */
export async function stopProcess(target: ChildProcess | number, steps: readonly StopStep[] = POSTGRES_STOP_STEPS): Promise<StopOutcome> {
  const pid = typeof target === 'number' ? target : target.pid;
  const gone = () => (typeof target === 'number' ? !pidRunning(target) : childGone(target) || pid === undefined || !pidRunning(pid));
  if (gone()) return { gone: true };
  for (const step of steps) {
    try {
      if (typeof target === 'number') process.kill(target, step.signal);
      else target.kill(step.signal);
    } catch {
      /* gone between the check and the signal */
    }
    if (await waitUntilGone(target, gone, step.waitMs)) return { stoppedBy: step.signal, gone: true };
  }
  return { gone: gone() };
}

/** Resolves true as soon as the process is gone, false after `waitMs`. */
function waitUntilGone(target: ChildProcess | number, gone: () => boolean, waitMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (gone()) return resolve(true);
    let settled = false;
    const finish = (result: boolean) => {
      if (settled) return;
      settled = true;
      clearInterval(poll);
      clearTimeout(deadline);
      if (typeof target !== 'number') target.off('exit', onExit);
      resolve(result);
    };
    const onExit = () => finish(true);
    if (typeof target !== 'number') target.once('exit', onExit);
    // Polled as well: an `exit` event already emitted, or a pid that is not our child.
    const poll = setInterval(() => gone() && finish(true), 50);
    const deadline = setTimeout(() => finish(gone()), waitMs);
  });
}
