import { expect } from 'chai';
import { pino } from 'pino';
import { discoverCapabilities, watchServedVersions } from './discovery.js';

const logger = pino({ level: 'silent' });
const modern = { groups: [{ versions: [{ groupVersion: 'autoscaling/v2' }, { groupVersion: 'autoscaling/v1' }] }, { versions: [{ groupVersion: 'policy/v1' }] }] };
const old = { groups: [{ versions: [{ groupVersion: 'autoscaling/v2beta2' }] }, { versions: [{ groupVersion: 'policy/v1beta1' }] }] };

/** An API server that refuses the first `failures` discoveries, then answers with `lists` in turn. */
function apiServer(failures: number, ...lists: object[]) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    async getJson<T>(path: string): Promise<T> {
      expect(path).to.equal('/apis');
      calls++;
      if (calls <= failures) throw new Error('connect ECONNREFUSED');
      return lists[Math.min(calls - failures - 1, lists.length - 1)] as T;
    },
  };
}

describe('operator: API discovery', () => {
  it('retries until the API server answers, then uses the versions it serves (never assumes v2beta2/v1beta1)', async () => {
    const server = apiServer(3, modern);
    const capabilities = await discoverCapabilities(server, logger, { baseMs: 1, maxMs: 5 });
    expect(server.calls).to.equal(4);
    expect(capabilities).to.include({ autoscaling: 'autoscaling/v2', policy: 'policy/v1' });
  });

  it('an older cluster gets the older versions', async () => {
    expect(await discoverCapabilities(apiServer(0, old), logger)).to.include({ autoscaling: 'autoscaling/v2beta2', policy: 'policy/v1beta1' });
  });

  it('re-discovers periodically and reports a change (a failed check changes nothing)', async () => {
    const current = await discoverCapabilities(apiServer(0, old), logger);
    const server = apiServer(0, old, { groups: [] }, modern);
    const failing = { getJson: async () => Promise.reject(new Error('down')) };
    let changed: unknown;
    const quiet = watchServedVersions(failing, logger, current, () => (changed = 'failing'), 5);
    const watch = await new Promise<unknown>((resolve) => {
      const w = watchServedVersions(server, logger, current, (next) => {
        w.stop();
        resolve(next);
      }, 5);
    });
    quiet.stop();
    expect(changed).to.equal(undefined);
    expect(watch).to.include({ autoscaling: 'autoscaling/v2', policy: 'policy/v1' });
  });
});
