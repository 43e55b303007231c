import { postgresSqlDialect as postgresDialect } from '../../drivers/postgres/dialect.js';
import { expect } from 'chai';
import { ApiError } from '../errors.js';
import { demoDataset } from '../../../test-support/rawsql-fixtures.js';
import { parseRawSqlRequest } from './raw-request.js';
import { MAX_OPERATOR_RUN, rewriteRawSql, scanTokens, sourcePosition, type RewrittenSql, type SqlLexicalRules } from './raw-rewrite.js';

const dataset = demoDataset();

function rewrite(sql: string, using: Record<string, string> = { p: 'demo.Person', c: 'demo.Company' }, args: Record<string, unknown> = {}): RewrittenSql {
  const request = parseRawSqlRequest({ sql, using, arguments: args }, dataset);
  return rewriteRawSql(request.sql, request.using, request.arguments, dataset, postgresDialect);
}

function rejected(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected an ApiError');
}

describe('raw SQL rewrite', () => {
  describe('runs of operator characters', () => {
    it(`refuses more than ${MAX_OPERATOR_RUN} in a row in code or after a /* in a comment, naming the position`, () => {
      const cases: [string, number][] = [
        [`SELECT 1 ${'+'.repeat(MAX_OPERATOR_RUN + 1)}1`, 10],
        [`SELECT 1 ${'/**/'.repeat(300)}`, 10],
        [`SELECT 1 /* note ${'/*'.repeat(501)}`, 18],
        [`SELECT 'x' || 1 ${'<'.repeat(1200)}`, 17],
      ];
      for (const [sql, position] of cases) {
        const err = rejected(() => scanTokens(sql));
        expect([err.status, err.code, err.details[0].path, err.details[0].position], sql.slice(0, 30)).to.deep.equal([400, 'SQL_TOO_COMPLEX', '$.sql', position]);
        expect(err.message).to.match(/operator characters in a row/);
      }
    });

    it('accepts them up to the limit, and anywhere in literals, quoted names and line comments', () => {
      const ok = [
        `SELECT 1 ${'+'.repeat(MAX_OPERATOR_RUN - 1)}1`,
        `SELECT 1 /${'*'.repeat(200)}/`,
        `SELECT '${'-'.repeat(5000)}', E'${'<'.repeat(5000)}', "${'='.repeat(5000)}", $$${'/*'.repeat(5000)}$$`,
        `SELECT 1 -- ${'='.repeat(5000)}\n`,
        `SELECT 1 ${'-'.repeat(5000)}\n`,
        `SELECT 1 /* ${'-'.repeat(5000)} */`,
      ];
      for (const sql of ok) expect(() => scanTokens(sql), sql.slice(0, 30)).to.not.throw();
    });
  });

  it('replaces an alias by the qualified, quoted table', () => {
    expect(rewrite('SELECT * FROM @{p}').text).to.equal('SELECT * FROM "demo"."demo_person"');
    expect(rewrite('SELECT * FROM @{c} c').text).to.equal('SELECT * FROM "demo"."demo_company" c');
  });

  it('replaces properties by physical columns: scalar, nested, link, link id, system', () => {
    const { text } = rewrite('SELECT @{p.name}, @{p.address.postcode}, @{p.employer}, @{p.employer.id}, @{p.id}, @{p.version}, @{p.createdAt}, @{p.updatedAt} FROM @{p}');
    expect(text).to.equal(
      'SELECT "name", "address_postcode", "employer_id", "employer_id", "id", "version", "created_at", "updated_at" FROM "demo"."demo_person"',
    );
  });

  it('joins through a link column', () => {
    const { text } = rewrite('SELECT p.@{p.name} AS person, c.@{c.name} AS company FROM @{p} p JOIN @{c} c ON c.@{c.id} = p.@{p.employer}');
    expect(text).to.equal(
      'SELECT p."name" AS person, c."name" AS company FROM "demo"."demo_person" p JOIN "demo"."demo_company" c ON c."id" = p."employer_id"',
    );
  });

  it('turns placeholders into typed binds, reusing the number of a repeated name', () => {
    const out = rewrite(
      'SELECT * FROM @{p} WHERE @{p.age} >= ${minAge} AND (@{p.name} = ${name} OR @{p.email} = ${name}) AND @{p.age} < ${minAge} + 10',
      undefined,
      { minAge: { value: 30, type: 'integer' }, name: { value: 'Ann', type: 'string' }, unused: { value: true, type: 'boolean' } },
    );
    expect(out.text).to.equal(
      'SELECT * FROM "demo"."demo_person" WHERE "age" >= ($1::integer) AND ("name" = ($2::text) OR "email" = ($2::text)) AND "age" < ($1::integer) + 10',
    );
    expect(out.values).to.deep.equal(['30', 'Ann']);
  });

  it('casts each type and binds null as SQL NULL', () => {
    const out = rewrite('SELECT ${a}, ${b}, ${c}, ${d}, ${e}, ${f}, ${g}, ${h}', {}, {
      a: { value: '9007199254740993', type: 'long' },
      b: { value: '1.10', type: 'decimal' },
      c: { value: '2024-02-29', type: 'date' },
      d: { value: '2024-02-29T10:00:00Z', type: 'timestamp' },
      e: { value: { k: [1, 'x'] }, type: 'json' },
      f: { value: null, type: 'integer' },
      g: { value: 1.5, type: 'double' },
      h: { value: false, type: 'boolean' },
    });
    expect(out.text).to.equal(
      'SELECT ($1::bigint), ($2::numeric), ($3::date), ($4::timestamp with time zone), ($5::jsonb), ($6::integer), ($7::double precision), ($8::boolean)',
    );
    expect(out.values).to.deep.equal(['9007199254740993', '1.10', '2024-02-29', '2024-02-29T10:00:00Z', '{"k":[1,"x"]}', null, '1.5', 'false']);
  });

  it('leaves tokens inside string literals, quoted identifiers, dollar quotes and comments alone', () => {
    const sql = [
      "SELECT '${x} @{p}' AS a, 'it''s ${x}' AS b, E'\\' ${x}' AS c, U&'${x}' AS d,",
      '"@{p}" AS e, $$ ${x} $$ AS f, $tag$ @{p} $ $$ $tag$ AS g -- ${x} @{p}',
      '/* @{p} /* nested ${x} */ still comment @{q} */ , ${x} AS h FROM @{p}',
    ].join('\n');
    const out = rewrite(sql, { p: 'demo.Person' }, { x: { value: 'v', type: 'string' } });
    expect(out.text).to.equal(sql.replace(', ${x} AS h FROM @{p}', ', ($1::text) AS h FROM "demo"."demo_person"'));
    expect(out.values).to.deep.equal(['v']);
  });

  it('does not mistake identifiers with $ or numbers for tokens or dollar quotes', () => {
    const out = rewrite('SELECT a$b$ AS x, 1e5 AS y, ${v} FROM @{p}', { p: 'demo.Person' }, { v: { value: 1, type: 'integer' } });
    expect(out.text).to.equal('SELECT a$b$ AS x, 1e5 AS y, ($1::integer) FROM "demo"."demo_person"');
  });

  it('lists tokens in order', () => {
    expect(scanTokens("SELECT @{p.a}, '${no}', ${yes}").map((t) => [t.kind, t.body])).to.deep.equal([
      ['@', 'p.a'],
      ['$', 'yes'],
    ]);
  });

  describe('400s', () => {
    const cases: [string, string, string, Record<string, unknown>?][] = [
      ['alias not in using', 'SELECT * FROM @{x}', 'UNKNOWN_ALIAS'],
      ['alias of a property token not in using', 'SELECT @{x.name} FROM @{p}', 'UNKNOWN_ALIAS'],
      ['property the schema lacks', 'SELECT @{p.salary} FROM @{p}', 'UNKNOWN_PROPERTY'],
      ['nested property the schema lacks', 'SELECT @{p.address.city} FROM @{p}', 'UNKNOWN_PROPERTY'],
      ['an object, not a leaf', 'SELECT @{p.address} FROM @{p}', 'UNKNOWN_PROPERTY'],
      ['a property of a link target', 'SELECT @{p.employer.name} FROM @{p}', 'UNKNOWN_PROPERTY'],
      ['a property path under a scalar', 'SELECT @{p.name.first} FROM @{p}', 'UNKNOWN_PROPERTY'],
      ['placeholder without argument', 'SELECT * FROM @{p} WHERE @{p.age} > ${minAge}', 'MISSING_ARGUMENT'],
      ['SQL injected into an alias', 'SELECT * FROM @{p; DROP TABLE demo.demo_person}', 'INVALID_TOKEN'],
      ['a quote injected into a property', 'SELECT @{p.name"--} FROM @{p}', 'INVALID_TOKEN'],
      ['spaces in a token', 'SELECT * FROM @{ p }', 'INVALID_TOKEN'],
      ['an empty token', 'SELECT @{} FROM @{p}', 'INVALID_TOKEN'],
      ['a doubled dot', 'SELECT @{p..name} FROM @{p}', 'INVALID_TOKEN'],
      ['a name starting with a digit', 'SELECT @{p.1name} FROM @{p}', 'INVALID_TOKEN'],
      ['SQL injected into a placeholder', "SELECT ${x'; DROP TABLE t; --}", 'INVALID_TOKEN'],
      ['an unclosed token', 'SELECT * FROM @{p', 'INVALID_TOKEN'],
      ['an unclosed placeholder', 'SELECT ${x', 'INVALID_TOKEN'],
      ['a positional parameter', 'SELECT * FROM @{p} WHERE @{p.age} > $1', 'INVALID_TOKEN'],
    ];
    for (const [what, sql, code] of cases) {
      it(`${what} → ${code}`, () => {
        const err = rejected(() => rewrite(sql, { p: 'demo.Person' }));
        expect(err.status).to.equal(400);
        expect(err.code).to.equal(code);
        expect(err.details[0].path).to.equal('$.sql');
        expect(err.details[0].token).to.be.a('string');
        expect(err.message).to.include(String(err.details[0].token));
      });
    }

    it('names the token and its position', () => {
      const err = rejected(() => rewrite('SELECT 1,\n  @{p; DROP TABLE x} FROM @{p}', { p: 'demo.Person' }));
      expect(err.details[0]).to.include({ token: '@{p; DROP TABLE x}', position: 13 });
    });

    it('tells what a link column holds', () => {
      const err = rejected(() => rewrite('SELECT @{p.employer.name} FROM @{p}', { p: 'demo.Person' }));
      expect(err.message).to.match(/link to demo\.Company.*only the target's id/);
    });
  });

  it('maps positions in the rewritten text back to the caller SQL', () => {
    const sql = 'SELECT @{p.name}, ${x} FROM @{p} WHERE nope';
    const out = rewrite(sql, { p: 'demo.Person' }, { x: { value: 1, type: 'integer' } });
    const at = (needle: string) => [...out.text.slice(0, out.text.indexOf(needle))].length + 1;
    expect(sourcePosition(sql, out, at('nope'))).to.equal(sql.indexOf('nope') + 1);
    expect(sourcePosition(sql, out, at('"name"'))).to.equal(sql.indexOf('@{p.name}') + 1);
    expect(sourcePosition(sql, out, at('::integer'))).to.equal(sql.indexOf('${x}') + 1);
    expect(sourcePosition(sql, out, 1)).to.equal(1);
  });
});

describe('raw SQL lexical rules are the dialect\'s', () => {
  // A warehouse-like dialect: comments do not nest, backslash escapes in every literal, $$ only.
  const warehouse: SqlLexicalRules = { nestedBlockComments: false, taggedDollarQuotes: false, backslashEscapesInStrings: true, escapeStringPrefix: false };
  const bodies = (sql: string, rules?: SqlLexicalRules) => scanTokens(sql, rules).map((t) => t.body);

  it('a comment ends at the first */ where comments do not nest', () => {
    const sql = '/* a /* b */ ${x} */ ${y}';
    expect(bodies(sql)).to.deep.equal(['y']); // PostgreSQL: one nested comment holds ${x}
    expect(bodies(sql, warehouse)).to.deep.equal(['x', 'y']);
  });

  it("a backslash escapes a quote inside '…' where the dialect says so", () => {
    const sql = "SELECT 'it\\'s ${x}' , ${y}";
    expect(bodies(sql, warehouse)).to.deep.equal(['y']);
    expect(bodies("SELECT 'a\\' , ${y}")).to.deep.equal(['y']); // PostgreSQL: the backslash is a character
  });

  it('$tag$ quoting only where the dialect has it', () => {
    expect(bodies('SELECT $q$ ${x} $q$, ${y}')).to.deep.equal(['y']);
    expect(bodies('SELECT $$ ${x} $$, ${y}', warehouse)).to.deep.equal(['y']);
  });
});
