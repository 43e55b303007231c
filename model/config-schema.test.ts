/** The rendered configs' validation (what the data plane checks in a ConfigMap before serving it). */
import { expect } from 'chai';
import { resolve } from 'node:path';
import { loadManifests } from './manifests.js';
import { renderDatasetConfig, renderEnvironmentConfig } from './render.js';
import { checkDatasetConfig, checkEnvironmentConfig } from './validate.js';

const EXAMPLES = resolve(import.meta.dirname, '../examples');
/** A config as it travels: through JSON (undefined fields gone). */
const asJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe('model: rendered config validation', () => {
  const set = loadManifests(EXAMPLES);
  const demo = () => asJson(renderDatasetConfig(set.datasets.find((d) => d.metadata.name === 'demo')!));
  const local = () => asJson(renderEnvironmentConfig(set.environments[0]));

  it('accepts every rendered example config', () => {
    for (const dataset of set.datasets) expect(checkDatasetConfig(asJson(renderDatasetConfig(dataset))), dataset.metadata.name).to.deep.equal([]);
    expect(checkEnvironmentConfig(local())).to.deep.equal([]);
    const minimal = renderEnvironmentConfig({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', metadata: { name: 'bare' }, spec: { type: 'internal' } });
    expect(checkEnvironmentConfig(asJson(minimal))).to.deep.equal([]);
  });

  it('names the JSON path of a wrong, missing or unknown field in a dataset config', () => {
    const wrongKind = { ...demo(), location: { ...demo().location, kind: 'mysql' } };
    expect(checkDatasetConfig(wrongKind)).to.deep.include({ path: '$.location.kind', message: 'must be one of "postgres", "snowflake", "iceberg", "dynamodb"' });
    const { generation: _, ...noGeneration } = demo();
    expect(checkDatasetConfig(noGeneration)).to.deep.equal([{ path: '$', message: 'missing required property "generation"' }]);
    const badType = demo();
    (badType.schemas['demo.Person'].properties.age as { type: string }).type = 'int';
    expect(checkDatasetConfig(badType).map((p) => p.path)).to.include(`$.schemas["demo.Person"].properties.age.type`);
    expect(checkDatasetConfig({ ...demo(), extra: 1 })).to.deep.equal([{ path: '$', message: 'unknown property "extra"' }]);
    const noPrincipals = demo();
    delete (noPrincipals.auth.iam as Partial<typeof noPrincipals.auth.iam>).principals;
    expect(checkDatasetConfig(noPrincipals)).to.deep.equal([{ path: '$.auth.iam', message: 'missing required property "principals"' }]);
    expect(checkDatasetConfig([1])).to.deep.equal([{ path: '$', message: 'must be object' }]);
  });

  it('runs the cross-checks too: a link to a schema the dataset lacks', () => {
    const config = demo();
    config.schemas['demo.Person'].properties.employer = { type: 'link', schema: 'demo.Nope' };
    expect(checkDatasetConfig(config)).to.deep.include({ path: '$.schemas["demo.Person"].properties.employer.schema', message: 'link target "demo.Nope" is not a schema of this dataset' });
  });

  it('names the JSON path of a problem in an environment config', () => {
    const config = local();
    expect(checkEnvironmentConfig({ ...config, functionGateway: { enabled: true, invokers: [] } })).to.deep.equal([{ path: '$.functionGateway', message: 'missing required property "name"' }]);
    expect(checkEnvironmentConfig({ id: 'local', type: 'internal' })[0]).to.deep.equal({ path: '$', message: 'missing required property "namespace"' });
    const idp = { issuer: 'https://issuer', audiences: ['a'], algorithms: ['RS256'], clockSkewSeconds: 30 };
    expect(checkEnvironmentConfig({ ...config, identityProvider: idp })).to.deep.equal([{ path: '$.identityProvider', message: 'needs jwksUri or jwks (or development: true)' }]);
  });
});
