/**
 * `GET /readyz`: the configs' states and the stores' reachability as one answer.
 *
 * 200 `ready`; 200 `degraded` when some datasets cannot be served (a failed config, an
 * unreachable store) while others can — one bad dataset must not take the replica out of its
 * Service; 503 `starting` until every dataset's first preparation finished, and 503
 * `unavailable` when no dataset can be served because their stores cannot be reached.
 * 200 `degraded` too when the config source refused an edit (an invalid manifest): the replica
 * still serves the last good config, and `config` names the file and the problem.
 * 503 `draining` from SIGTERM on (http/drain.ts), whatever else holds, so endpoints drop the Pod.
 */
import type { ConfigStore } from '../config/store.js';

/** Datasets whose store cannot be reached right now. */
export interface StoreReadiness {
  unavailable: Record<string, string>;
}

export async function readinessOf(store: ConfigStore, storeHealth?: () => Promise<StoreReadiness>, draining?: () => boolean) {
  if (draining?.()) return { status: 503, body: { status: 'draining' } as Record<string, unknown> };
  const datasets: Record<string, ReturnType<typeof describeState> & { store?: string }> = Object.fromEntries(
    store.datasetIds().map((id) => [id, describeState(store, id)]),
  );
  const stores = (await storeHealth?.())?.unavailable ?? {};
  for (const [id, problem] of Object.entries(stores)) if (datasets[id]) datasets[id].store = `unreachable: ${problem}`;
  const entries = Object.entries(datasets);
  const starting = store.environment === undefined || entries.some(([, d]) => d.status === 'pending');
  const broken = entries.filter(([, d]) => d.status === 'failed' || d.store).map(([id]) => id);
  const servable = entries.filter(([, d]) => d.status === 'ready' && !d.store).length;
  const anyStoreDown = Object.keys(stores).length > 0;
  const refused = store.sourceProblem;
  const status = starting ? 'starting' : anyStoreDown && servable === 0 ? 'unavailable' : broken.length || refused ? 'degraded' : 'ready';
  const body = { status, environment: store.environment?.id, ...(broken.length ? { degraded: broken } : {}), ...(refused ? { config: refused } : {}), datasets };
  return { status: status === 'ready' || status === 'degraded' ? 200 : 503, body };
}

function describeState(store: ConfigStore, id: string) {
  const state = store.dataset(id)!;
  if (state.status === 'failed') return { status: state.status, generation: state.config.generation, problem: state.problem };
  if (state.status === 'ready' && state.warning) return { status: state.status, generation: state.config.generation, warning: state.warning };
  // Pending with a problem: its preparation failed and is retried (an unreachable store, a secret
  // file not mounted yet); the problem names what is missing (for a secret, the file expected).
  if (state.status === 'pending' && state.problem) return { status: state.status, generation: state.config.generation, problem: state.problem };
  return { status: state.status, generation: state.config.generation };
}
