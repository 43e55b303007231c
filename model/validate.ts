/** ajv validation of specs, with errors that name the JSON path and the problem. */
import { locationFieldProblems, refusedConsistency } from './location-kinds.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { parseCidr } from './cidr.js';
import { checkQueries } from './queries.js';
import { INHERITED_NAMES, inheritedNameMessage } from './inherited-names.js';
import { reservedStorageProblems } from './storage.js';
import { datasetSpecSchema, environmentSpecSchema, propertyDefSchema } from './json-schema.js';
import { datasetConfigSchema, environmentConfigSchema } from './config-schema.js';
import { DATAPLANE_DEFAULT_RESOURCES, FUNCTION_GATEWAY_DEFAULT_RESOURCES, checkWorkload } from './workloads.js';
import type { DatasetConfig, DatasetSpec, EnvironmentConfig, EnvironmentSpec } from './types.js';

export type SpecProblem = {
  /** JSON path from the document root, e.g. `$.spec.schemas['demo.Person'].properties.age.type`. */
  path: string;
  message: string;
};

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
ajv.addFormat('cidr', { type: 'string', validate: (value: string) => parseCidr(value) !== undefined });
ajv.addSchema(propertyDefSchema);
const validateDatasetSpec = ajv.compile<DatasetSpec>(datasetSpecSchema);
const validateEnvironmentSpec = ajv.compile<EnvironmentSpec>(environmentSpecSchema);
const validateDatasetConfig = ajv.compile<DatasetConfig>(datasetConfigSchema);
const validateEnvironmentConfig = ajv.compile<EnvironmentConfig>(environmentConfigSchema);

