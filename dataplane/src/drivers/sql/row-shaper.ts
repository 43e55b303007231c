/**
 * A table's rows as stored records, one function per layout compiled when the layout is built (once
 * per config generation), not a loop over the columns per row.
 *
 * Why: the loop set each value through one generic `setAt(data, path, value)`, a keyed store that
 * sees every property of every schema and goes megamorphic (V8 looks each one up in a global cache);
 * it was 140 ns per read of the demo Person against 25 ns for an object literal (measured in a loop,
 * docs/performance.md "Rows shaped by compiled code"), and per row again in a list's page. The
 * compiled function assigns each property with its name in the code: a store of a known name.
 *
 * The same records as the loop: a property whose column is null is absent, a nested object exists
 * only when one of its leaves is present (created at the first), a link is `{ id }`. Property names
 * come from the manifest, already identifiers and never an inherited name (model/inherited-names.ts);
 * they are written into the code as JSON string literals all the same, so no name is ever code.
 */
import type { StoredRecord } from '../../engine/contract.js';
import { SYSTEM_COLUMN_INDEX, type Column } from './table-shape.js';

export type RowShaper = (row: readonly unknown[]) => StoredRecord;

/** A property's access in generated code: `o["name"]`. */
const member = (name: string) => `[${JSON.stringify(name)}]`;

export function compileRowShaper(columns: readonly Column[]): RowShaper {
  const lines: string[] = ['const data = {};', 'let v;'];
  // A variable per nested object (by its dotted path), declared undefined and made at its first present leaf.
  const objects = new Map<string, string>();
  const objectOf = (path: readonly string[]): { name: string; make: string[] } => {
    if (path.length === 0) return { name: 'data', make: [] };
    const key = JSON.stringify(path);
    const parent = objectOf(path.slice(0, -1));
    let name = objects.get(key);
    if (name === undefined) {
      name = `o${objects.size}`;
      objects.set(key, name);
      lines.splice(1, 0, `let ${name};`);
    }
    return { name, make: [...parent.make, `if (${name} === undefined) ${parent.name}${member(path[path.length - 1])} = ${name} = {};`] };
  };
  columns.forEach((column, i) => {
    const field = column.field;
    if (!field) return;
    const target = objectOf(field.path.slice(0, -1));
    const value = field.type === 'link' ? '{ id: v }' : 'v';
    lines.push(`v = row[${i}];`, `if (v !== null && v !== undefined) { ${[...target.make, `${target.name}${member(field.path[field.path.length - 1])} = ${value};`].join(' ')} }`);
  });
  const at = SYSTEM_COLUMN_INDEX;
  lines.push(`return { id: row[${at.id}], version: row[${at.version}], data, createdAt: row[${at.createdAt}], updatedAt: row[${at.updatedAt}] };`);
  return new Function('row', lines.join('\n')) as RowShaper;
}
