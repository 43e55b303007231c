/**
 * The Environment's imports claim (spec.bulkLoad.imports) in the data-plane Deployment: a read-only
 * PVC volume mounted read-only at the import root, with its subPath, and DAS_IMPORT_ROOT naming it;
 * without the claim the pod is what it was.
 */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import type { EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { environmentCrd } from '../crds.js';
import { renderEnvironmentObjects } from './environment.js';
import { IMPORTS_MOUNT_PATH, importsParts } from './imports.js';
import { environmentSpecSchema } from '../../../model/json-schema.js';
import { DEFAULT_RENDER_SETTINGS } from './types.js';

const base = loadManifests('examples').environments.find((e) => e.metadata.name === 'local')!;
const environment = (spec: Partial<EnvironmentSpec>): EnvironmentResource => ({
  ...base,
  metadata: { ...base.metadata, namespace: 'team-a', uid: 'env-uid-1' },
  spec: { ...base.spec, ...spec },
});

function podOf(env: EnvironmentResource): any {
  const deployment: any = renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS, []).find((o) => o.kind === 'Deployment' && o.metadata.name === 'local-dataplane');
  return deployment.spec.template.spec;
}
const isImports = (x: { name: string }) => x.name === 'imports' || x.name === 'DAS_IMPORT_ROOT';

describe('operator: the imports claim (file:// bulk loads in a cluster)', () => {
  it('is a read-only PVC volume, mounted read-only at the import root with its subPath, and DAS_IMPORT_ROOT names it', () => {
    const pod = podOf(environment({ bulkLoad: { imports: { claimName: 'bulk-imports', subPath: 'loads' } } }));
    const [container] = pod.containers;
    expect(pod.volumes.filter(isImports)).to.deep.equal([{ name: 'imports', persistentVolumeClaim: { claimName: 'bulk-imports', readOnly: true } }]);
    expect(container.volumeMounts.filter(isImports)).to.deep.equal([{ name: 'imports', mountPath: '/var/lib/data-access-imports', readOnly: true, subPath: 'loads' }]);
    expect(container.env.filter(isImports)).to.deep.equal([{ name: 'DAS_IMPORT_ROOT', value: '/var/lib/data-access-imports' }]);
    // Outside DATA_DIR (an emptyDir), so the data plane's own files never land on the claim.
    const dataDir = container.env.find((e: { name: string }) => e.name === 'DATA_DIR').value;
    expect(IMPORTS_MOUNT_PATH.startsWith(`${dataDir}/`)).to.equal(false);
  });

  it('without a subPath mounts the volume root', () => {
    const pod = podOf(environment({ bulkLoad: { imports: { claimName: 'bulk-imports' } } }));
    expect(pod.containers[0].volumeMounts.filter(isImports)).to.deep.equal([{ name: 'imports', mountPath: '/var/lib/data-access-imports', readOnly: true }]);
  });

  it('without the claim there is no volume, mount or env; with it nothing else in the pod changes', () => {
    const without = podOf(environment({}));
    expect(without.volumes.filter(isImports)).to.deep.equal([]);
    expect(without.containers[0].volumeMounts.filter(isImports)).to.deep.equal([]);
    expect(without.containers[0].env.filter(isImports)).to.deep.equal([]);
    expect(podOf(environment({ bulkLoad: { s3: { region: 'eu-west-1' } } }))).to.deep.equal(without);
    expect(importsParts(environment({ bulkLoad: {} }))).to.deep.equal({ volumes: [], volumeMounts: [], env: [] });

    const withClaim = podOf(environment({ bulkLoad: { s3: { region: 'eu-west-1' }, imports: { claimName: 'bulk-imports', subPath: 'loads' } } }));
    const stripped = {
      ...withClaim,
      volumes: withClaim.volumes.filter((v: { name: string }) => !isImports(v)),
      containers: [{ ...withClaim.containers[0], volumeMounts: withClaim.containers[0].volumeMounts.filter((m: { name: string }) => !isImports(m)), env: withClaim.containers[0].env.filter((e: { name: string }) => !isImports(e)) }],
    };
    expect(stripped).to.deep.equal(without);
  });

  it('the CRD takes the same fields and patterns as the model, and no others', () => {
    const crdImports: any = (environmentCrd() as any).spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.bulkLoad.properties.imports;
    const modelImports: any = environmentSpecSchema.properties.bulkLoad.properties.imports;
    expect(crdImports.required).to.deep.equal(['claimName']);
    expect(Object.keys(crdImports.properties)).to.deep.equal(Object.keys(modelImports.properties));
    for (const field of ['claimName', 'subPath']) {
      for (const rule of ['pattern', 'minLength', 'maxLength']) expect(crdImports.properties[field][rule], `${field}.${rule}`).to.equal(modelImports.properties[field][rule]);
    }
    expect(crdImports['x-kubernetes-preserve-unknown-fields']).to.equal(undefined);
  });
});
