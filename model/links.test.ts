/** Inverse links (`type: links`) in dataset specs: accepted when they point back, refused with a path otherwise. */
import { expect } from 'chai';
import { checkDatasetSpec } from './validate.js';

function spec(company: Record<string, unknown>, person: Record<string, unknown> = { employer: { type: 'link', schema: 'demo.Company' } }, required?: string[]) {
  return {
    environment: 'local',
    location: { kind: 'postgres' },
    schemas: { 'demo.Company': { properties: { name: { type: 'string' }, ...company }, ...(required ? { required } : {}) }, 'demo.Person': { properties: person } },
  };
}
const at = (name: string, suffix = '') => `$.spec.schemas["demo.Company"].properties.${name}${suffix}`;

describe('model: inverse links (links)', () => {
  it('accepts an inverse link that names a link of the source schema pointing here', () => {
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Person', property: 'employer' } }))).to.deep.equal([]);
  });

  it('refuses a missing field, an unknown schema or property, a link to another schema, nesting and required', () => {
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Person' } }))).to.deep.equal([{ path: at('employees'), message: 'an inverse link (links) needs "schema" and "property"' }]);
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Nobody', property: 'employer' } }))).to.deep.equal([
      { path: at('employees', '.schema'), message: '"demo.Nobody" is not a schema of this dataset' },
    ]);
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Person', property: 'boss' } }))).to.deep.equal([
      { path: at('employees', '.property'), message: '"boss" is not a link property of demo.Person' },
    ]);
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Person', property: 'friend' } }, { friend: { type: 'link', schema: 'demo.Person' } }))).to.deep.equal([
      { path: at('employees', '.property'), message: 'demo.Person.friend links to demo.Person, not to demo.Company' },
    ]);
    expect(checkDatasetSpec(spec({ staff: { type: 'object', properties: { all: { type: 'links', schema: 'demo.Person', property: 'employer' } } } }))).to.deep.equal([
      { path: at('staff', '.properties.all'), message: 'an inverse link (links) must be a top-level property' },
    ]);
    expect(checkDatasetSpec(spec({ employees: { type: 'links', schema: 'demo.Person', property: 'employer' } }, undefined, ['employees']))).to.deep.equal([
      { path: '$.spec.schemas["demo.Company"].required[0]', message: '"employees" is an inverse link (not stored) and cannot be required' },
    ]);
    expect(checkDatasetSpec(spec({ boss: { type: 'link', schema: 'demo.Person', property: 'employer' } }))).to.deep.equal([
      { path: at('boss', '.property'), message: 'only an inverse link (links) has "property"' },
    ]);
  });
});
