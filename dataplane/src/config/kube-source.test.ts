import { expect } from 'chai';
import { configMapSelector, parseConfigMap } from './kube-source.js';

const configMap = (labels: Record<string, string>, data: Record<string, string>) => ({ metadata: { name: 'x', labels }, data });

describe('data plane: ConfigMap config source, parsing', () => {
  it('selects the ConfigMaps the operator renders for one environment', () => {
    expect(configMapSelector('local')).to.equal('dataaccess.dev/environment=local,app.kubernetes.io/managed-by=data-access-operator');
  });

  it('parses environment.json and dataset.json by the config label', () => {
    const env = parseConfigMap(configMap({ 'dataaccess.dev/config': 'environment' }, { 'environment.json': '{"id":"local","type":"internal"}' }));
    expect(env).to.deep.equal({ kind: 'environment', config: { id: 'local', type: 'internal' } });
    const dataset = parseConfigMap(configMap({ 'dataaccess.dev/config': 'dataset' }, { 'dataset.json': '{"id":"demo","schemas":{},"auth":{"iam":{"rawSqlEndpointEnabled":true}}}' }));
    expect(dataset?.kind).to.equal('dataset');
    expect((dataset?.config as { auth: { iam: { rawSqlEndpointEnabled: boolean } } }).auth.iam.rawSqlEndpointEnabled).to.equal(true);
  });

  it('falls back to the key when the label is missing; ignores other ConfigMaps', () => {
    expect(parseConfigMap(configMap({}, { 'dataset.json': '{"id":"demo","schemas":{}}' }))?.kind).to.equal('dataset');
    expect(parseConfigMap(configMap({}, { 'other.txt': 'x' }))).to.equal(undefined);
  });

  it('rejects malformed content with a message saying what is wrong', () => {
    const dataset = (text: string) => () => parseConfigMap(configMap({ 'dataaccess.dev/config': 'dataset' }, { 'dataset.json': text }));
    expect(dataset('{"id": ')).to.throw(/dataset.json is not JSON/);
    expect(dataset('[1]')).to.throw(/must hold a JSON object/);
    expect(dataset('{"schemas":{}}')).to.throw(/has no "id"/);
    expect(dataset('{"id":"demo"}')).to.throw(/has no "schemas"/);
    expect(() => parseConfigMap(configMap({ 'dataaccess.dev/config': 'environment' }, {}))).to.throw(/environment.json is missing/);
  });
});
