/** Reading Environment and Dataset manifests (multi-document YAML) with validation that names file and path. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { API_GROUP_VERSION, type DatasetResource, type EnvironmentResource } from './types.js';
import { checkDatasetSpec, checkEnvironmentSpec, type SpecProblem } from './validate.js';
import { NAME_PATTERN } from './json-schema.js';

export class ManifestError extends Error {
  constructor(
    readonly file: string,
    readonly problems: SpecProblem[],
  ) {
    super(`invalid manifest ${file}:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`);
    this.name = 'ManifestError';
  }
}

export interface ManifestSet {
  environments: EnvironmentResource[];
  datasets: DatasetResource[];
}

/** Validates one parsed document; returns the problems (empty when it is a valid resource). */
export function checkResource(doc: unknown, base = '$'): SpecProblem[] {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return [{ path: base, message: 'must be an object' }];
  const r = doc as Record<string, unknown>;
  const problems: SpecProblem[] = [];
  if (r.apiVersion !== API_GROUP_VERSION) problems.push({ path: `${base}.apiVersion`, message: `must be "${API_GROUP_VERSION}"` });
  if (r.kind !== 'Environment' && r.kind !== 'Dataset') problems.push({ path: `${base}.kind`, message: 'must be "Environment" or "Dataset"' });
  const meta = r.metadata as Record<string, unknown> | undefined;
  if (typeof meta?.name !== 'string' || !new RegExp(NAME_PATTERN).test(meta.name) || meta.name.length > 63) {
    problems.push({ path: `${base}.metadata.name`, message: 'must be a DNS-1123 label (lower case letters, digits and "-", at most 63)' });
  }
  if (problems.length) return problems;
  return r.kind === 'Environment' ? checkEnvironmentSpec(r.spec, `${base}.spec`) : checkDatasetSpec(r.spec, `${base}.spec`, meta!.name as string);
}

/** Parses the YAML text of one file; throws ManifestError naming the file, path and problem. */
export function parseManifests(text: string, file: string): ManifestSet {
  const set: ManifestSet = { environments: [], datasets: [] };
  const docs = parseAllDocuments(text);
  for (const [i, doc] of docs.entries()) {
    const base = docs.length > 1 ? `$[${i}]` : '$';
    if (doc.errors.length) throw new ManifestError(file, doc.errors.map((e) => ({ path: base, message: e.message })));
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const problems = checkResource(value, base);
    if (problems.length) throw new ManifestError(file, problems);
    const resource = value as EnvironmentResource | DatasetResource;
    if (resource.kind === 'Environment') set.environments.push(resource as EnvironmentResource);
    else set.datasets.push(resource as DatasetResource);
  }
  return set;
}

/** Loads every .yaml/.yml file of a directory (or one file). */
export function loadManifests(path: string): ManifestSet {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort()
        .map((f) => join(path, f))
    : [path];
  const set: ManifestSet = { environments: [], datasets: [] };
  for (const file of files) {
    const part = parseManifests(readFileSync(file, 'utf8'), file);
    set.environments.push(...part.environments);
    set.datasets.push(...part.datasets);
  }
  return set;
}
