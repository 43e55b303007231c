import { expect } from 'chai';
import { compileFilter } from '../../../model/filter.js';
import { sqlTokens } from '../../../model/queries.js';
import { QUERY_ARGUMENT_TYPES, type RecordSchemaDef } from '../../../model/types.js';
import { scanTokens } from './sql/raw-rewrite.js';
import { SCALAR_TYPE_NAMES } from './sql/scalar-types.js';
import { bindFilter } from './queries.js';

const person: RecordSchemaDef = { properties: { name: { type: 'string' }, age: { type: 'integer' } } };
const given = (values: Record<string, unknown>) => new Map(Object.entries(values).map(([k, v]) => [k, { value: v, param: v === null ? null : String(v) }]));
const argAt = (name: string) => `$.query.arguments.${name}`;

describe('engine: query schemas', () => {
  it('declares arguments with exactly the raw SQL endpoint\'s scalar types', () => {
    expect([...QUERY_ARGUMENT_TYPES].sort()).to.deep.equal([...SCALAR_TYPE_NAMES].sort());
  });

  it("model/'s SQL token scan (used by the operator) finds the tokens the raw SQL rewriter finds", () => {
    const samples = [
      "SELECT @{p.name} FROM @{p} WHERE @{p.age} > ${min} AND x = '${no}'",
      'SELECT "${no}", $$${no}$$, $tag$ ${no} $tag$ -- ${no}\n, ${yes}',
      "SELECT E'\\'${no}' || ${a}, /* ${no} /* ${no} */ ${no} */ @{q}",
      'SELECT x$${a}, ${b}${c}, @{d.e.f}',
    ];
    for (const sql of samples) {
      expect(sqlTokens(sql).map((t) => `${t.kind}{${t.body}}`), sql).to.deep.equal(scanTokens(sql).map((t) => `${t.kind}{${t.body}}`));
    }
  });

  it('binds arguments as typed literals; an absent optional argument leaves its predicate out', () => {
    const typed = compileFilter('(name == ${who} or age in (${a}, ${b})) and not (age == ${a})', person, { arguments: new Set(['who', 'a', 'b']) });
    expect(bindFilter(typed, given({ who: 'Ada', a: 3, b: 4 }), 'q', argAt)).to.deep.equal(
      compileFilter("(name == 'Ada' or age in (3, 4)) and not (age == 3)", person),
    );
    expect(bindFilter(typed, given({ who: null, a: 3, b: null }), 'q', argAt)).to.deep.equal(compileFilter('age in (3) and not (age == 3)', person));
    expect(bindFilter(typed, given({ who: null, a: null, b: null }), 'q', argAt)).to.equal(undefined);
  });

  it('a value that does not fit the compared property is a 400 naming the argument', () => {
    const typed = compileFilter('age == ${a}', person, { arguments: new Set(['a']) });
    // A long beyond 2^53 given as digits: a valid "long", but not an exact integer property value.
    expect(() => bindFilter(typed, given({ a: '9007199254740993' }), 'q', argAt)).to.throw(/does not fit age \(integer\)/).with.property('details').that.deep.equals([
      { path: '$.query.arguments.a', message: 'not a valid integer for age' },
    ]);
  });
});
