/** PostgreSQL's raw-SQL dialect: where tokens point in its layout, its bind casts and lexical rules. */
import { POSTGRES_LEXICAL_RULES, type RawSqlDialect } from '../../engine/sql/raw-rewrite.js';
import { postgresNaming, quoteIdent } from '../../engine/sql/naming.js';
import { tableLayout } from './sql.js';

export const postgresDialect: RawSqlDialect = {
  name: 'postgres',
  lexical: POSTGRES_LEXICAL_RULES,
  table: (dataset, schemaName) => tableLayout(dataset, schemaName, dataset.schemas[schemaName]).table,
  column: (_dataset, _schemaName, field) => quoteIdent(postgresNaming.column(field)),
  systemColumn: (name) => quoteIdent(postgresNaming.system[name]),
  // Parenthesised so that what follows the token cannot change the cast (`${a}[1]` would
  // otherwise read as a cast to an array type).
  placeholder: (index, type) => `($${index}::${type.postgres})`,
  reusablePlaceholders: true,
};
