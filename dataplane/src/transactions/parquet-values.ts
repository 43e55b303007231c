/**
 * Values hyparquet decodes with a rounding error, put right after it reads a row: a DECIMAL
 * becomes unscaled × 10^-scale, a product of two doubles (115 × 0.01 = 1.1500000000000001);
 * the value the writer stored is the nearest double to unscaled / 10^scale (1.15), which a
 * division by the exact power of ten gives. Pure functions.
 */
import { parquetSchema, type FileMetaData } from 'hyparquet';

type SchemaNode = ReturnType<typeof parquetSchema>;

/** Each DECIMAL column's path (names from the top) and scale. */
function decimalColumns(node: SchemaNode, path: string[] = []): { path: string[]; scale: number }[] {
  const element = node.element;
  if (!node.children.length) {
    const decimal = element.converted_type === 'DECIMAL' || element.logical_type?.type === 'DECIMAL';
    return decimal ? [{ path, scale: element.scale ?? 0 }] : [];
  }
  return node.children.flatMap((child) => decimalColumns(child, [...path, child.element.name]));
}

/** The double a decimal of this scale stores, from hyparquet's product (exact for unscaled values under 2^51). */
export function exactDecimal(value: number, scale: number): number {
  if (!Number.isFinite(value) || scale <= 0 || scale > 22) return value;
  const factor = 10 ** scale;
  const unscaled = Math.round(value * factor);
  return Math.abs(unscaled) < 2 ** 51 ? unscaled / factor : value;
}

/** A function that puts a row's decimals right in place, or undefined when the file has none. */
export function decimalFixer(metadata: FileMetaData): ((row: Record<string, unknown>) => void) | undefined {
  const columns = decimalColumns(parquetSchema(metadata));
  if (!columns.length) return undefined;
  const fix = (node: unknown, path: string[], scale: number): unknown => {
    if (Array.isArray(node)) return node.map((item) => fix(item, path, scale));
    if (!path.length) return typeof node === 'number' ? exactDecimal(node, scale) : node;
    if (node && typeof node === 'object') {
      const parent = node as Record<string, unknown>;
      const [key, ...rest] = path;
      // Lists wrap their items in a repeated group hyparquet flattens: descend through what is there.
      if (Object.hasOwn(parent, key)) parent[key] = fix(parent[key], rest, scale);
    }
    return node;
  };
  return (row) => {
    for (const { path, scale } of columns) fix(row, path, scale);
  };
}
