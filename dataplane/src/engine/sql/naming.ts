/**
 * Physical names for SQL locations. PostgreSQL gets lower snake case; the warehouse upper case.
 * Names are derived from validated identifiers (model/json-schema.ts), and still always quoted.
 */
import type { Field } from '../layout.js';

export interface NamingStrategy {
  table(schemaName: string): string;
  historyTable(schemaName: string): string;
  column(field: Pick<Field, 'path' | 'type'>): string;
  /** System columns (`deletedAt` only in history tables: set on a delete's tombstone version). */
  readonly system: { id: string; version: string; createdAt: string; updatedAt: string; deletedAt: string };
}

export function snakeCase(identifier: string): string {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

function caseStrategy(transform: (snake: string) => string): NamingStrategy {
  const name = (parts: string[]) => transform(parts.map(snakeCase).join('_'));
  return {
    table: (schemaName) => name(schemaName.split('.')),
    historyTable: (schemaName) => name([...schemaName.split('.'), 'history']),
    column: (field) => name(field.type === 'link' ? [...field.path, 'id'] : field.path),
    system: { id: transform('id'), version: transform('version'), createdAt: transform('created_at'), updatedAt: transform('updated_at'), deletedAt: transform('deleted_at') },
  };
}

export const postgresNaming: NamingStrategy = caseStrategy((s) => s);
export const warehouseNaming: NamingStrategy = caseStrategy((s) => s.toUpperCase());

/** Quotes an identifier for PostgreSQL and the warehouse (both use double quotes). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
