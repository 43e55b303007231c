/** The filter language: syntax tree, positions of syntax errors, typing against a schema. */
import { expect } from 'chai';
import { compileFilter, filterArguments, FilterError, MAX_FILTER_DEPTH, parseFilter, typeFilter, type FilterNode } from './filter.js';
import type { RecordSchemaDef } from './types.js';

const person: RecordSchemaDef = {
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    score: { type: 'number' },
    active: { type: 'boolean' },
    born: { type: 'date' },
    seen: { type: 'timestamp' },
    address: { type: 'object', properties: { street: { type: 'string' }, postcode: { type: 'string' } } },
    employer: { type: 'link', schema: 'demo.Company' },
    friends: { type: 'links', schema: 'demo.Person', property: 'employer' },
  },
};

function errorOf(run: () => unknown): FilterError {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(FilterError);
    return err as FilterError;
  }
  throw new Error('expected a FilterError');
}

/** A compact rendering of a tree, to compare shapes. */
function show(node: FilterNode): string {
  switch (node.kind) {
    case 'and':
    case 'or':
      return `(${node.items.map(show).join(` ${node.kind} `)})`;
    case 'not':
      return `not ${show(node.item)}`;
    case 'null':
      return `${node.path.names.join('.')} is ${node.negated ? 'not ' : ''}null`;
    case 'compare': {
      const v = node.value;
      return `${node.path.names.join('.')} ${node.op} ${v.kind === 'string' ? `'${v.value}'` : v.kind === 'number' ? v.text : v.kind === 'arg' ? `\${${v.name}}` : v.value}`;
    }
    case 'in':
      return `${node.path.names.join('.')} ${node.negated ? 'not ' : ''}in [${node.values.map((v) => (v.kind === 'string' ? `'${v.value}'` : v.kind === 'number' ? v.text : String(v))).join(',')}]`;
  }
}

describe('model: filter parser', () => {
  it("parses the spec's form: a nested path == a single- or double-quoted literal", () => {
    expect(show(parseFilter("address.postcode == 'N1'"))).to.equal("address.postcode == 'N1'");
    expect(show(parseFilter('address.postcode == "N1"'))).to.equal("address.postcode == 'N1'");
    expect(show(parseFilter("employer.id=='c1'"))).to.equal("employer.id == 'c1'");
  });

  it('parses every comparison operator, numbers, booleans and placeholders', () => {
    for (const op of ['==', '!=', '<', '<=', '>', '>=']) expect(show(parseFilter(`age ${op} 30`))).to.equal(`age ${op} 30`);
    expect(show(parseFilter('score >= -1.5e3'))).to.equal('score >= -1.5e3');
    expect(show(parseFilter('score < .5'))).to.equal('score < .5');
    expect(show(parseFilter('active == TRUE'))).to.equal('active == true');
    expect(show(parseFilter('address.postcode == ${postcode}'))).to.equal('address.postcode == ${postcode}');
  });

  it('parses in, not in, is null, is not null (keywords in any case)', () => {
    expect(show(parseFilter("name in ('a', \"b\", 'c')"))).to.equal("name in ['a','b','c']");
    expect(show(parseFilter('age NOT IN (1,2)'))).to.equal('age not in [1,2]');
    expect(show(parseFilter('employer is null'))).to.equal('employer is null');
    expect(show(parseFilter('employer.id Is Not Null'))).to.equal('employer.id is not null');
  });

  it('binds and tighter than or, not tighter than and; parentheses group', () => {
    expect(show(parseFilter('age > 1 or age < 0 and name == \'x\''))).to.equal("(age > 1 or (age < 0 and name == 'x'))");
    expect(show(parseFilter("(age > 1 or age < 0) and name == 'x'"))).to.equal("((age > 1 or age < 0) and name == 'x')");
    expect(show(parseFilter("not age > 1 and not (name == 'x' or name == 'y')"))).to.equal("(not age > 1 and not (name == 'x' or name == 'y'))");
    expect(show(parseFilter('a == 1 and b == 2 and c == 3'))).to.equal('(a == 1 and b == 2 and c == 3)');
  });

  it('keeps quotes, escapes and keywords inside literals as text', () => {
    expect(show(parseFilter("name == 'O\\'Brien and \"x\" or y'"))).to.equal(`name == 'O'Brien and "x" or y'`);
    expect(show(parseFilter('name == "a\\\\b"'))).to.equal("name == 'a\\b'");
    expect(show(parseFilter("name == ''"))).to.equal("name == ''");
  });

  it('lists the placeholders it uses', () => {
    expect(filterArguments(parseFilter('a == ${x} and (b in (${y}, 1) or c == ${x})'))).to.deep.equal(['x', 'y']);
  });

  const syntax: [string, number, RegExp][] = [
    ['', 1, /empty/],
    ['   ', 1, /empty/],
    ["name = 'x'", 6, /compare with "=="/],
    ["name == 'x", 9, /unterminated single-quoted/],
    ['name == "x', 9, /unterminated double-quoted/],
    ["name == 'a\\nb'", 11, /unknown escape/],
    ['name ==', 8, /expected a value.*end of the filter/],
    ["name 'x'", 6, /expected an operator/],
    ["== 'x'", 1, /expected a property name/],
    ["name == 'x' and", 16, /expected a property name/],
    ["name == 'x' 'y'", 13, /expected "and", "or" or the end/],
    ["(name == 'x'", 13, /expected "\)"/],
    ["name == 'x')", 12, /expected "and", "or" or the end/],
    ['name == x', 9, /"x" is not a value: quote/],
    ['name == null', 9, /is null/],
    ['age in 1, 2', 8, /"\(" after "in"/],
    ['age in (1 2)', 11, /"," or "\)"/],
    ['age in ()', 9, /expected a value/],
    ['age is 3', 8, /"null" or "not null"/],
    ['age is not 3', 12, /expected "null"/],
    ['age not 3', 9, /expected an operator/],
    ['address. == 1', 10, /property name after "."/],
    ["name == 'x' # y", 13, /unexpected character "#"/],
    ['age == $x', 8, /\$\{name\}/],
    ['and == 1', 1, /expected a property name/],
  ];
  for (const [text, position, message] of syntax) {
    it(`refuses ${JSON.stringify(text)} at position ${position}`, () => {
      const err = errorOf(() => parseFilter(text));
      expect(err.message).to.match(message);
      expect(err.position).to.equal(position);
      expect(err.message).to.contain(`at position ${position}`);
    });
  }

  it('refuses nesting deeper than the limit, and text over the length limit', () => {
    expect(errorOf(() => parseFilter(`${'('.repeat(MAX_FILTER_DEPTH + 1)}a == 1${')'.repeat(MAX_FILTER_DEPTH + 1)}`)).message).to.match(/nested more than/);
    expect(errorOf(() => parseFilter(`${'not '.repeat(MAX_FILTER_DEPTH + 1)}a == 1`)).message).to.match(/nested more than/);
    expect(() => parseFilter(`${'('.repeat(MAX_FILTER_DEPTH - 1)}a == 1${')'.repeat(MAX_FILTER_DEPTH - 1)}`)).not.to.throw();
    expect(errorOf(() => parseFilter(`name == '${'x'.repeat(5000)}'`)).message).to.match(/at most 4096 characters/);
  });
});

