/** List indexes: names within PostgreSQL's 63 bytes and distinct, COLLATE "C" on text, additive and planned once. */
import { expect } from 'chai';
import { renderDatasetConfig } from '../../../../model/render.js';
import { planSchemaChanges } from './ddl.js';
import { sortIndexes, sortIndexName } from './indexes.js';
import { tableLayout } from './sql.js';

const dataset = renderDatasetConfig({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'demo', generation: 1 },
  spec: {
    environment: 'local',
    location: { kind: 'postgres', databaseSchema: 'demo' },
    schemas: {
      'demo.Person': {
        properties: {
          name: { type: 'string', sortable: true },
          email: { type: 'string' },
          age: { type: 'integer', sortable: true },
          address: { type: 'object', properties: { postcode: { type: 'string', sortable: true } } },
          employer: { type: 'link', schema: 'demo.Person', sortable: true },
        },
      },
    },
  },
});
const layout = tableLayout(dataset, 'demo.Person', dataset.schemas['demo.Person']);

describe('postgres list indexes (pure)', () => {
  it('one on the id and one per sortable property on (column, id), text COLLATE "C"', () => {
    expect(sortIndexes(layout).map((i) => i.sql)).to.deep.equal([
      'CREATE INDEX IF NOT EXISTS "demo_person_id_sort" ON "demo"."demo_person" ("id" COLLATE "C")',
      'CREATE INDEX IF NOT EXISTS "demo_person_name_sort" ON "demo"."demo_person" ("name" COLLATE "C", "id" COLLATE "C")',
      'CREATE INDEX IF NOT EXISTS "demo_person_age_sort" ON "demo"."demo_person" ("age", "id" COLLATE "C")',
      'CREATE INDEX IF NOT EXISTS "demo_person_address_postcode_sort" ON "demo"."demo_person" ("address_postcode" COLLATE "C", "id" COLLATE "C")',
      'CREATE INDEX IF NOT EXISTS "demo_person_employer_id_sort" ON "demo"."demo_person" ("employer_id" COLLATE "C", "id" COLLATE "C")',
    ]);
  });

  it('names longer than 63 bytes keep a prefix and a digest, so they stay distinct', () => {
    const table = `acme_${'very_long_schema_name_'.repeat(2)}person`;
    const a = sortIndexName(table, 'address_postcode_of_the_main_residence');
    const b = sortIndexName(table, 'address_postcode_of_the_main_office');
    expect(a.length).to.be.at.most(63);
    expect(b.length).to.be.at.most(63);
    expect(a).not.to.equal(b);
    expect(sortIndexName(table, 'address_postcode_of_the_main_residence')).to.equal(a);
  });

  it('plans only the indexes not there yet, after the tables', () => {
    const fresh = planSchemaChanges([layout], []).statements;
    expect(fresh.filter((s) => s.startsWith('CREATE INDEX'))).to.have.length(5);
    expect(fresh.findIndex((s) => s.startsWith('CREATE INDEX'))).to.be.greaterThan(fresh.findIndex((s) => s.startsWith('CREATE TABLE')));
    const existing = ['demo_person_id_sort', 'demo_person_name_sort', 'demo_person_pkey'];
    expect(planSchemaChanges([layout], [], existing).statements.filter((s) => s.startsWith('CREATE INDEX')).map((s) => s.split('"')[1])).to.deep.equal([
      'demo_person_age_sort',
      'demo_person_address_postcode_sort',
      'demo_person_employer_id_sort',
    ]);
  });
});
