/**
 * JSON with object keys in sorted order. The API server returns custom resources with sorted keys
 * anyway; sorting here makes the rendered ConfigMap text independent of where the object came from,
 * so an unchanged spec always renders byte-identical data (and causes no write).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) + '\n';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) sorted[key] = sortKeys(v);
    }
    return sorted;
  }
  return value;
}
