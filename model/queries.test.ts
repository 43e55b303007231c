import { expect } from 'chai';
import { loadManifests, parseManifests } from './manifests.js';
import { sqlTokens } from './queries.js';
import type { DatasetSpec, LocationKind } from './types.js';
import { checkDatasetSpec } from './validate.js';

const WAREHOUSE_SETTINGS = { accessUrl: 'http://127.0.0.1:8085', database: 'DB', warehouse: 'WH', connectionSecretRef: { name: 'sf', key: 'login' } };

const spec = (queries: Record<string, unknown>, kind: LocationKind = 'postgres'): DatasetSpec =>
  ({
    environment: 'local',
    location: { kind, ...(kind === 'snowflake' || kind === 'iceberg' ? WAREHOUSE_SETTINGS : {}), ...(kind === 'iceberg' ? { externalVolume: 'V', baseLocation: 'b' } : {}) },
    schemas: {
      'demo.Company': { properties: { name: { type: 'string' } } },
      'demo.Person': {
        properties: {
          name: { type: 'string' },
          age: { type: 'integer' },
          born: { type: 'date' },
          address: { type: 'object', properties: { postcode: { type: 'string' } } },
          employer: { type: 'link', schema: 'demo.Company' },
        },
      },
    },
    queries,
  }) as DatasetSpec;

const Q = '$.spec.queries["demo.Q"]';
const problems = (query: unknown, kind?: LocationKind) => checkDatasetSpec(spec({ 'demo.Q': query }, kind));

