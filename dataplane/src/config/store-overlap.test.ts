/**
 * The config store never serves two datasets on overlapping storage (model/storage.ts): the one it
 * holds first keeps the storage, the other is `failed` naming it, and gets another look when the
 * holder goes or moves. Sources deliver in name order, so at start the first by name wins.
 */
import { expect } from 'chai';
import type { DatasetConfig } from '../../../model/types.js';
import pino from 'pino';
import { configMapHandlers } from './kube-source.js';
import { ConfigStore } from './store.js';

const config = (id: string, databaseSchema: string, generation = 1): DatasetConfig => ({
  id,
  environment: 'local',
  generation,
  location: { kind: 'postgres', databaseSchema, defaultConsistency: 'ATOMIC' },
  auth: { iam: { principals: [], rawSqlEndpointEnabled: false }, public: { enabled: false, subjects: [] } },
  caller: { super: [], anon: false },
  schemas: { 'a.B': { properties: { n: { type: 'string' } } } },
  queries: {},
  deletionPolicy: 'Retain',
});

describe('data plane: config store keeps datasets\' storage apart', () => {
  let prepared: string[];
  let store: ConfigStore;
  beforeEach(() => {
    prepared = [];
    store = new ConfigStore({ prepare: async (c) => void prepared.push(`${c.id}@${c.location.databaseSchema}`) });
  });

  it('the first dataset keeps the schema; the second is failed naming it and never prepared', async () => {
    store.upsertDataset(config('demo', 'demo'));
    store.upsertDataset(config('mallory', 'demo'));
    await store.settled();
    expect(store.dataset('demo')?.status).to.equal('ready');
    const refused = store.dataset('mallory');
    expect(refused?.status).to.equal('failed');
    expect((refused as { problem: string }).problem).to.equal(
      'storage in use: its PostgreSQL schema "demo" (spec.location.databaseSchema) is dataset "demo"\'s; a dataset\'s storage may not overlap another\'s',
    );
    expect(prepared).to.deep.equal(['demo@demo']);
  });

  it('a served dataset whose update would overlap keeps serving its previous config, with a warning', async () => {
    store.upsertDataset(config('demo', 'demo'));
    store.upsertDataset(config('other', 'other'));
    await store.settled();
    store.upsertDataset(config('other', 'demo', 2));
    await store.settled();
    const state = store.dataset('other') as { status: string; config: DatasetConfig; warning?: string };
    expect(state.status).to.equal('ready');
    expect(state.config.location.databaseSchema).to.equal('other');
    expect(state.warning).to.contain('generation 2 refused: storage in use').and.contain('dataset "demo"');
    // The refused config holds nothing: demo's own update is not blocked by it.
    store.upsertDataset(config('demo', 'demo', 2));
    await store.settled();
    expect(store.dataset('demo')?.status).to.equal('ready');
    expect(store.dataset('demo')?.config.generation).to.equal(2);
  });

  it('ConfigMaps (the cluster\'s source) too: the later one is refused while the first serves, and served once the first\'s ConfigMap goes', async () => {
    const { deliver, remove } = configMapHandlers('team-a', store, pino({ level: 'silent' }));
    const configMap = (c: DatasetConfig) => ({ metadata: { name: `local-dataset-${c.id}`, labels: { 'dataaccess.dev/config': 'dataset' } }, data: { 'dataset.json': JSON.stringify(c) } });
    deliver(configMap(config('demo', 'demo')));
    deliver(configMap(config('mallory', 'demo')));
    await store.settled();
    expect(store.dataset('demo')?.status).to.equal('ready');
    expect(store.dataset('mallory')?.status).to.equal('failed');
    remove(configMap(config('demo', 'demo')));
    await store.settled();
    expect(store.dataset('mallory')?.status).to.equal('ready');
  });

  it('when the holder goes (or moves), the refused dataset is prepared and served', async () => {
    store.upsertDataset(config('demo', 'demo'));
    store.upsertDataset(config('copy', 'demo'));
    store.upsertDataset(config('third', 'demo'));
    await store.settled();
    store.removeDataset('demo');
    await store.settled();
    // In name order: copy gets the schema, third stays refused (now naming copy).
    expect(store.dataset('copy')?.status).to.equal('ready');
    expect((store.dataset('third') as { problem: string }).problem).to.contain('dataset "copy"');
    store.upsertDataset(config('copy', 'elsewhere', 2));
    await new Promise((r) => setTimeout(r, 10)); // the re-check runs after the upsert returns
    await store.settled();
    expect(store.dataset('third')?.status).to.equal('ready');
    expect(prepared).to.deep.equal(['demo@demo', 'copy@demo', 'copy@elsewhere', 'third@demo']);
  });
});
