/**
 * A typed filter (model/filter.ts) as a DynamoDB FilterExpression: every name and value bound
 * (ExpressionAttributeNames / Values), never spliced into the text. It keeps the reference
 * evaluator's two-valued meaning: a comparison with a missing value is false, except `!=`, which
 * is true (`attribute_not_exists(p) OR p <> :v`); `not` and `not in` negate.
 *
 * Undefined when the filter cannot be pushed down whole (an unbound placeholder, or an expression
 * past DynamoDB's 4 KB): the driver then filters in memory alone. It re-checks every item with the
 * reference evaluator anyway, so the pushed-down filter only saves reading and transfer.
 */
import type { FieldRef, TypedFilter, TypedValue } from '../../../../model/filter.js';
import { A } from './tables.js';
import { storedTimestamp } from './values.js';

export interface FilterExpression {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** DynamoDB's limit on an expression's length, and on the operands of one IN. */
const MAX_EXPRESSION = 4096;
const MAX_IN = 100;

class NotPushable extends Error {}

export function filterExpression(filter: TypedFilter): FilterExpression | undefined {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const nameIndex = new Map<string, string>();
  const name = (n: string) => {
    let alias = nameIndex.get(n);
    if (!alias) {
      alias = `#n${nameIndex.size}`;
      nameIndex.set(n, alias);
      names[alias] = n;
    }
    return alias;
  };
  let valueCount = 0;
  const value = (field: FieldRef, v: TypedValue) => {
    if (!('value' in v)) throw new NotPushable();
    const alias = `:v${valueCount++}`;
    values[alias] = field.type === 'timestamp' && typeof v.value === 'string' ? storedTimestamp(v.value) : v.value;
    return alias;
  };
  const path = (field: FieldRef) => {
    if (field.system === 'id') return name(A.id);
    if (field.system === 'version') return name(A.version);
    return [A.data, ...field.path, ...(field.type === 'link' ? ['id'] : [])].map(name).join('.');
  };
  const build = (f: TypedFilter): string => {
    switch (f.kind) {
      case 'and':
      case 'or':
        return `(${f.items.map(build).join(f.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${build(f.item)})`;
      case 'null':
        return `${f.negated ? 'attribute_exists' : 'attribute_not_exists'}(${path(f.field)})`;
      case 'in': {
        const p = path(f.field);
        const chunks: string[] = [];
        for (let i = 0; i < f.values.length; i += MAX_IN) chunks.push(`${p} IN (${f.values.slice(i, i + MAX_IN).map((v) => value(f.field, v)).join(', ')})`);
        const any = chunks.length === 1 ? chunks[0] : `(${chunks.join(' OR ')})`;
        return f.negated ? `(NOT ${any})` : any;
      }
      case 'compare': {
        const p = path(f.field);
        const v = value(f.field, f.value);
        if (f.op === '!=') return `(attribute_not_exists(${p}) OR ${p} <> ${v})`;
        return `${p} ${f.op === '==' ? '=' : f.op} ${v}`;
      }
    }
  };
  try {
    const expression = build(filter);
    if (expression.length > MAX_EXPRESSION) return undefined;
    return { expression, names, values };
  } catch (err) {
    if (err instanceof NotPushable) return undefined;
    throw err;
  }
}
