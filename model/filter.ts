/**
 * The filter language of list, link and query (docs/architecture.md "Lists, links and queries"): one pure
 * parser shared by the data plane (requests) and the operator (query schemas).
 *
 *   filter     := or
 *   or         := and ("or" and)*
 *   and        := unary ("and" unary)*
 *   unary      := "not" unary | "(" or ")" | predicate
 *   predicate  := path ("==" | "!=" | "<" | "<=" | ">" | ">=") operand
 *               | path ["not"] "in" "(" operand ("," operand)* ")"
 *               | path "is" ["not"] "null"
 *   path       := name ("." name)*            e.g. address.postcode, employer.id
 *   operand    := 'text' | "text" | number | true | false | ${argument}
 *
 * Keywords are case-insensitive. Positions count characters from 1, as an editor's column does.
 * `parseFilter` checks syntax only; `typeFilter` resolves paths against a record schema and
 * converts each literal to its property's type.
 */
import type { PropertyDef, RecordSchemaDef, ScalarPropertyType } from './types.js';

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export interface PathRef {
  names: string[];
  pos: number;
}

export type Operand =
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; text: string; pos: number }
  | { kind: 'boolean'; value: boolean; pos: number }
  | { kind: 'arg'; name: string; pos: number };

export type FilterNode =
  | { kind: 'compare'; op: CompareOp; path: PathRef; value: Operand; pos: number }
  | { kind: 'in'; negated: boolean; path: PathRef; values: Operand[]; pos: number }
  | { kind: 'null'; negated: boolean; path: PathRef; pos: number }
  | { kind: 'and' | 'or'; items: FilterNode[]; pos: number }
  | { kind: 'not'; item: FilterNode; pos: number };

/** A filter problem: what and where (1-based character position in the filter text). */
export class FilterError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(`${message} at position ${position}`);
    this.name = 'FilterError';
  }
}

/** Longest filter text accepted (a URL query parameter in practice). */
export const MAX_FILTER_LENGTH = 4096;
/** Deepest nesting of parentheses and `not`: the parser recurses, so the input must not. */
export const MAX_FILTER_DEPTH = 32;
/** Most values in one `in (…)`. */
export const MAX_IN_VALUES = 1000;

type Token =
  | { t: 'name'; text: string; pos: number }
  | { t: 'string'; value: string; pos: number }
  | { t: 'number'; text: string; pos: number }
  | { t: 'op'; text: CompareOp; pos: number }
  | { t: 'punct'; text: '(' | ')' | ',' | '.'; pos: number }
  | { t: 'arg'; name: string; pos: number }
  | { t: 'end'; pos: number };

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y;
const ARG = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/y;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const pos = i + 1;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      let value = '';
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new FilterError(`unterminated ${c === "'" ? 'single' : 'double'}-quoted literal`, pos);
        const d = text[j];
        if (d === c) break;
        if (d === '\\') {
          const next = text[j + 1];
          if (next !== c && next !== '\\') throw new FilterError(`unknown escape "\\${next ?? ''}" (only \\${c} and \\\\)`, j + 1);
          value += next;
          j += 2;
          continue;
        }
        value += d;
        j++;
      }
      tokens.push({ t: 'string', value, pos });
      i = j + 1;
      continue;
    }
    const two = text.slice(i, i + 2);
    if (two === '==' || two === '!=' || two === '<=' || two === '>=') {
      tokens.push({ t: 'op', text: two, pos });
      i += 2;
      continue;
    }
    if (c === '<' || c === '>') {
      tokens.push({ t: 'op', text: c, pos });
      i++;
      continue;
    }
    if (c === '=') throw new FilterError('"=" is not an operator; compare with "=="', pos);
    if (c === '(' || c === ')' || c === ',' || c === '.') {
      // A number may start with "." (".5"): only after an operator or "(" / ",", never after a name.
      if (c === '.' && /[0-9]/.test(text[i + 1] ?? '') && !continuesPath(tokens)) {
        NUMBER.lastIndex = i;
        const m = NUMBER.exec(text)!;
        tokens.push({ t: 'number', text: m[0], pos });
        i += m[0].length;
        continue;
      }
      tokens.push({ t: 'punct', text: c, pos });
      i++;
      continue;
    }
    if (c === '$') {
      ARG.lastIndex = i;
      const m = ARG.exec(text);
      if (!m) throw new FilterError('a placeholder is written ${name}', pos);
      tokens.push({ t: 'arg', name: m[1], pos });
      i += m[0].length;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = /[-0-9]/.test(c) ? NUMBER.exec(text) : null;
    if (number) {
      tokens.push({ t: 'number', text: number[0], pos });
      i += number[0].length;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(text);
    if (name) {
      tokens.push({ t: 'name', text: name[0], pos });
      i += name[0].length;
      continue;
    }
    throw new FilterError(`unexpected character ${JSON.stringify(c)}`, pos);
  }
  tokens.push({ t: 'end', pos: text.length + 1 });
  return tokens;
}