describe('model: query schemas (spec.queries)', () => {
  it('the example manifests are valid and declare demo.PeopleInPostcode', () => {
    const examples = loadManifests('examples');
    const demo = examples.datasets.find((d) => d.metadata.name === 'demo')!;
    expect(checkDatasetSpec(demo.spec)).to.deep.equal([]);
    expect(demo.spec.queries!['demo.PeopleInPostcode']).to.deep.include({ schema: 'demo.Person', filter: 'address.postcode == ${postcode}', sort: 'name' });
  });

  it('accepts filter-based queries with typed arguments, and SQL queries on SQL locations', () => {
    expect(problems({ schema: 'demo.Person', arguments: { pc: { type: 'string', required: true }, min: { type: 'long' } }, filter: 'address.postcode == ${pc} and age >= ${min}', sort: 'age:desc' })).to.deep.equal([]);
    expect(problems({ schema: 'demo.Person' })).to.deep.equal([]);
    expect(problems({ schema: 'demo.Person', arguments: { c: { type: 'uuid' } }, filter: 'employer.id in (${c}, "x")' })).to.deep.equal([]);
    for (const kind of ['postgres', 'snowflake', 'iceberg'] as const) {
      expect(problems({ sql: 'SELECT @{p.name} FROM @{p} WHERE @{p.employer.id} = ${c}', using: { p: 'demo.Person' }, arguments: { c: { type: 'string' } } }, kind)).to.deep.equal([]);
    }
  });

  it('a filter that does not parse or type is reported with its JSON path and position', () => {
    expect(problems({ schema: 'demo.Person', filter: 'age >> 3' })).to.deep.equal([{ path: `${Q}.filter`, message: 'expected a value (a quoted literal, a number, true, false or ${argument}), found ">" at position 6' }]);
    expect(problems({ schema: 'demo.Person', filter: "address.zip == 'N1'" })[0]).to.deep.equal({ path: `${Q}.filter`, message: 'unknown property "address.zip" (known here: postcode) at position 1' });
    expect(problems({ schema: 'demo.Person', filter: "age == 'old'" })[0].message).to.match(/'old' is not a valid value for age \(integer\).* at position 8/);
  });

  it('every ${arg} is declared, and every declared argument is used', () => {
    expect(problems({ schema: 'demo.Person', filter: 'name == ${who}' })).to.deep.equal([{ path: `${Q}.filter`, message: 'unknown argument ${who} at position 9' }]);
    expect(problems({ schema: 'demo.Person', arguments: { who: { type: 'string' }, extra: { type: 'integer' } }, filter: 'name == ${who}' })).to.deep.equal([
      { path: `${Q}.arguments.extra`, message: 'argument "extra" is declared but the filter does not use ${extra}' },
    ]);
    expect(problems({ schema: 'demo.Person', arguments: { who: { type: 'string' } } })).to.deep.equal([{ path: `${Q}.arguments.who`, message: 'argument "who" is declared but the filter does not use ${who}' }]);
  });

  it("an argument's type must fit each property it is compared with", () => {
    expect(problems({ schema: 'demo.Person', arguments: { pc: { type: 'integer' } }, filter: 'address.postcode == ${pc}' })).to.deep.equal([
      { path: `${Q}.arguments.pc.type`, message: 'integer does not fit address.postcode (string) compared with ${pc} at position 21; declare it as string, text, uuid' },
    ]);
    expect(problems({ schema: 'demo.Person', arguments: { d: { type: 'timestamp' } }, filter: 'born < ${d}' })[0].path).to.equal(`${Q}.arguments.d.type`);
    expect(problems({ schema: 'demo.Person', arguments: { a: { type: 'json' } }, filter: 'age == ${a}' })[0].path).to.equal(`${Q}.arguments.a.type`);
    // Types outside the raw SQL endpoint's list are refused by the JSON Schema.
    expect(problems({ schema: 'demo.Person', arguments: { a: { type: 'int' } }, filter: 'age == ${a}' })[0]).to.include({ path: `${Q}.arguments.a.type` });
  });

  it('the sort parses and types; the schema exists; fields of the other form are refused', () => {
    expect(problems({ schema: 'demo.Person', sort: 'age:up' })).to.deep.equal([{ path: `${Q}.sort`, message: 'unknown sort modifier ":up" (use :asc, :desc, :nulls-first or :nulls-last) at position 5' }]);
    expect(problems({ schema: 'demo.Person', sort: 'shoe' })[0]).to.deep.include({ path: `${Q}.sort` });
    expect(problems({ schema: 'demo.Nobody' })).to.deep.equal([{ path: `${Q}.schema`, message: '"demo.Nobody" is not a schema of this dataset' }]);
    expect(problems({ schema: 'demo.Person', using: { p: 'demo.Person' } })).to.deep.equal([{ path: `${Q}.using`, message: 'only an SQL query has "using"' }]);
    expect(problems({ sql: 'SELECT 1', sort: 'name' })).to.deep.equal([{ path: `${Q}.sort`, message: 'only a filter-based query (with "schema") has "sort"' }]);
    expect(problems({ schema: 'demo.Person', sql: 'SELECT 1' })[0].message).to.match(/either "schema".*or "sql".*not both/);
    expect(problems({ arguments: {} })[0]).to.deep.equal({ path: Q, message: 'a query needs "schema" (filter-based: schema, filter, sort) or "sql" (SQL-based: sql, using)' });
    expect(problems({ schema: 'demo.Person', limit: 3 })[0]).to.deep.equal({ path: Q, message: 'unknown property "limit"' });
  });

  it('an SQL query on a DynamoDB dataset is refused', () => {
    expect(problems({ sql: 'SELECT 1' }, 'dynamodb')).to.deep.equal([
      { path: `${Q}.sql`, message: 'SQL queries run only on SQL locations; dynamodb (DynamoDB) has no SQL engine: write a filter-based query (schema, filter, sort)' },
    ]);
    expect(problems({ schema: 'demo.Person', filter: "name == 'x'" }, 'dynamodb')).to.deep.equal([]);
  });

  it("an SQL query's tokens match its arguments, aliases and properties", () => {
    const sql = (text: string, extra: Record<string, unknown> = {}) => problems({ sql: text, using: { p: 'demo.Person' }, ...extra });
    expect(sql('SELECT 1 WHERE ${x} = 1')).to.deep.equal([{ path: `${Q}.sql`, message: '${x} at position 16: argument "x" is not declared in "arguments"' }]);
    expect(sql('SELECT 1', { arguments: { x: { type: 'integer' } } })).to.deep.equal([{ path: `${Q}.arguments.x`, message: 'argument "x" is declared but the SQL does not use ${x}' }]);
    expect(sql('SELECT * FROM @{q}')).to.deep.equal([{ path: `${Q}.sql`, message: '@{q} at position 15: alias "q" is not declared in "using"' }]);
    expect(sql('SELECT @{p.shoe} FROM @{p}')[0].message).to.equal('@{p.shoe} at position 8: no property "shoe"');
    expect(sql('SELECT @{p.address} FROM @{p}')[0].message).to.match(/is an object/);
    expect(sql('SELECT @{p.employer.name} FROM @{p}')[0].message).to.match(/only employer.id is a column/);
    expect(sql('SELECT @{p.id}, @{p.createdAt}, @{p.address.postcode}, @{p.employer} FROM @{p}')).to.deep.equal([]);
    expect(sql('SELECT ${a b}')[0].message).to.match(/write \$\{argument\}/);
    expect(problems({ sql: 'SELECT 1', using: { p: 'demo.Nobody' } })).to.deep.equal([{ path: `${Q}.using.p`, message: '"demo.Nobody" is not a schema of this dataset' }]);
    expect(problems({ sql: '   ' })).to.deep.equal([{ path: `${Q}.sql`, message: 'must not be blank' }]);
  });

  it('finds tokens only in SQL code, not in literals, quoted names or comments', () => {
    const text = `SELECT '\${a}', "\${b}", E'\\'\${c}', $$\${d}$$, $t$\${e}$t$ -- \${f}
      /* \${g} /* nested */ \${h} */ , \${i}, @{p.x}, x$\${j}`;
    expect(sqlTokens(text).map((t) => `${t.kind}${t.body}`)).to.deep.equal(['$i', '@p.x', '$j']);
  });

  it('npm start refuses a manifest with an invalid query, naming the JSON path', () => {
    const yaml = `apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata: { name: bad }
spec:
  environment: local
  location: { kind: postgres }
  schemas: { demo.Person: { properties: { name: { type: string } } } }
  queries:
    demo.ByName: { schema: demo.Person, filter: "name == \${who}" }
`;
    expect(() => parseManifests(yaml, 'bad.yaml')).to.throw(/\$\.spec\.queries\["demo\.ByName"\]\.filter: unknown argument \$\{who\} at position 9/);
  });
});
