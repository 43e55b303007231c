/** The dataset-config model: manifest validation errors and pure rendering. */
import { expect } from 'chai';
import { resolve } from 'node:path';
import { loadManifests, ManifestError, parseManifests } from './manifests.js';
import { renderDatasetConfig, renderEnvironmentConfig } from './render.js';
import { CidrSet, parseCidr } from './cidr.js';

const EXAMPLES = resolve(import.meta.dirname, '../examples');
const header = 'apiVersion: dataaccess.dev/v1alpha1\nkind: Dataset\nmetadata: {name: d}\nspec:\n  environment: local\n';

function problemsOf(yaml: string) {
  try {
    parseManifests(yaml, 'm.yaml');
  } catch (err) {
    expect(err).to.be.instanceOf(ManifestError);
    expect((err as ManifestError).message).to.contain('m.yaml');
    return (err as ManifestError).problems;
  }
  return [];
}

describe('model: manifests', () => {
  it('loads the examples: environment local, datasets demo and sealed', () => {
    const set = loadManifests(EXAMPLES);
    expect(set.environments.map((e) => e.metadata.name)).to.deep.equal(['local']);
    expect(set.datasets.map((d) => d.metadata.name).sort()).to.deep.equal(['demo', 'sealed']);
  });

  it('loads the warehouse examples: a snowflake and an iceberg dataset, and an executor naming a warehouse', () => {
    const set = loadManifests(resolve(EXAMPLES, 'warehouse'));
    expect(set.environments[0].spec.executors).to.deep.equal([{ name: 'reporting', warehouse: 'REPORTING_WH', description: 'the large warehouse for reports and raw SQL' }]);
    expect(set.datasets.map((d) => [d.metadata.name, d.spec.location.kind]).sort()).to.deep.equal([
      ['lake', 'iceberg'],
      ['sales', 'snowflake'],
    ]);
  });

  it('names the path and problem of a wrong type, an unknown location and a missing field', () => {
    expect(problemsOf(`${header}  location: {kind: mysql}\n  schemas:\n    a.B:\n      properties:\n        x: {type: int}\n`)).to.deep.include.members([
      { path: '$.spec.location.kind', message: 'must be one of "postgres", "snowflake", "iceberg", "dynamodb"' },
      { path: '$.spec.schemas["a.B"].properties.x.type', message: 'must be one of "string", "integer", "number", "boolean", "date", "timestamp", "object", "link", "links"' },
    ]);
    expect(problemsOf(`${header}  location: {kind: postgres}\n`)).to.deep.equal([{ path: '$.spec', message: 'missing required property "schemas"' }]);
  });

  it('rejects links to missing schemas, objects without properties and system property names', () => {
    const problems = problemsOf(
      `${header}  location: {kind: postgres}\n  schemas:\n    a.B:\n      properties:\n        boss: {type: link, schema: a.Nope}\n        addr: {type: object}\n        id: {type: string}\n`,
    );
    expect(problems).to.deep.include.members([
      { path: '$.spec.schemas["a.B"].properties.boss.schema', message: 'link target "a.Nope" is not a schema of this dataset' },
      { path: '$.spec.schemas["a.B"].properties.addr', message: 'an object needs "properties"' },
      { path: '$.spec.schemas["a.B"].properties.id', message: '"id" is a system property and cannot be declared' },
    ]);
  });

  it("refuses property and argument names every JavaScript object inherits (__proto__ would pollute the process's prototype), at any depth", () => {
    const problems = problemsOf(
      `${header}  location: {kind: postgres}\n  schemas:\n    a.B:\n      properties:\n        name: {type: string}\n        __proto__:\n          type: object\n          properties:\n            polluted: {type: string}\n        addr:\n          type: object\n          properties:\n            constructor: {type: string}\n        toString: {type: string}\n      required: [hasOwnProperty]\n  queries:\n    a.Q:\n      schema: a.B\n      arguments:\n        valueOf: {type: string, required: true}\n      filter: name == \${valueOf}\n`,
    );
    expect(problems).to.deep.include.members([
      { path: '$.spec.schemas["a.B"].properties.__proto__', message: '"__proto__" is reserved: every JavaScript object has a member of that name; name the property otherwise' },
      { path: '$.spec.schemas["a.B"].properties.addr.properties.constructor', message: '"constructor" is reserved: every JavaScript object has a member of that name; name the property otherwise' },
      { path: '$.spec.schemas["a.B"].properties.toString', message: '"toString" is reserved: every JavaScript object has a member of that name; name the property otherwise' },
      // Inherited, not declared: `in` would have found it.
      { path: '$.spec.schemas["a.B"].required[0]', message: 'required property "hasOwnProperty" is not declared' },
      { path: '$.spec.queries["a.Q"].arguments.valueOf', message: '"valueOf" is reserved: every JavaScript object has a member of that name; name the argument otherwise' },
    ]);
    // Names that only look alike stay allowed.
    expect(problemsOf(`${header}  location: {kind: postgres}\n  schemas:\n    a.B:\n      properties:\n        proto: {type: string}\n        _constructor: {type: string}\n        tostring: {type: string}\n`)).to.deep.equal([]);
  });

  it('rejects invalid names, unknown fields and bad CIDRs', () => {
    expect(problemsOf('apiVersion: dataaccess.dev/v1alpha1\nkind: Dataset\nmetadata: {name: Bad_Name}\nspec: {}\n')[0].path).to.equal('$.metadata.name');
    expect(problemsOf(`${header}  location: {kind: postgres, password: x}\n  schemas: {a.B: {properties: {}}}\n`)).to.deep.include({ path: '$.spec.location', message: 'unknown property "password"' });
    const env = problemsOf('apiVersion: dataaccess.dev/v1alpha1\nkind: Environment\nmetadata: {name: e}\nspec:\n  type: internal\n  gateways: {api: {firewall: {ipAddresses: {allowed: ["10.0.0.0/33"]}}}}\n');
    expect(env[0].path).to.equal('$.spec.gateways.api.firewall.ipAddresses.allowed[0]');
  });

  it('takes a default consistency from the enum only, and refuses ATOMIC_ALL as the default of an iceberg location', () => {
    const schemas = '  schemas: {a.B: {properties: {}}}\n';
    expect(problemsOf(`${header}  location: {kind: postgres, defaultConsistency: STRONG}\n${schemas}`)).to.deep.equal([
      { path: '$.spec.location.defaultConsistency', message: 'must be one of "ATOMIC_ALL", "ATOMIC", "QUORUM", "EVENTUAL", "ASYNC"' },
    ]);
    const iceberg = 'kind: iceberg, account: acme-main, database: DB, warehouse: WH, connectionSecretRef: {name: sf, key: login}, externalVolume: VOL, baseLocation: das/x';
    expect(problemsOf(`${header}  location: {${iceberg}, defaultConsistency: ATOMIC_ALL}\n${schemas}`)).to.deep.equal([
      { path: '$.spec.location.defaultConsistency', message: 'ATOMIC_ALL is not available on iceberg locations (Iceberg tables on the warehouse); atomicity on an open-table (Iceberg) location is per table: use ATOMIC' },
    ]);
    expect(problemsOf(`${header}  location: {${iceberg}, defaultConsistency: ATOMIC}\n${schemas}`)).to.deep.equal([]);
  });

  it('names the settings a warehouse location lacks, and refuses settings of another kind', () => {
    const schemas = '  schemas: {a.B: {properties: {}}}\n';
    expect(problemsOf(`${header}  location: {kind: snowflake, database: DB}\n${schemas}`)).to.deep.equal([
      { path: '$.spec.location.account', message: 'snowflake locations need "account" or "accessUrl"' },
      { path: '$.spec.location.warehouse', message: 'snowflake locations need "warehouse"' },
      { path: '$.spec.location.connectionSecretRef', message: 'snowflake locations need "connectionSecretRef"' },
    ]);
    const snowflake = 'kind: snowflake, accessUrl: "http://127.0.0.1:8085", database: DB, warehouse: WH, connectionSecretRef: {name: sf, key: login}';
    expect(problemsOf(`${header}  location: {${snowflake}}\n${schemas}`)).to.deep.equal([]);
    expect(problemsOf(`${header}  location: {${snowflake}, tablePrefix: x, externalVolume: V}\n${schemas}`)).to.deep.equal([
      { path: '$.spec.location.tablePrefix', message: 'is not a setting of snowflake locations (it belongs to dynamodb)' },
      { path: '$.spec.location.externalVolume', message: 'is not a setting of snowflake locations (it belongs to iceberg)' },
    ]);
    expect(problemsOf(`${header}  location: {kind: snowflake, accessUrl: "http://h", database: DB, warehouse: "WH; DROP TABLE X", connectionSecretRef: {name: sf, key: login}}\n${schemas}`)[0].path).to.equal('$.spec.location.warehouse');
    expect(problemsOf(`${header}  location: {kind: iceberg, accessUrl: "http://h", database: DB, warehouse: WH, connectionSecretRef: {name: sf, key: login}}\n${schemas}`)).to.deep.equal([
      { path: '$.spec.location.externalVolume', message: 'iceberg locations need "externalVolume"' },
      { path: '$.spec.location.baseLocation', message: 'iceberg locations need "baseLocation"' },
    ]);
  });

  it('names the document of a multi-document file', () => {
    const problems = problemsOf(`${header}  location: {kind: postgres}\n  schemas: {a.B: {properties: {}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n`);
    expect(problems[0].path).to.equal('$[1].apiVersion');
  });
});