/** Renders an ajv instancePath (`/schemas/demo.Person/properties`) as a JSON path. */
export function jsonPath(base: string, instancePath: string): string {
  if (!instancePath) return base;
  return (
    base +
    instancePath
      .split('/')
      .slice(1)
      .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((seg) => (/^[0-9]+$/.test(seg) ? `[${seg}]` : /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`))
      .join('')
  );
}

export function describeAjvError(error: ErrorObject, base = '$'): SpecProblem {
  const path = jsonPath(base, error.instancePath);
  switch (error.keyword) {
    case 'required':
      return { path, message: `missing required property "${(error.params as { missingProperty: string }).missingProperty}"` };
    case 'additionalProperties':
      return { path, message: `unknown property "${(error.params as { additionalProperty: string }).additionalProperty}"` };
    case 'enum':
      return { path, message: `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}` };
    case 'propertyNames':
      return { path, message: `invalid property name "${(error.params as { propertyName: string }).propertyName}"` };
    default:
      return { path, message: error.message ?? error.keyword };
  }
}

/** Drops ajv's noise: the `if` wrappers and duplicate paths that follow from a more specific error. */
function problemsOf(validate: ValidateFunction, base: string): SpecProblem[] {
  const seen = new Set<string>();
  const problems: SpecProblem[] = [];
  for (const error of validate.errors ?? []) {
    if (error.keyword === 'if') continue;
    const problem = describeAjvError(error, base);
    const key = `${problem.path}\u0000${problem.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      problems.push(problem);
    }
  }
  return problems;
}

/** Checks that the schemas are consistent with each other (what JSON Schema cannot say). */
export function crossCheckDataset(spec: DatasetSpec, base = '$.spec', name = 'dataset'): SpecProblem[] {
  const problems: SpecProblem[] = [];
  // The stores' own schemas (model/storage.ts); `name` gives the default schema of a location that names none.
  for (const problem of reservedStorageProblems({ id: name, location: spec.location })) problems.push({ path: `${base}.location.${problem.field}`, message: problem.message });
  // A default the kind would refuse on every write (the spec: ATOMIC_ALL on an open-table format).
  const refused = spec.location.defaultConsistency && refusedConsistency(spec.location.kind, spec.location.defaultConsistency);
  if (refused) problems.push({ path: `${base}.location.defaultConsistency`, message: refused });
  for (const problem of locationFieldProblems(spec.location)) problems.push({ path: `${base}.location.${problem.field}`, message: problem.message });
  for (const [schemaName, schema] of Object.entries(spec.schemas)) {
    const schemaPath = `${base}.schemas[${JSON.stringify(schemaName)}]`;
    const walk = (props: Record<string, import('./types.js').PropertyDef>, path: string) => {
      for (const [name, prop] of Object.entries(props)) {
        const propPath = `${path}.${name}`;
        if (name === 'id' || name === 'version') {
          problems.push({ path: propPath, message: `"${name}" is a system property and cannot be declared` });
        }
        if (INHERITED_NAMES.has(name)) problems.push({ path: propPath, message: inheritedNameMessage(name, 'property') });
        const raw = prop as { type: string; schema?: string; properties?: unknown };
        if (raw.type === 'link' && raw.schema === undefined) problems.push({ path: propPath, message: 'a link needs "schema"' });
        if (prop.type === 'links') problems.push(...checkInverseLink(spec, schemaName, prop, propPath, path === `${schemaPath}.properties`));
        if (raw.type === 'object' && raw.properties === undefined) problems.push({ path: propPath, message: 'an object needs "properties"' });
        if (raw.type !== 'link' && raw.type !== 'links' && raw.schema !== undefined) problems.push({ path: `${propPath}.schema`, message: 'only a link or links has "schema"' });
        if (raw.type !== 'links' && (raw as { property?: unknown }).property !== undefined) problems.push({ path: `${propPath}.property`, message: 'only an inverse link (links) has "property"' });
        if (raw.type !== 'object' && raw.properties !== undefined) problems.push({ path: `${propPath}.properties`, message: 'only an object has "properties"' });
        // An index orders one column: an object has none of its own, an inverse link is not stored.
        if ((raw.type === 'object' || raw.type === 'links') && (raw as { sortable?: unknown }).sortable !== undefined) {
          const message = raw.type === 'object' ? 'an object cannot be sortable; mark properties inside it' : 'an inverse link (links) is not stored and cannot be sortable; mark the link property of its source schema';
          problems.push({ path: `${propPath}.sortable`, message });
        }
        if (prop.type === 'link' && prop.schema !== undefined && !(prop.schema in spec.schemas)) {
          problems.push({ path: `${propPath}.schema`, message: `link target "${prop.schema}" is not a schema of this dataset` });
        }
        if (prop.type === 'object' && prop.properties) walk(prop.properties, `${propPath}.properties`);
      }
    };
    walk(schema.properties, `${schemaPath}.properties`);
    for (const [i, req] of (schema.required ?? []).entries()) {
      if (!Object.hasOwn(schema.properties, req)) {
        problems.push({ path: `${schemaPath}.required[${i}]`, message: `required property "${req}" is not declared` });
      } else if (schema.properties[req].type === 'links') {
        problems.push({ path: `${schemaPath}.required[${i}]`, message: `"${req}" is an inverse link (not stored) and cannot be required` });
      }
    }
  }
  problems.push(...checkQueries(spec, base));
  return problems;
}

/** `name`: the Dataset's metadata.name, when known (default schema names derive from it). */
export function checkDatasetSpec(spec: unknown, base = '$.spec', name?: string): SpecProblem[] {
  if (!validateDatasetSpec(spec)) return problemsOf(validateDatasetSpec, base);
  return crossCheckDataset(spec, base, name);
}

export function checkEnvironmentSpec(spec: unknown, base = '$.spec'): SpecProblem[] {
  if (!validateEnvironmentSpec(spec)) return problemsOf(validateEnvironmentSpec, base);
  return [
    ...crossCheckEnvironment(spec, base),
    ...checkWorkload(spec.dataplane, DATAPLANE_DEFAULT_RESOURCES, `${base}.dataplane`),
    ...checkWorkload(spec.functionGateway, FUNCTION_GATEWAY_DEFAULT_RESOURCES, `${base}.functionGateway`),
  ];
}

/** A rendered dataset config as read back from a ConfigMap (model/config-schema.ts), then the spec's cross-checks. */
export function checkDatasetConfig(config: unknown, base = '$'): SpecProblem[] {
  if (!validateDatasetConfig(config)) return problemsOf(validateDatasetConfig, base);
  return crossCheckDataset(config, base, config.id);
}

/** A rendered environment config as read back from a ConfigMap, then the spec's cross-checks. */
export function checkEnvironmentConfig(config: unknown, base = '$'): SpecProblem[] {
  if (!validateEnvironmentConfig(config)) return problemsOf(validateEnvironmentConfig, base);
  return crossCheckEnvironment(config, base);
}

/** What JSON Schema cannot say about an environment (spec or rendered config). */
function crossCheckEnvironment(spec: Pick<EnvironmentSpec, 'identityProvider' | 'executors' | 'gateways' | 'functionGateway'>, base: string): SpecProblem[] {
  const problems: SpecProblem[] = [];
  // Settings that only mean something to verified callers are refused rather than silently ignored.
  if ((spec.gateways?.iam?.trust ?? 'network') !== 'verified') {
    if (spec.gateways?.iam?.proxyFrom?.length) {
      problems.push({ path: `${base}.gateways.iam.proxyFrom`, message: 'applies only with gateways.iam.trust: verified (with network, Proxy is believed from every address the firewall admits)' });
    }
    if (spec.functionGateway?.invokers?.length) {
      problems.push({ path: `${base}.functionGateway.invokers`, message: 'applies only with gateways.iam.trust: verified (with network, the function gateway cannot tell its callers apart)' });
    }
  }
  const idp = spec.identityProvider;
  if (idp && !idp.development && !idp.jwksUri && !idp.jwks) {
    problems.push({ path: `${base}.identityProvider`, message: 'needs jwksUri or jwks (or development: true)' });
  }
  const keyIds = new Set<string>();
  for (const [i, key] of (spec.functionGateway?.accessKeys ?? []).entries()) {
    if (keyIds.has(key.accessKeyId)) problems.push({ path: `${base}.functionGateway.accessKeys[${i}].accessKeyId`, message: `duplicate access key id "${key.accessKeyId}"` });
    keyIds.add(key.accessKeyId);
  }
  const names = new Set<string>();
  for (const [i, executor] of (spec.executors ?? []).entries()) {
    if (names.has(executor.name)) problems.push({ path: `${base}.executors[${i}].name`, message: `duplicate executor name "${executor.name}"` });
    names.add(executor.name);
  }
  return problems;
}

/**
 * An inverse link `{type: links, schema: S, property: p}` on schema T: a top-level property of T
 * (pages are over records, not nested objects), S a schema of the dataset, and S.p a link to T.
 */
function checkInverseLink(spec: DatasetSpec, schemaName: string, prop: import('./types.js').LinksProperty, propPath: string, topLevel: boolean): SpecProblem[] {
  if (!topLevel) return [{ path: propPath, message: 'an inverse link (links) must be a top-level property' }];
  if (prop.schema === undefined || prop.property === undefined) return [{ path: propPath, message: 'an inverse link (links) needs "schema" and "property"' }];
  const source = Object.hasOwn(spec.schemas, prop.schema) ? spec.schemas[prop.schema] : undefined;
  if (!source) return [{ path: `${propPath}.schema`, message: `"${prop.schema}" is not a schema of this dataset` }];
  const link = Object.hasOwn(source.properties, prop.property) ? source.properties[prop.property] : undefined;
  if (!link || link.type !== 'link') return [{ path: `${propPath}.property`, message: `"${prop.property}" is not a link property of ${prop.schema}` }];
  if (link.schema !== schemaName) return [{ path: `${propPath}.property`, message: `${prop.schema}.${prop.property} links to ${link.schema}, not to ${schemaName}` }];
  return [];
}
