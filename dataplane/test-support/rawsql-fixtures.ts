/** Test fixtures for the raw SQL suites: the demo dataset of examples/dataset-demo.yaml, rendered. */
import type { DatasetConfig, RecordSchemaDef } from '../../model/types.js';

export const DEMO_SCHEMAS: Record<string, RecordSchemaDef> = {
  'demo.Company': { properties: { name: { type: 'string' } } },
  'demo.Person': {
    properties: {
      name: { type: 'string' },
      email: { type: 'string' },
      age: { type: 'integer' },
      address: { type: 'object', properties: { street: { type: 'string' }, postcode: { type: 'string' } } },
      employer: { type: 'link', schema: 'demo.Company' },
    },
  },
};

export function demoDataset(overrides: { id?: string; databaseSchema?: string; rawSqlEndpointEnabled?: boolean; schemas?: Record<string, RecordSchemaDef> } = {}): DatasetConfig {
  return {
    id: overrides.id ?? 'demo',
    environment: 'local',
    generation: 1,
    location: { kind: 'postgres', databaseSchema: overrides.databaseSchema ?? 'demo', defaultConsistency: 'ATOMIC' },
    auth: {
      iam: { principals: ['demo-admin'], rawSqlEndpointEnabled: overrides.rawSqlEndpointEnabled ?? true },
      public: { enabled: true, subjects: [] },
    },
    caller: { super: ['demo-admin'], anon: false },
    schemas: overrides.schemas ?? DEMO_SCHEMAS,
    deletionPolicy: 'Retain',
  };
}