describe('model: rendering', () => {
  const set = loadManifests(EXAMPLES);
  it('renders the dataset config with defaults, rawSqlEndpointEnabled included', () => {
    const demo = renderDatasetConfig(set.datasets.find((d) => d.metadata.name === 'demo')!);
    expect(demo.auth.iam).to.deep.equal({ principals: ['demo-admin', 'service-local-function-service-gateway'], rawSqlEndpointEnabled: true });
    expect(demo.location.defaultConsistency).to.equal('ATOMIC');
    expect(demo.deletionPolicy).to.equal('Retain');
    const sealed = renderDatasetConfig(set.datasets.find((d) => d.metadata.name === 'sealed')!);
    expect(sealed.auth.iam.rawSqlEndpointEnabled).to.equal(false);
    const eventual = structuredClone(set.datasets.find((d) => d.metadata.name === 'demo')!);
    eventual.spec.location.defaultConsistency = 'EVENTUAL';
    expect(renderDatasetConfig(eventual).location.defaultConsistency).to.equal('EVENTUAL');
  });
  it('renders the environment config with the function gateway name and firewall', () => {
    const env = renderEnvironmentConfig(set.environments[0]);
    expect(env.functionGateway).to.deep.equal({ enabled: true, name: 'service-local-function-service-gateway', invokers: [] });
    expect(env.gateways.iam).to.deep.equal({ enabled: true, trust: 'network', audiences: ['dataaccess.dev/default/local'], proxyFrom: [] });
    expect(env.gateways.api.firewall.managedRules).to.deep.equal(['common', 'knownBadInputs']);
    expect(env.uri).to.equal('k8s://default/environments/local');
  });
});

describe('model: CIDR', () => {
  it('parses IPv4 and IPv6 ranges and rejects malformed ones', () => {
    expect(parseCidr('10.0.0.0/8')).to.deep.equal({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseCidr('2001:db8::/32')?.family).to.equal('ipv6');
    for (const bad of ['10.0.0.0', '10.0.0.0/33', '::/129', 'x/1', '10.0.0.0/8/8', '10.0.0.0/ 8']) expect(parseCidr(bad), bad).to.equal(undefined);
  });
  it('matches addresses, IPv4-mapped IPv6 included', () => {
    const set = new CidrSet(['10.0.0.0/8', '2001:db8::/32']);
    expect(set.contains('10.1.2.3')).to.equal(true);
    expect(set.contains('::ffff:10.1.2.3')).to.equal(true);
    expect(set.contains('11.0.0.1')).to.equal(false);
    expect(set.contains('2001:db8::1')).to.equal(true);
    expect(set.contains('2001:db9::1')).to.equal(false);
    expect(set.contains('not-an-ip')).to.equal(false);
  });
});
