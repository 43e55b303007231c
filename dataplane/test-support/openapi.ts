/** Checks on OpenAPI documents shared by the unit and HTTP tests: $ref resolution and ajv (2020-12) validation against a component. */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** Every local `$ref` in the document that points at nothing (JSON pointers, `~0`/`~1` unescaped). */
export function unresolvedRefs(doc: unknown): string[] {
  const missing: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && resolvePointer(doc, value) === undefined) missing.push(value);
      else walk(value);
    }
  };
  walk(doc);
  return missing;
}

function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined; // the document is self-contained: no other kind of ref is expected
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!node || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * A checker for values against the document's components (draft 2020-12, as OpenAPI 3.1 says):
 * `check('demo_Person', record)` gives ajv's errors, [] when the value is valid. Compiling every
 * component up front also proves each one is a valid JSON Schema.
 */
export function componentValidator(doc: Record<string, any>): (component: string, value: unknown) => unknown[] {
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateFormats: true }));
  const base = 'https://openapi.test/doc.json';
  ajv.addSchema({ $id: base, components: { schemas: doc.components.schemas } });
  const validators = new Map(Object.keys(doc.components.schemas).map((name) => [name, ajv.compile({ $ref: `${base}#/components/schemas/${name}` })]));
  return (component, value) => {
    const validate = validators.get(component);
    if (!validate) throw new Error(`no component ${component}`);
    return validate(value) ? [] : [...(validate.errors ?? [])];
  };
}