const continuesPath = (tokens: Token[]) => tokens.at(-1)?.t === 'name';

const isKeyword = (token: Token, word: string) => token.t === 'name' && token.text.toLowerCase() === word;
const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'is', 'null', 'true', 'false']);

function describe(token: Token): string {
  switch (token.t) {
    case 'end':
      return 'the end of the filter';
    case 'string':
      return `the literal ${JSON.stringify(token.value)}`;
    case 'arg':
      return `the placeholder \${${token.name}}`;
    case 'name':
    case 'number':
    case 'op':
    case 'punct':
      return `"${token.text}"`;
  }
}

class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.i];
  }
  private next(): Token {
    return this.tokens[this.i++];
  }
  private fail(expected: string, token = this.peek()): never {
    throw new FilterError(`expected ${expected}, found ${describe(token)}`, token.pos);
  }
  private punct(text: string): boolean {
    const token = this.peek();
    if (token.t === 'punct' && token.text === text) {
      this.i++;
      return true;
    }
    return false;
  }
  private keyword(word: string): boolean {
    if (isKeyword(this.peek(), word)) {
      this.i++;
      return true;
    }
    return false;
  }

  filter(): FilterNode {
    const node = this.or(0);
    if (this.peek().t !== 'end') this.fail('"and", "or" or the end of the filter');
    return node;
  }

  private or(depth: number): FilterNode {
    const pos = this.peek().pos;
    const items = [this.and(depth)];
    while (this.keyword('or')) items.push(this.and(depth));
    return items.length === 1 ? items[0] : { kind: 'or', items, pos };
  }

  private and(depth: number): FilterNode {
    const pos = this.peek().pos;
    const items = [this.unary(depth)];
    while (this.keyword('and')) items.push(this.unary(depth));
    return items.length === 1 ? items[0] : { kind: 'and', items, pos };
  }

  private unary(depth: number): FilterNode {
    const token = this.peek();
    if (depth >= MAX_FILTER_DEPTH) throw new FilterError(`nested more than ${MAX_FILTER_DEPTH} deep`, token.pos);
    if (isKeyword(token, 'not')) {
      this.i++;
      return { kind: 'not', item: this.unary(depth + 1), pos: token.pos };
    }
    if (this.punct('(')) {
      const inner = this.or(depth + 1);
      if (!this.punct(')')) this.fail('")"');
      return inner;
    }
    return this.predicate();
  }

  private path(): PathRef {
    const first = this.peek();
    if (first.t !== 'name' || KEYWORDS.has(first.text.toLowerCase())) this.fail('a property name, "not" or "("');
    this.i++;
    const names = [first.text];
    while (this.punct('.')) {
      const name = this.next();
      if (name.t !== 'name') this.fail('a property name after "."', name);
      names.push(name.text);
    }
    return { names, pos: first.pos };
  }

  private predicate(): FilterNode {
    const path = this.path();
    const token = this.next();
    if (token.t === 'op') return { kind: 'compare', op: token.text, path, value: this.operand(), pos: token.pos };
    if (isKeyword(token, 'is')) {
      const negated = this.keyword('not');
      if (!this.keyword('null')) this.fail(negated ? '"null"' : '"null" or "not null"');
      return { kind: 'null', negated, path, pos: token.pos };
    }
    const negated = isKeyword(token, 'not');
    if (negated ? this.keyword('in') : isKeyword(token, 'in')) {
      if (!this.punct('(')) this.fail('"(" after "in"');
      const values = [this.operand()];
      while (this.punct(',')) {
        if (values.length >= MAX_IN_VALUES) throw new FilterError(`"in" takes at most ${MAX_IN_VALUES} values`, this.peek().pos);
        values.push(this.operand());
      }
      if (!this.punct(')')) this.fail('"," or ")"');
      return { kind: 'in', negated, path, values, pos: token.pos };
    }
    this.fail('an operator (==, !=, <, <=, >, >=, in, not in, is null, is not null)', negated ? this.peek() : token);
  }

  private operand(): Operand {
    const token = this.next();
    switch (token.t) {
      case 'string':
        return { kind: 'string', value: token.value, pos: token.pos };
      case 'number':
        return { kind: 'number', text: token.text, pos: token.pos };
      case 'arg':
        return { kind: 'arg', name: token.name, pos: token.pos };
      case 'name': {
        const word = token.text.toLowerCase();
        if (word === 'true' || word === 'false') return { kind: 'boolean', value: word === 'true', pos: token.pos };
        if (word === 'null') throw new FilterError('compare with null by "is null" or "is not null"', token.pos);
        throw new FilterError(`"${token.text}" is not a value: quote text literals ('${token.text}')`, token.pos);
      }
      default:
        this.fail('a value (a quoted literal, a number, true, false or ${argument})', token);
    }
  }
}