describe('model: filter typing', () => {
  it('resolves nested properties, link ids, id and version', () => {
    const typed = compileFilter("address.postcode == 'N1' and employer.id == 'c1' and employer != 'c2' and id > 'a' and version >= 2", person);
    expect(typed).to.deep.equal({
      kind: 'and',
      items: [
        { kind: 'compare', op: '==', field: { path: ['address', 'postcode'], dotted: 'address.postcode', type: 'string' }, value: { value: 'N1' } },
        { kind: 'compare', op: '==', field: { path: ['employer'], dotted: 'employer.id', type: 'link' }, value: { value: 'c1' } },
        { kind: 'compare', op: '!=', field: { path: ['employer'], dotted: 'employer.id', type: 'link' }, value: { value: 'c2' } },
        { kind: 'compare', op: '>', field: { path: ['id'], dotted: 'id', type: 'string', system: 'id' }, value: { value: 'a' } },
        { kind: 'compare', op: '>=', field: { path: ['version'], dotted: 'version', type: 'integer', system: 'version' }, value: { value: 2 } },
      ],
    });
  });

  it('converts literals to the property type: quoted or bare numbers, booleans, dates, timestamps', () => {
    const value = (text: string) => (compileFilter(text, person) as { value: { value: unknown } }).value.value;
    expect(value("age == '42'")).to.equal(42);
    expect(value('age == -7')).to.equal(-7);
    expect(value('score < 1.25')).to.equal(1.25);
    expect(value("score < '1e3'")).to.equal(1000);
    expect(value('active == true')).to.equal(true);
    expect(value("active == 'false'")).to.equal(false);
    expect(value("born >= '2024-02-29'")).to.equal('2024-02-29');
    expect(value("seen < '2024-05-31T12:00:00.123Z'")).to.equal('2024-05-31T12:00:00.123Z');
    expect(value("seen < '2024-05-31T12:00:00+02:00'")).to.equal('2024-05-31T12:00:00+02:00');
    expect((compileFilter("age in ('1', 2)", person) as { values: unknown[] }).values).to.deep.equal([{ value: 1 }, { value: 2 }]);
  });

  const typing: [string, number, RegExp][] = [
    ["nickname == 'x'", 1, /unknown property "nickname" \(known here: name, age/],
    ["address.town == 'x'", 1, /unknown property "address.town" \(known here: street, postcode\)/],
    ["name == 'x' and address == 'y'", 17, /"address" is an object; name one of its properties \(address.street, address.postcode\)/],
    ["employer.name == 'x'", 1, /only by its id: "employer.id"/],
    ["name.first == 'x'", 1, /"name" is a string, it has no property "first"/],
    ["friends == 'x'", 1, /inverse link/],
    ["age == 'forty'", 8, /'forty' is not a valid value for age \(integer\): expected a whole number/],
    ['age == 1.5', 8, /1.5 is not a valid value for age \(integer\)/],
    ['age == 9007199254740993', 8, /not a valid value for age/],
    ["score > 'abc'", 9, /not a valid value for score \(number\)/],
    ["active == 'yes'", 11, /not a valid value for active \(boolean\): expected true or false/],
    ['name == 30', 9, /30 is not a valid value for name \(string\): expected a quoted text literal/],
    ['name == true', 9, /not a valid value for name/],
    ["born == '2023-02-29'", 9, /not a valid value for born \(date\)/],
    ["born == '31/05/2024'", 9, /not a valid value for born \(date\)/],
    ["seen == '2024-05-31T12:00:00'", 9, /expected a timestamp with a zone/],
    ["seen == '2024-05-31T25:00:00Z'", 9, /not a valid value for seen/],
    ['employer.id == 3', 16, /not a valid value for employer.id \(link\)/],
    ['active < true', 8, /active is a boolean: compare it with == or !=/],
    ["age in (1, 'x')", 12, /'x' is not a valid value for age/],
    ['age == ${min}', 8, /only for query schemas/],
  ];
  for (const [text, position, message] of typing) {
    it(`refuses ${JSON.stringify(text)} at position ${position}`, () => {
      const err = errorOf(() => compileFilter(text, person));
      expect(err.message).to.match(message);
      expect(err.position).to.equal(position);
    });
  }

  it('accepts declared placeholders and names undeclared ones', () => {
    const node = parseFilter('age >= ${min} and name == ${who}');
    expect(typeFilter(node, person, { arguments: new Set(['min', 'who']) })).to.deep.equal({
      kind: 'and',
      items: [
        { kind: 'compare', op: '>=', field: { path: ['age'], dotted: 'age', type: 'integer' }, value: { arg: 'min', pos: 8 } },
        { kind: 'compare', op: '==', field: { path: ['name'], dotted: 'name', type: 'string' }, value: { arg: 'who', pos: 27 } },
      ],
    });
    const err = errorOf(() => typeFilter(node, person, { arguments: new Set(['min']) }));
    expect(err.message).to.match(/unknown argument \$\{who\}/);
    expect(err.position).to.equal(27);
  });

  it('reads only own properties of the schema ("constructor" is unknown)', () => {
    expect(errorOf(() => compileFilter("constructor == 'x'", person)).message).to.match(/unknown property "constructor"/);
    expect(errorOf(() => compileFilter("address.__proto__ == 'x'", person)).message).to.match(/unknown property "address.__proto__"/);
  });
});

describe('model: filter under random input', () => {
  it('5,000 seeded random token soups: a typed filter or a FilterError with a position inside the text, nothing else', () => {
    const pieces = ['name', 'age', 'address', '.', 'postcode', 'employer', 'id', '==', '!=', '<', '>=', '=', 'in', 'not', 'is', 'null', 'and', 'or', '(', ')', ',', "'x'", '"y', '3', '-1.5e2', 'true', '${a}', '$', '\\', '#', ' ', ' ', 'é', '\u0000'];
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let typed = 0;
    for (let i = 0; i < 5000; i++) {
      // Odd rounds: well-formed predicates joined by and/or (values of any type); even: token soup.
      const predicate = () => `${['name', 'age', 'address.postcode', 'employer.id', 'id'][random(5)]} ${['==', '!=', '<', '>='][random(4)]} ${["'x'", '3', 'true', "'2024-01-01'"][random(4)]}`;
      const text =
        i % 2
          ? Array.from({ length: 1 + random(4) }, predicate).join(random(2) ? ' and ' : ' or ')
          : Array.from({ length: 1 + random(12) }, () => pieces[random(pieces.length)]).join(random(2) ? ' ' : '');
      try {
        compileFilter(text, person);
        typed++;
      } catch (err) {
        expect(err, text).to.be.instanceOf(FilterError);
        expect((err as FilterError).position, text).to.be.within(1, text.length + 1);
      }
    }
    expect(typed, 'some soups are valid filters').to.be.greaterThan(0);
  });
});

