/** The `sortable` flag of properties: accepted on scalars (nested too) and links, refused with a path elsewhere. */
import { expect } from 'chai';
import { checkDatasetSpec } from './validate.js';

const spec = (properties: Record<string, unknown>) => ({
  environment: 'local',
  location: { kind: 'postgres' },
  schemas: {
    'demo.Company': { properties: { name: { type: 'string' }, employees: { type: 'links', schema: 'demo.Person', property: 'employer' } } },
    'demo.Person': { properties: { employer: { type: 'link', schema: 'demo.Company' }, ...properties } },
  },
});
const at = (path: string) => `$.spec.schemas["demo.Person"].properties.${path}`;

describe('model: sortable properties', () => {
  it('accepts sortable on every scalar type, on a nested scalar and on a link', () => {
    const scalars = Object.fromEntries(['string', 'integer', 'number', 'boolean', 'date', 'timestamp'].map((type) => [`a_${type}`, { type, sortable: true }]));
    expect(checkDatasetSpec(spec({ ...scalars, address: { type: 'object', properties: { postcode: { type: 'string', sortable: true } } }, boss: { type: 'link', schema: 'demo.Person', sortable: false } }))).to.deep.equal([]);
  });

  it('refuses it on an object and an inverse link, and a value that is not a boolean', () => {
    expect(checkDatasetSpec(spec({ address: { type: 'object', sortable: true, properties: { street: { type: 'string' } } } }))).to.deep.equal([
      { path: at('address.sortable'), message: 'an object cannot be sortable; mark properties inside it' },
    ]);
    const links = spec({});
    (links.schemas['demo.Company'].properties.employees as Record<string, unknown>).sortable = true;
    expect(checkDatasetSpec(links)).to.deep.equal([
      { path: '$.spec.schemas["demo.Company"].properties.employees.sortable', message: 'an inverse link (links) is not stored and cannot be sortable; mark the link property of its source schema' },
    ]);
    const problems = checkDatasetSpec(spec({ name: { type: 'string', sortable: 'yes' } }));
    expect(problems.map((p) => p.path)).to.deep.equal([at('name.sortable')]);
  });
});
