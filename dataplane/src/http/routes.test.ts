import { expect } from 'chai';
import { DATASET_ROUTES, matchRoute } from './routes.js';

describe('dataset routes (http/routes.ts)', () => {
  const name = (rest: string[]) => matchRoute(rest)?.route.name;

  it('matches each endpoint, literal words before variables', () => {
    expect(name([])).to.equal('structured');
    expect(name(['echo'])).to.equal('echo');
    expect(name(['openapi'])).to.equal('openapi');
    expect(name(['docs'])).to.equal('docs');
    expect(name(['graphql'])).to.equal('graphql');
    expect(name(['raw-query'])).to.equal('rawQuery');
    expect(name(['queries', 'demo.PeopleInPostcode'])).to.equal('namedQuery');
    expect(name(['demo.Person'])).to.equal('list');
    expect(name(['demo.Person', 'ada'])).to.equal('read');
    expect(name(['demo.Person', 'ada', 'employer'])).to.equal('link');
    expect(name(['a', 'b', 'c', 'd'])).to.equal(undefined);
  });

  it('names the variable segments', () => {
    expect(matchRoute(['demo.Person', 'ada', 'employer'])?.params).to.deep.equal({ schema: 'demo.Person', id: 'ada', link: 'employer' });
    expect(matchRoute(['queries', 'q'])?.params).to.deep.equal({ query: 'q' });
    // Values are data, not keys of anything: "__proto__" is an id like another.
    expect(matchRoute(['demo.Person', '__proto__'])?.params.id).to.equal('__proto__');
  });

  it('has one route per name, each with methods', () => {
    const names = DATASET_ROUTES.map((r) => r.name);
    expect(new Set(names).size).to.equal(names.length);
    for (const route of DATASET_ROUTES) expect(route.methods).to.match(/^(GET|HEAD|POST)(,(GET|HEAD|POST))*$/);
  });
});
