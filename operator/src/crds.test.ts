import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { datasetSpecSchema, environmentSpecSchema, propertyDefSchema } from '../../model/json-schema.js';
import { parseCidr } from '../../model/cidr.js';
import { crdFiles, datasetCrd, environmentCrd, type Schema } from './crds.js';

const CRD_DIRECTORIES = ['crds', join('charts', 'data-access-operator', 'crds')];

function openApiSchema(crd: Schema): Schema {
  return (crd as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }).spec.versions[0].schema.openAPIV3Schema;
}

/** Every schema node, with its path. */
function* nodes(schema: Schema, path = '$'): Generator<[string, Schema]> {
  yield [path, schema];
  for (const [name, child] of Object.entries((schema.properties as Record<string, Schema>) ?? {})) yield* nodes(child, `${path}.${name}`);
  if (schema.items) yield* nodes(schema.items as Schema, `${path}[]`);
  if (typeof schema.additionalProperties === 'object') yield* nodes(schema.additionalProperties as Schema, `${path}{}`);
}

describe('operator: CRDs', () => {
  it('the checked-in CRD files (crds/ and the chart\'s crds/) are what the generator writes', () => {
    for (const directory of CRD_DIRECTORIES) {
      for (const [file, content] of Object.entries(crdFiles())) {
        const checkedIn = readFileSync(join(directory, file), 'utf8');
        expect(checkedIn, `${directory}/${file} is stale: run npx tsx operator/src/generate-crds.ts`).to.equal(content);
      }
    }
  });

  for (const [kind, crd] of [
    ['Environment', environmentCrd()],
    ['Dataset', datasetCrd()],
  ] as const) {
    describe(kind, () => {
      const schema = openApiSchema(crd);

      it('is namespaced, v1alpha1, served and stored, with a status subresource and short names', () => {
        const spec = crd.spec as any;
        expect(spec.group).to.equal('dataaccess.dev');
        expect(spec.scope).to.equal('Namespaced');
        expect(spec.versions).to.have.length(1);
        expect(spec.versions[0]).to.include({ name: 'v1alpha1', served: true, storage: true });
        expect(spec.versions[0].subresources).to.deep.equal({ status: {} });
        expect(spec.names.shortNames).to.have.length.greaterThan(0);
        // `ds` would shadow DaemonSets in kubectl.
        expect(spec.names.shortNames).to.not.include('ds');
      });

      it('is structural: every node has a type (or preserves unknown fields), no uniqueItems, no additionalProperties: false', () => {
        for (const [path, node] of nodes(schema)) {
          const typeless = node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
          expect(node.type !== undefined || typeless, `${path} has no type`).to.equal(true);
          expect(node.uniqueItems, `${path}: uniqueItems is forbidden in CRDs`).to.not.equal(true);
          expect(node.additionalProperties, `${path}: additionalProperties false is forbidden`).to.not.equal(false);
          expect(node.properties && node.additionalProperties, `${path}: properties and additionalProperties exclude each other`).to.not.be.ok;
        }
      });

      it('describes every field (kubectl explain), metadata aside (the API server forbids describing it)', () => {
        for (const [path, node] of nodes(schema)) {
          if (path === '$.metadata') continue;
          expect(node.description, `${path} has no description`).to.be.a('string').and.not.empty;
        }
      });

      it('has printer columns for readiness and age', () => {
        const columns = (crd.spec as any).versions[0].additionalPrinterColumns.map((c: { name: string }) => c.name);
        expect(columns).to.include.members(['Ready', 'Age']);
      });
    });
  }

  it('Environment columns: type, ready, datasets, replicas, autoscaler bound, age; Dataset columns: location, environment, paused, ready, age', () => {
    const names = (crd: Schema) => ((crd.spec as any).versions[0].additionalPrinterColumns as { name: string; priority?: number }[]).filter((c) => !c.priority).map((c) => c.name);
    expect(names(environmentCrd())).to.deep.equal(['Type', 'Ready', 'Datasets', 'Replicas', 'Max-Replicas', 'Age']);
    expect(names(datasetCrd())).to.deep.equal(['Location', 'Environment', 'Paused', 'Ready', 'Age']);
  });

  describe('covers the model JSON Schema (model/json-schema.ts)', () => {
    /** Walks the model schema and the CRD schema side by side, down to where the CRD stops. */
    function compare(model: Schema, crd: Schema, path: string, problems: string[]): void {
      if (model.$ref === 'property.json') model = propertyDefSchema as unknown as Schema;
      if (crd['x-kubernetes-preserve-unknown-fields'] === true && !crd.properties && !crd.additionalProperties) return; // documented stop
      if (model.enum) {
        if (JSON.stringify([...(model.enum as unknown[])].sort()) !== JSON.stringify([...((crd.enum as unknown[]) ?? [])].sort())) problems.push(`${path}: enum differs`);
      }
      if (model.pattern && model.pattern !== crd.pattern) problems.push(`${path}: pattern differs`);
      for (const [key, child] of Object.entries((model.properties as Record<string, Schema>) ?? {})) {
        const counterpart = (crd.properties as Record<string, Schema> | undefined)?.[key];
        if (!counterpart) problems.push(`${path}.${key}: missing in the CRD`);
        else compare(child, counterpart, `${path}.${key}`, problems);
      }
      for (const required of (model.required as string[]) ?? []) {
        if (!((crd.required as string[]) ?? []).includes(required)) problems.push(`${path}: "${required}" not required in the CRD`);
      }
      if (model.items) compare(model.items as Schema, (crd.items as Schema) ?? {}, `${path}[]`, problems);
      if (typeof model.additionalProperties === 'object') {
        if (typeof crd.additionalProperties !== 'object') problems.push(`${path}{}: map missing in the CRD`);
        else compare(model.additionalProperties as Schema, crd.additionalProperties as Schema, `${path}{}`, problems);
      }
    }

    it('Environment spec', () => {
      const problems: string[] = [];
      compare(environmentSpecSchema as unknown as Schema, (openApiSchema(environmentCrd()).properties as any).spec, '$.spec', problems);
      expect(problems).to.deep.equal([]);
    });

    it('Dataset spec', () => {
      const problems: string[] = [];
      compare(datasetSpecSchema as unknown as Schema, (openApiSchema(datasetCrd()).properties as any).spec, '$.spec', problems);
      expect(problems).to.deep.equal([]);
    });
  });

  describe('validates manifests like the API server would', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('cidr', { type: 'string', validate: (v: string) => parseCidr(v) !== undefined });
    ajv.addFormat('date-time', true);
    ajv.addFormat('int64', true);
    const validators = { Environment: ajv.compile(openApiSchema(environmentCrd())), Dataset: ajv.compile(openApiSchema(datasetCrd())) };
    const check = (doc: any) => {
      const validate = validators[doc.kind as 'Environment' | 'Dataset'];
      return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
    };
    const environment = parse(readFileSync('examples/environment.yaml', 'utf8'));

    it('accepts every example manifest', () => {
      for (const file of ['environment.yaml', 'dataset-demo.yaml', 'dataset-sealed.yaml']) {
        for (const doc of parseAllDocuments(readFileSync(join('examples', file), 'utf8'))) {
          expect(check(doc.toJS()), file).to.deep.equal([]);
        }
      }
    });

    it('refuses an unknown environment type, a malformed CIDR, a bad name and a missing required field', () => {
      expect(check({ ...environment, spec: { ...environment.spec, type: 'hybrid' } })).to.have.length.greaterThan(0);
      const badCidr = structuredClone(environment);
      badCidr.spec.gateways.api.firewall.ipAddresses.allowed = ['10.0.0.0/33'];
      expect(check(badCidr).join()).to.match(/allowed\/0/);
      expect(check({ ...environment, metadata: { name: '1-starts-with-a-digit' } }).join()).to.match(/metadata\/name/);
      expect(check({ ...environment, metadata: { name: 'x'.repeat(31) } }).join()).to.match(/metadata\/name/);
      const { type: _type, ...withoutType } = environment.spec;
      expect(check({ ...environment, spec: withoutType }).join()).to.match(/type/);
    });

    it('refuses an unknown location kind and a link target that is not a schema name', () => {
      const dataset = parse(readFileSync('examples/dataset-demo.yaml', 'utf8'));
      expect(check({ ...dataset, spec: { ...dataset.spec, location: { kind: 'oracle' } } })).to.have.length.greaterThan(0);
      const badLink = structuredClone(dataset);
      badLink.spec.schemas['demo.Person'].properties.employer.schema = 'not a schema';
      expect(check(badLink).join()).to.match(/employer\/schema/);
    });

    it('takes consistency values from the enum only', () => {
      const dataset = parse(readFileSync('examples/dataset-demo.yaml', 'utf8'));
      const withDefault = (level: string) => ({ ...dataset, spec: { ...dataset.spec, location: { ...dataset.spec.location, defaultConsistency: level } } });
      expect(check(withDefault('EVENTUAL'))).to.deep.equal([]);
      expect(check(withDefault('SOMETIMES')).join()).to.match(/location\/defaultConsistency/);
    });
  });
});
