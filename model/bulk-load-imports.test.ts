/**
 * `spec.bulkLoad.imports` of an Environment: the PersistentVolumeClaim the operator mounts as the
 * import root. The claim name is a DNS name and the subPath a relative path that cannot climb out of
 * the volume; anything else is refused with the JSON path of the bad field.
 */
import { expect } from 'chai';
import { loadManifests } from './manifests.js';
import type { EnvironmentSpec } from './types.js';
import { renderEnvironmentConfig } from './render.js';
import { checkEnvironmentConfig, checkEnvironmentSpec } from './validate.js';

const local = loadManifests('examples').environments.find((e) => e.metadata.name === 'local')!;
const base = local.spec;
const problems = (imports: unknown): string[] => checkEnvironmentSpec({ ...base, bulkLoad: { imports } } as EnvironmentSpec).map((p) => `${p.path} ${p.message}`);

describe('model: spec.bulkLoad.imports', () => {
  it('takes a claim name, with or without a relative subPath, beside s3', () => {
    expect(problems({ claimName: 'bulk-imports' })).to.deep.equal([]);
    expect(problems({ claimName: 'bulk-imports', subPath: 'loads' })).to.deep.equal([]);
    expect(problems({ claimName: 'b', subPath: 'team-a/2026_11/v1.2' })).to.deep.equal([]);
    const both = { ...base, bulkLoad: { s3: { region: 'eu-west-1' }, imports: { claimName: 'bulk-imports' } } };
    expect(checkEnvironmentSpec(both)).to.deep.equal([]);
  });

  it('refuses a claim name that is not a DNS name, or none', () => {
    expect(problems({ claimName: 'Bulk_Imports' })).to.deep.equal([`$.spec.bulkLoad.imports.claimName must match pattern "${'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'}"`]);
    expect(problems({ claimName: '' }).join('\n')).to.contain('$.spec.bulkLoad.imports.claimName');
    expect(problems({ claimName: 'a'.repeat(254) }).join('\n')).to.contain('$.spec.bulkLoad.imports.claimName');
    expect(problems({ subPath: 'loads' })).to.deep.equal(['$.spec.bulkLoad.imports missing required property "claimName"']);
  });

  it('refuses a subPath that is absolute, climbs out, is empty or too long', () => {
    for (const subPath of ['/loads', '/', '..', '../x', 'loads/..', 'loads/../../etc', '.', './loads', 'a//b', 'loads/', '.hidden', 'a\\..\\b', 'a b', 'a'.repeat(256), '']) {
      const found = problems({ claimName: 'bulk-imports', subPath });
      expect(found, JSON.stringify(subPath)).to.have.length.greaterThan(0);
      for (const p of found) expect(p, JSON.stringify(subPath)).to.match(/^\$\.spec\.bulkLoad\.imports\.subPath /);
    }
    expect(problems({ claimName: 'b', subPath: 'a'.repeat(255) })).to.deep.equal([]);
    expect(problems({ claimName: 'b', subPath: 7 })).to.deep.equal(['$.spec.bulkLoad.imports.subPath must be string']);
  });

  it('refuses unknown fields: no other volume type can be asked for', () => {
    expect(problems({ claimName: 'b', hostPath: { path: '/etc' } })).to.deep.equal(['$.spec.bulkLoad.imports unknown property "hostPath"']);
    expect(problems({ claimName: 'b', readOnly: false })).to.deep.equal(['$.spec.bulkLoad.imports unknown property "readOnly"']);
    const other = checkEnvironmentSpec({ ...base, bulkLoad: { hostPath: { path: '/' } } } as unknown as EnvironmentSpec).map((p) => `${p.path} ${p.message}`);
    expect(other).to.deep.equal(['$.spec.bulkLoad unknown property "hostPath"']);
  });

  it('the rendered environment config the data plane reads back still validates with it (the data plane ignores it: DAS_IMPORT_ROOT is enough)', () => {
    const config = renderEnvironmentConfig({ ...local, spec: { ...base, bulkLoad: { imports: { claimName: 'bulk-imports', subPath: 'loads' } } } });
    expect(checkEnvironmentConfig(JSON.parse(JSON.stringify(config)))).to.deep.equal([]);
  });
});
