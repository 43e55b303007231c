import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { renderDatasetConfig, renderEnvironmentConfig } from '../../../model/render.js';
import type { DatasetConfig } from '../../../model/types.js';
import { RecordingSink } from '../../test-support/recording-sink.js';
import { ConfigMapError, configMapHandlers, configMapSelector, parseConfigMap } from './kube-source.js';

const configMap = (labels: Record<string, string>, data: Record<string, string>, name = 'x') => ({ metadata: { name, labels }, data });

/** Configs as the operator renders and publishes them. */
const environmentJson = JSON.stringify(renderEnvironmentConfig({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', metadata: { name: 'local', namespace: 'ns' }, spec: { type: 'internal' } }));
const datasetConfig = (generation: number, extra: Record<string, unknown> = {}): DatasetConfig => ({
  ...renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'demo', generation },
    spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'demo.Person': { properties: { name: { type: 'string' } } } }, auth: { iam: { rawSqlEndpointEnabled: true } } },
  }),
  ...extra,
});
const datasetMap = (json: string) => configMap({ 'dataaccess.dev/config': 'dataset' }, { 'dataset.json': json }, 'local-dataset-demo');

describe('data plane: ConfigMap config source, parsing', () => {
  it('selects the ConfigMaps the operator renders for one environment', () => {
    expect(configMapSelector('local')).to.equal('dataaccess.dev/environment=local,app.kubernetes.io/managed-by=data-access-operator');
  });

  it('parses environment.json and dataset.json by the config label', () => {
    const env = parseConfigMap(configMap({ 'dataaccess.dev/config': 'environment' }, { 'environment.json': environmentJson }));
    expect(env).to.deep.equal({ kind: 'environment', config: JSON.parse(environmentJson) });
    const dataset = parseConfigMap(datasetMap(JSON.stringify(datasetConfig(1))));
    expect(dataset?.kind).to.equal('dataset');
    expect((dataset?.config as DatasetConfig).auth.iam.rawSqlEndpointEnabled).to.equal(true);
  });

  it('falls back to the key when the label is missing; ignores other ConfigMaps', () => {
    expect(parseConfigMap(configMap({}, { 'dataset.json': JSON.stringify(datasetConfig(1)) }))?.kind).to.equal('dataset');
    expect(parseConfigMap(configMap({}, { 'other.txt': 'x' }))).to.equal(undefined);
  });

  it('rejects malformed content with a message saying what is wrong', () => {
    const dataset = (text: string) => () => parseConfigMap(datasetMap(text));
    expect(dataset('{"id": ')).to.throw(ConfigMapError, /dataset.json is not JSON/);
    expect(dataset('[1]')).to.throw(/must hold a JSON object/);
    expect(dataset('{"schemas":{}}')).to.throw(/dataset.json is not a valid dataset config: \$: missing required property "id"/);
    expect(() => parseConfigMap(configMap({ 'dataaccess.dev/config': 'environment' }, {}))).to.throw(/environment.json is missing/);
  });

  it('validates the JSON against the rendered config schema and names the JSON path of each problem', () => {
    const bad = { ...datasetConfig(2), location: { kind: 'mysql', defaultConsistency: 'ATOMIC' }, generation: 'two' };
    let error: unknown;
    try {
      parseConfigMap(datasetMap(JSON.stringify(bad)));
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(ConfigMapError);
    const problems = (error as ConfigMapError).problems.map((p) => p.path);
    expect(problems).to.include.members(['$.generation', '$.location.kind']);
    expect((error as Error).message).to.contain('$.location.kind: must be one of').and.contain('$.generation: must be integer');
    // A cross-check too: a link to a schema the dataset does not have.
    const dangling = datasetConfig(2);
    dangling.schemas['demo.Person'].properties.boss = { type: 'link', schema: 'demo.Boss' };
    expect(() => parseConfigMap(datasetMap(JSON.stringify(dangling)))).to.throw(/\$\.schemas\["demo\.Person"\]\.properties\.boss\.schema: link target "demo\.Boss"/);
    // An environment config without what rendering fills in.
    expect(() => parseConfigMap(configMap({ 'dataaccess.dev/config': 'environment' }, { 'environment.json': '{"id":"local","type":"internal"}' }))).to.throw(
      /environment.json is not a valid environment config: \$: missing required property "namespace"/,
    );
  });
});

describe('data plane: ConfigMap config source, events', () => {
  const setup = () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
    const sink = new RecordingSink();
    return { sink, lines, ...configMapHandlers('ns', sink, logger) };
  };

  it('an invalid update is logged with the ConfigMap and the JSON path, and the served config stays', () => {
    const { sink, lines, deliver } = setup();
    deliver(datasetMap(JSON.stringify(datasetConfig(1))));
    const invalid = datasetConfig(2, { deletionPolicy: 'Sometimes' });
    expect(() => deliver(datasetMap(JSON.stringify(invalid)))).not.to.throw();
    expect(() => deliver(datasetMap('{"id": "demo", '))).not.to.throw();
    expect(sink.calls).to.deep.equal(['upsert demo g1']);
    expect(sink.datasets.get('demo')?.generation).to.equal(1);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).to.have.length(2);
    expect(warnings[0]).to.deep.include({ configMap: 'ns/local-dataset-demo', msg: 'skipping malformed config; the last good one stays in force' });
    expect(warnings[0].problems).to.deep.equal([{ path: '$.deletionPolicy', message: 'must be one of "Retain", "Delete"' }]);
    expect(warnings[0].err).to.contain('$.deletionPolicy');
    expect(warnings[1]).to.deep.include({ configMap: 'ns/local-dataset-demo', problems: [] });
    expect(warnings[1].err).to.contain('not JSON');
    // Reported to the store (/readyz: degraded, with the ConfigMap and the problem) while it stands.
    expect(sink.problem?.file).to.equal('ConfigMap ns/local-dataset-demo');
    expect(sink.problem?.problem).to.contain('not JSON').and.contain('the previous config keeps serving');
    // A valid next generation is served again, and the report goes.
    deliver(datasetMap(JSON.stringify(datasetConfig(3))));
    expect(sink.calls).to.deep.equal(['upsert demo g1', 'upsert demo g3']);
    expect(sink.problem).to.equal(undefined);
  });

  it('an invalid environment config does not replace the one in force; a delete removes the dataset its ConfigMap served', () => {
    const { sink, deliver, remove } = setup();
    deliver(configMap({ 'dataaccess.dev/config': 'environment' }, { 'environment.json': environmentJson }));
    deliver(configMap({ 'dataaccess.dev/config': 'environment' }, { 'environment.json': JSON.stringify({ ...JSON.parse(environmentJson), type: 'galactic' }) }));
    expect(sink.environment?.type).to.equal('internal');
    expect(sink.problem?.file).to.equal('ConfigMap ns/x');
    deliver(datasetMap('not json'));
    expect(sink.problem?.problem, 'two refused: the first named, the count of the others').to.contain('and 1 more ConfigMap refused');
    deliver(datasetMap(JSON.stringify(datasetConfig(1))));
    expect(sink.problem?.file).to.equal('ConfigMap ns/x');
    remove(configMap({ 'dataaccess.dev/config': 'environment' }, {}));
    expect(sink.problem, 'a refused ConfigMap deleted is no longer reported').to.equal(undefined);
    remove(datasetMap('{}'));
    expect(sink.calls).to.deep.equal(['environment local', 'upsert demo g1', 'remove demo']);
  });
});
