/** The compiled row shaper gives the records the per-column loop gave, and no property name is ever code. */
import { expect } from 'chai';
import type { RecordSchemaDef } from '../../../../model/types.js';
import { fieldsOf, setAt, type Field } from '../../engine/layout.js';
import { compileRowShaper } from './row-shaper.js';
import type { Column } from './table-shape.js';

const system: Column[] = ['id', 'version', 'created_at', 'updated_at'].map((name) => ({ name, sqlType: 'text' }));
const columnsOf = (fields: Field[]): Column[] => [...system, ...fields.map((field) => ({ name: field.dotted, sqlType: 'text', field }))];

/** The loop the shaper replaced (driver.ts before), as the reference. */
function loopRecord(columns: Column[], row: unknown[]) {
  const data: Record<string, unknown> = {};
  columns.forEach((column, i) => {
    const value = row[i];
    if (!column.field || value === null || value === undefined) return;
    setAt(data, column.field.path, column.field.type === 'link' ? { id: value } : value);
  });
  return { id: row[0], version: row[1], data, createdAt: row[2], updatedAt: row[3] };
}

const schema: RecordSchemaDef = {
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    address: {
      type: 'object',
      properties: {
        street: { type: 'string' },
        geo: { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } } },
        postcode: { type: 'string' },
      },
    },
    employer: { type: 'link', schema: 'a.Company' },
    active: { type: 'boolean' },
    staff: { type: 'links', schema: 'a.Person', property: 'employer' },
  },
};

describe('row shaper (compiled per layout)', () => {
  const columns = columnsOf(fieldsOf(schema));
  const shape = compileRowShaper(columns);
  const head = ['p1', 2, '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'];

  it('gives the loop’s record for every pattern of present and null values: absent properties, nested objects made at their first leaf, links as {id}, key order', () => {
    const leaves = columns.length - system.length;
    const values = ['Ada', 36, 'Main St', 51.5, -0.1, 'N1', 'c1', false];
    for (let mask = 0; mask < 1 << leaves; mask++) {
      const row = [...head, ...values.map((value, i) => (mask & (1 << i) ? value : i % 2 ? undefined : null))];
      const record = shape(row);
      const expected = loopRecord(columns, row);
      expect(record, `mask ${mask}`).to.deep.equal(expected);
      // Same keys in the same order at every level (the response's JSON is the same bytes).
      expect(JSON.stringify(record), `mask ${mask}`).to.equal(JSON.stringify(expected));
    }
  });

  it('keeps falsy values that are not null: 0, false and the empty string are values', () => {
    const record = shape([...head, '', 0, null, null, null, null, null, false]);
    expect(record.data).to.deep.equal({ name: '', age: 0, active: false });
  });

  it('writes a property name into the code as a string, never as code', () => {
    const hostile = ['"]; globalThis.shaperRan = true; //', "'+(globalThis.shaperRan=1)+'", '\u2028\u2029', '${globalThis.shaperRan = 1}', '\\'];
    const fields: Field[] = hostile.map((name, i) => ({ path: i === 0 ? [name] : ['nested', name], dotted: name, type: 'string' }));
    const record = compileRowShaper(columnsOf(fields))([...head, ...hostile.map((_, i) => `v${i}`)]);
    expect((globalThis as { shaperRan?: unknown }).shaperRan).to.equal(undefined);
    expect(record.data).to.deep.equal({ [hostile[0]]: 'v0', nested: Object.fromEntries(hostile.slice(1).map((name, i) => [name, `v${i + 1}`])) });
  });

  it('makes a fresh record per row: nothing is shared between the records of two rows', () => {
    const a = shape([...head, 'Ada', 36, 'Main St', null, null, 'N1', 'c1', true]);
    const b = shape([...head, 'Bob', 40, 'High St', null, null, 'N2', 'c2', false]);
    expect(a.data.address).to.not.equal(b.data.address);
    expect((a.data.address as { street: string }).street).to.equal('Main St');
    expect(a.data.employer).to.deep.equal({ id: 'c1' });
  });
});