/** Parses filter text into its syntax tree; a FilterError names the position of the problem. */
export function parseFilter(text: string): FilterNode {
  if (text.length > MAX_FILTER_LENGTH) throw new FilterError(`a filter has at most ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH + 1);
  const tokens = tokenize(text);
  if (tokens.length === 1) throw new FilterError('the filter is empty', 1);
  return new Parser(tokens).filter();
}

/** The placeholders a filter uses, in order of first use (query schemas check them against their arguments). */
export function filterArguments(node: FilterNode): string[] {
  const names: string[] = [];
  const visit = (n: FilterNode) => {
    if (n.kind === 'and' || n.kind === 'or') n.items.forEach(visit);
    else if (n.kind === 'not') visit(n.item);
    else if (n.kind === 'compare' || n.kind === 'in') {
      for (const v of n.kind === 'compare' ? [n.value] : n.values) if (v.kind === 'arg' && !names.includes(v.name)) names.push(v.name);
    }
  };
  visit(node);
  return names;
}

// ---------------------------------------------------------------------------------------------
// Typing against a record schema.

export type FieldType = ScalarPropertyType | 'link';

/** A filterable or sortable value of a record: a scalar leaf, a link's id, or a system property. */
export interface FieldRef {
  /** Property path (a link's path, without `.id`); `['id']` / `['version']` for the system properties. */
  path: string[];
  /** As written in filters and sorts: `address.postcode`, `employer.id`, `id`. */
  dotted: string;
  type: FieldType;
  system?: 'id' | 'version';
}

/** A converted value, or a placeholder bound later (query schemas). */
export type TypedValue = { value: string | number | boolean } | { arg: string; pos: number };

export type TypedFilter =
  | { kind: 'compare'; op: CompareOp; field: FieldRef; value: TypedValue }
  | { kind: 'in'; negated: boolean; field: FieldRef; values: TypedValue[] }
  | { kind: 'null'; negated: boolean; field: FieldRef }
  | { kind: 'and' | 'or'; items: TypedFilter[] }
  | { kind: 'not'; item: TypedFilter };

export const ID_FIELD: FieldRef = { path: ['id'], dotted: 'id', type: 'string', system: 'id' };
export const VERSION_FIELD: FieldRef = { path: ['version'], dotted: 'version', type: 'integer', system: 'version' };

/**
 * Resolves a property path against a schema: a scalar leaf, `link.id` (or the link itself), `id`,
 * `version`. `what` names the use in messages ("filter", "sort").
 */
export function resolveField(schema: RecordSchemaDef, names: string[], pos: number, what: string): FieldRef {
  if (names.length === 1 && names[0] === 'id') return ID_FIELD;
  if (names.length === 1 && names[0] === 'version') return VERSION_FIELD;
  let props: Record<string, PropertyDef> = schema.properties;
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const prop = Object.hasOwn(props, name) ? props[name] : undefined;
    const sofar = names.slice(0, i + 1).join('.');
    if (!prop) {
      const known = Object.keys(props);
      throw new FilterError(`unknown property "${sofar}"${known.length ? ` (known here: ${known.join(', ')})` : ''}`, pos);
    }
    const last = i === names.length - 1;
    if (prop.type === 'object') {
      if (last) throw new FilterError(`"${sofar}" is an object; name one of its properties (${Object.keys(prop.properties).map((k) => `${sofar}.${k}`).join(', ')})`, pos);
      props = prop.properties;
      continue;
    }
    if (prop.type === 'link') {
      const path = names.slice(0, i + 1);
      if (last || (i === names.length - 2 && names[i + 1] === 'id')) return { path, dotted: `${path.join('.')}.id`, type: 'link' };
      throw new FilterError(`a ${what} can use a link only by its id: "${sofar}.id"`, pos);
    }
    if (prop.type === 'links') throw new FilterError(`"${sofar}" is an inverse link (not stored); follow it with the link operation`, pos);
    if (!last) throw new FilterError(`"${sofar}" is a ${prop.type}, it has no property "${names[i + 1]}"`, pos);
    return { path: names, dotted: sofar, type: prop.type };
  }
  throw new FilterError('empty property path', pos); // unreachable: a path has a name
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const days = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
  return d <= days;
}

/**
 * Converts a literal (its text, and whether it was quoted) to a property type; undefined when it
 * does not convert. Exported for binding query arguments with the same rules.
 */
export function convertLiteral(raw: string | number | boolean, type: FieldType): string | number | boolean | undefined {
  const text = String(raw);
  switch (type) {
    case 'string':
    case 'link':
      return typeof raw === 'string' ? raw : undefined;
    case 'integer': {
      if (typeof raw === 'boolean' || !INTEGER.test(text)) return undefined;
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : undefined;
    }
    case 'number': {
      if (typeof raw === 'boolean' || !DECIMAL.test(text)) return undefined;
      const n = Number(text);
      return Number.isFinite(n) ? n : undefined;
    }
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      return text === 'true' ? true : text === 'false' ? false : undefined;
    case 'date': {
      const m = typeof raw === 'string' ? DATE.exec(text) : null;
      return m && validDate(Number(m[1]), Number(m[2]), Number(m[3])) ? text : undefined;
    }
    case 'timestamp': {
      const m = typeof raw === 'string' ? TIMESTAMP.exec(text) : null;
      if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return undefined;
      if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return undefined;
      return text;
    }
  }
}

const TYPE_HINT: Record<FieldType, string> = {
  string: 'a quoted text literal',
  link: "a quoted id, e.g. 'c1'",
  integer: 'a whole number, e.g. 42',
  number: 'a number, e.g. 1.5',
  boolean: 'true or false',
  date: "a date, e.g. '2024-05-31'",
  timestamp: "a timestamp with a zone, e.g. '2024-05-31T12:00:00Z'",
};

export interface TypeFilterOptions {
  /** Placeholders allowed (query schemas); without it a placeholder is an error. */
  arguments?: ReadonlySet<string>;
}

function typeValue(operand: Operand, field: FieldRef, options: TypeFilterOptions): TypedValue {
  if (operand.kind === 'arg') {
    if (!options.arguments) throw new FilterError(`placeholders such as \${${operand.name}} are only for query schemas`, operand.pos);
    if (!options.arguments.has(operand.name)) throw new FilterError(`unknown argument \${${operand.name}}`, operand.pos);
    return { arg: operand.name, pos: operand.pos };
  }
  // A bare number keeps its text (exact integers beyond 2^53 are refused, not rounded).
  const converted = operand.kind === 'number' ? convertNumberText(operand.text, field.type) : convertLiteral(operand.value, field.type);
  if (converted === undefined) {
    const shown = operand.kind === 'string' ? `'${operand.value}'` : operand.kind === 'number' ? operand.text : String(operand.value);
    throw new FilterError(`${shown} is not a valid value for ${field.dotted} (${field.type}): expected ${TYPE_HINT[field.type]}`, operand.pos);
  }
  return { value: converted };
}

/** A bare number: only numeric properties take it (a text property wants it quoted). */
function convertNumberText(text: string, type: FieldType): number | undefined {
  if (type !== 'integer' && type !== 'number') return undefined;
  return convertLiteral(text, type) as number | undefined;
}

const ORDERED_TYPES: ReadonlySet<FieldType> = new Set(['string', 'link', 'integer', 'number', 'date', 'timestamp']);

/**
 * Resolves every path of a parsed filter against a record schema and converts its literals. A
 * FilterError names the property or literal and its position.
 */
export function typeFilter(node: FilterNode, schema: RecordSchemaDef, options: TypeFilterOptions = {}): TypedFilter {
  switch (node.kind) {
    case 'and':
    case 'or':
      return { kind: node.kind, items: node.items.map((item) => typeFilter(item, schema, options)) };
    case 'not':
      return { kind: 'not', item: typeFilter(node.item, schema, options) };
    case 'null': {
      const field = resolveField(schema, node.path.names, node.path.pos, 'filter');
      return { kind: 'null', negated: node.negated, field };
    }
    case 'compare': {
      const field = resolveField(schema, node.path.names, node.path.pos, 'filter');
      if (node.op !== '==' && node.op !== '!=' && !ORDERED_TYPES.has(field.type)) {
        throw new FilterError(`${field.dotted} is a ${field.type}: compare it with == or !=`, node.pos);
      }
      return { kind: 'compare', op: node.op, field, value: typeValue(node.value, field, options) };
    }
    case 'in': {
      const field = resolveField(schema, node.path.names, node.path.pos, 'filter');
      return { kind: 'in', negated: node.negated, field, values: node.values.map((v) => typeValue(v, field, options)) };
    }
  }
}

/** Parses and types in one step: what a list request does with its `filter`. */
export function compileFilter(text: string, schema: RecordSchemaDef, options: TypeFilterOptions = {}): TypedFilter {
  return typeFilter(parseFilter(text), schema, options);
}

// ---------------------------------------------------------------------------------------------
// The reference evaluator: what a filter means, for drivers without a query language and for the
// tests that check a driver's SQL against it.

/** A record as the engine holds it: id, version and nested data (links as `{id}`). */
export interface RecordValues {
  id: string;
  version: number;
  data: Record<string, unknown>;
}

/** The value of a field in a record: null when absent; a link's id. */
export function fieldValue(record: RecordValues, field: FieldRef): string | number | boolean | null {
  if (field.system === 'id') return record.id;
  if (field.system === 'version') return record.version;
  let node: unknown = record.data;
  for (const key of field.path) {
    if (node === null || typeof node !== 'object') return null;
    node = Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined;
  }
  if (field.type === 'link') node = node && typeof node === 'object' ? (node as { id?: unknown }).id : undefined;
  return node === undefined || node === null ? null : (node as string | number | boolean);
}

/** Timestamps compare as instants (offsets applied, fractions to the nanosecond), not as text. */
function instant(text: string): bigint {
  const m = /^(.*?)(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return 0n;
  const seconds = BigInt(Math.floor(Date.parse(`${m[1]}${m[3]}`) / 1000));
  return seconds * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0').slice(0, 9) || '0');
}

/** Orders two non-null values of one field type: the binary order of rule 5 (text by code point). */
export function compareTyped(type: FieldType, a: string | number | boolean, b: string | number | boolean): number {
  if (type === 'timestamp') {
    const [x, y] = [instant(String(a)), instant(String(b))];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const [x, y] = [String(a), String(b)];
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const cx = x.codePointAt(i)!;
    const cy = y.codePointAt(i)!;
    if (cx !== cy) return cx < cy ? -1 : 1;
    if (cx > 0xffff) i++;
  }
  return x.length - y.length;
}

function boundValue(value: TypedValue, args: Record<string, unknown>): string | number | boolean {
  return 'arg' in value ? (args[value.arg] as string | number | boolean) : value.value;
}

/**
 * Whether a record matches a typed filter. Two-valued: a comparison with a null value is false;
 * `!=`, `not in` and `not` negate, so `age != 30` matches a record without an age.
 */
export function matchesFilter(filter: TypedFilter, record: RecordValues, args: Record<string, unknown> = {}): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.items.every((item) => matchesFilter(item, record, args));
    case 'or':
      return filter.items.some((item) => matchesFilter(item, record, args));
    case 'not':
      return !matchesFilter(filter.item, record, args);
    case 'null':
      return (fieldValue(record, filter.field) === null) !== filter.negated;
    case 'in': {
      const value = fieldValue(record, filter.field);
      const found = value !== null && filter.values.some((v) => compareTyped(filter.field.type, value, boundValue(v, args)) === 0);
      return found !== filter.negated;
    }
    case 'compare': {
      const value = fieldValue(record, filter.field);
      if (value === null) return filter.op === '!=';
      const c = compareTyped(filter.field.type, value, boundValue(filter.value, args));
      switch (filter.op) {
        case '==':
          return c === 0;
        case '!=':
          return c !== 0;
        case '<':
          return c < 0;
        case '<=':
          return c <= 0;
        case '>':
          return c > 0;
        case '>=':
          return c >= 0;
      }
    }
  }
}
