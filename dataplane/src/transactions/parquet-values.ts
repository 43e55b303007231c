/**
 * Values hyparquet decodes with a rounding error, put right after it reads a row: a DECIMAL
 * becomes unscaled × 10^-scale, a product of two doubles (115 × 0.01 = 1.1500000000000001);
 * the value the writer stored is the nearest double to unscaled / 10^scale (1.15), which a
 * division by the exact power of ten gives. Pure functions.
 */
import { parquetSchema, type FileMetaData } from 'hyparquet';

type SchemaNode = ReturnType<typeof parquetSchema>;

/** Each DECIMAL column's path (names from the top), scale and precision. */
function decimalColumns(node: SchemaNode, path: string[] = []): { path: string[]; scale: number; precision?: number }[] {
  const element = node.element;
  if (!node.children.length) {
    const decimal = element.converted_type === 'DECIMAL' || element.logical_type?.type === 'DECIMAL';
    return decimal ? [{ path, scale: element.scale ?? 0, ...(element.precision ? { precision: element.precision } : {}) }] : [];
  }
  return node.children.flatMap((child) => decimalColumns(child, [...path, child.element.name]));
}

/** Unscaled values below this are read exactly (hyparquet's product is then within half a unit of the last place). */
const EXACT_UNSCALED = 2 ** 51;

/** The double a decimal of this scale stores, from hyparquet's product, or undefined when it cannot be told exactly (over 15 digits). */
export function exactDecimal(value: number, scale: number): number | undefined {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** Math.max(0, scale);
  const unscaled = Math.round(value * factor);
  if (Math.abs(unscaled) >= EXACT_UNSCALED) return undefined;
  return scale > 0 ? unscaled / factor : unscaled;
}

/**
 * A function that puts a row's decimals right in place (in struct fields and list items too),
 * answering the problem of the first it cannot read exactly, naming its column; or undefined
 * when the file has no decimal column.
 */
export function decimalFixer(metadata: FileMetaData): ((row: Record<string, unknown>) => string | undefined) | undefined {
  const columns = decimalColumns(parquetSchema(metadata));
  if (!columns.length) return undefined;
  let problem: string | undefined;
  const fix = (node: unknown, path: string[], column: (typeof columns)[number]): unknown => {
    if (Array.isArray(node)) return node.map((item) => fix(item, path, column));
    // A number is the decimal itself: the rest of the path is the list's wrapper groups hyparquet flattens.
    if (typeof node === 'number') {
      const exact = exactDecimal(node, column.scale);
      if (exact === undefined) problem ??= `column ${column.path.join('.')}: a DECIMAL${column.precision ? `(${column.precision}, ${column.scale})` : ''} value of more than 15 significant digits (about ${node}) cannot be loaded exactly`;
      return exact ?? node;
    }
    if (path.length && node && typeof node === 'object') {
      const parent = node as Record<string, unknown>;
      const [key, ...rest] = path;
      if (Object.hasOwn(parent, key)) parent[key] = fix(parent[key], rest, column);
    }
    return node;
  };
  return (row) => {
    problem = undefined;
    for (const column of columns) fix(row, column.path, column);
    return problem;
  };
}
