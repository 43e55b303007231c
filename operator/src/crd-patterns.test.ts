/**
 * The API server compiles every `pattern` of a CRD with Go's regexp (RE2) and refuses the whole
 * CRD when one does not compile, so `helm install` fails: checked here without a cluster. RE2 has
 * no lookaround or backreferences and refuses a repeat count above 1000 (use maxLength instead).
 */
import { expect } from 'chai';
import { datasetCrd, environmentCrd, type Schema } from './crds.js';

/** Every `pattern` in a schema tree (arrays too: their indices are keys), with its path. */
function* patterns(node: unknown, path = '$'): Generator<[string, string]> {
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node as Schema)) {
    if (key === 'pattern' && typeof value === 'string') yield [path, value];
    else yield* patterns(value, `${path}.${key}`);
  }
}

/** Why Go's regexp would refuse `pattern`, or undefined. */
export function re2Problem(pattern: string): string | undefined {
  for (const m of pattern.matchAll(/(?<!\\)\{(\d+)(?:,(\d*))?\}/g)) {
    if (Number(m[1]) > 1000 || (m[2] && Number(m[2]) > 1000)) return `repeat count ${m[0]} is above 1000`;
  }
  if (/\(\?[=!<]/.test(pattern)) return 'lookaround is not supported';
  if (/\\[1-9]/.test(pattern)) return 'backreferences are not supported';
  return undefined;
}

describe('operator: CRD patterns compile in the API server (RE2)', () => {
  it('the checker catches what the API server refuses', () => {
    expect(re2Problem('^[a-z]{1,1024}$')).to.equal('repeat count {1,1024} is above 1000');
    expect(re2Problem('^a{1001}$')).to.match(/above 1000/);
    expect(re2Problem('^(?!x)a$')).to.match(/lookaround/);
    expect(re2Problem('^[-._a-zA-Z0-9]{1,253}$')).to.equal(undefined);
  });

  for (const [name, crd] of [['Environment', environmentCrd()], ['Dataset', datasetCrd()]] as const) {
    it(`every pattern of the ${name} CRD`, () => {
      const found = [...patterns(crd)];
      expect(found.length).to.be.greaterThan(3);
      expect(found.map(([path, p]) => [path, re2Problem(p)]).filter(([, problem]) => problem)).to.deep.equal([]);
    });
  }
});
