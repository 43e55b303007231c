import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { EXAMPLE_ENVIRONMENT_OBJECTS } from '../../test/example-objects.js';
import type { DatasetResource, EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { canonicalJson } from './canonical-json.js';
import { renderDatasetObjects } from './dataset.js';
import { renderEnvironmentObjects } from './environment.js';
import { SECRETS_MOUNT_ROOT, secretVolumeName } from '../../../model/secrets.js';
import { datasetSecretRefs, type WithConnectionSecret } from './secrets.js';
import { DEFAULT_IMAGE, DEFAULT_RENDER_SETTINGS, type DesiredObject } from './types.js';

const examples = loadManifests('examples');

function environment(spec: Partial<EnvironmentSpec> = {}, name = 'local'): EnvironmentResource {
  const base = examples.environments.find((e) => e.metadata.name === 'local')!;
  return {
    ...base,
    metadata: { ...base.metadata, name, namespace: 'team-a', uid: 'env-uid-1', generation: 3 },
    spec: { ...base.spec, ...spec },
  };
}

function byKindAndName(objects: DesiredObject[], kind: string, name: string): any {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

describe('operator: rendering an Environment', () => {
  const objects = renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS);

  it('renders the objects named in docs/architecture.md, in the Environment\'s namespace', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).to.have.members(EXAMPLE_ENVIRONMENT_OBJECTS);
    for (const o of objects) expect(o.metadata.namespace).to.equal('team-a');
  });

  it('labels everything as managed by the operator for this Environment and makes the Environment its controller', () => {
    for (const o of objects) {
      expect(o.metadata.labels).to.include({ 'app.kubernetes.io/managed-by': 'data-access-operator', 'dataaccess.dev/environment': 'local' });
      expect(o.metadata.ownerReferences).to.deep.equal([
        { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', name: 'local', uid: 'env-uid-1', controller: true, blockOwnerDeletion: true },
      ]);
    }
  });

  it('data plane: port 8080, ConfigMap config source, probes, its own ServiceAccount', () => {
    const deployment = byKindAndName(objects, 'Deployment', 'local-dataplane');
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(pod.serviceAccountName).to.equal('local-dataplane');
    expect(container.ports).to.deep.equal([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    expect(env).to.include({ DAS_CONFIG_SOURCE: 'kubernetes', DAS_NAMESPACE: 'team-a', DAS_ENVIRONMENT: 'local', PORT: '8080' });
    expect(container.readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });
    expect(deployment.spec.selector.matchLabels).to.deep.equal({ 'dataaccess.dev/environment': 'local', 'app.kubernetes.io/component': 'dataplane' });
    expect(deployment.spec.template.metadata.labels).to.include(deployment.spec.selector.matchLabels);
    expect(deployment.spec.replicas).to.equal(2);
  });

  it('data plane Role: read ConfigMaps and the Datasets\' status (its StorageRetained condition), nothing else (no admin principals); bound to the data plane ServiceAccount', () => {
    const withoutAdmins = renderEnvironmentObjects(environment({ admin: undefined }), DEFAULT_RENDER_SETTINGS);
    expect(byKindAndName(withoutAdmins, 'Role', 'local-dataplane').rules).to.deep.equal([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['dataaccess.dev'], resources: ['datasets/status'], verbs: ['get', 'patch'] },
    ]);
    const binding = byKindAndName(objects, 'RoleBinding', 'local-dataplane');
    expect(binding.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'local-dataplane', namespace: 'team-a' }]);
    expect(binding.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'local-dataplane' });
  });

  it('data plane Role with admin principals: also Datasets (get, list, create, patch, delete), in its namespace only', () => {
    const rendered = renderEnvironmentObjects(environment({ admin: { principals: ['ops-*'] } }), DEFAULT_RENDER_SETTINGS);
    const role = byKindAndName(rendered, 'Role', 'local-dataplane');
    expect(role.metadata.namespace).to.equal('team-a');
    expect(role.rules).to.deep.equal([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['dataaccess.dev'], resources: ['datasets/status'], verbs: ['get', 'patch'] },
      { apiGroups: ['dataaccess.dev'], resources: ['datasets'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
    ]);
  });

  it('internal load balancer: type LoadBalancer, port 80 → 8080, internal for AWS, GCP and Azure', () => {
    const service = byKindAndName(objects, 'Service', 'local-internal');
    expect(service.spec.type).to.equal('LoadBalancer');
    expect(service.spec.ports).to.deep.equal([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.metadata.annotations).to.deep.equal({
      'service.beta.kubernetes.io/aws-load-balancer-internal': 'true',
      'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal',
      'networking.gke.io/load-balancer-type': 'Internal',
      'service.beta.kubernetes.io/azure-load-balancer-internal': 'true',
    });
    expect(service.spec.selector).to.deep.equal({ 'dataaccess.dev/environment': 'local', 'app.kubernetes.io/component': 'dataplane' });
  });

  it('API gateway Service keeps client addresses (externalTrafficPolicy Local) for the firewall', () => {
    const service = byKindAndName(objects, 'Service', 'local-api');
    expect(service.spec).to.include({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
    expect(service.metadata.annotations).to.equal(undefined);
  });

  it('environment ConfigMap: environment.json is the rendered environment config', () => {
    const configMap = byKindAndName(objects, 'ConfigMap', 'local-dataplane');
    expect(configMap.metadata.labels).to.include({ 'dataaccess.dev/config': 'environment' });
    const config = JSON.parse(configMap.data['environment.json']);
    expect(config).to.include({ id: 'local', namespace: 'team-a', type: 'internal' });
    expect(config.functionGateway).to.deep.equal({ enabled: true, name: 'service-local-function-service-gateway', invokers: [] });
    expect(config.gateways.api.firewall.ipAddresses.allowed).to.deep.equal(['127.0.0.0/8', '::1/128']);
  });

  it('function gateway: Deployment and Service named service-E-function-service-gateway, calling the internal load balancer', () => {
    const deployment = byKindAndName(objects, 'Deployment', 'service-local-function-service-gateway');
    const pod = deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).to.equal(false);
    const env = Object.fromEntries(pod.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));
    expect(env.DAS_UPSTREAM_URL).to.equal('http://local-internal.team-a.svc:80');
    expect(byKindAndName(objects, 'Service', 'service-local-function-service-gateway').spec.ports[0]).to.include({ port: 80, targetPort: 'http' });
  });

  it('firewall NetworkPolicy: Ingress on the data-plane pods from the allowed ranges, plus the function gateway pods', () => {
    const policy = byKindAndName(objects, 'NetworkPolicy', 'local-firewall');
    expect(policy.spec.podSelector).to.deep.equal({ matchLabels: { 'dataaccess.dev/environment': 'local', 'app.kubernetes.io/component': 'dataplane' } });
    expect(policy.spec.policyTypes).to.deep.equal(['Ingress']);
    expect(policy.spec.ingress[0].from).to.deep.equal([
      { ipBlock: { cidr: '127.0.0.0/8', except: [] } },
      { ipBlock: { cidr: '::1/128', except: [] } },
    ]);
    expect(policy.spec.ingress[1].from).to.deep.equal([
      { podSelector: { matchLabels: { 'dataaccess.dev/environment': 'local', 'app.kubernetes.io/component': 'function-gateway' } } },
    ]);
  });

  it('a public environment has no internal load balancer; the function gateway calls the API gateway Service', () => {
    const rendered = renderEnvironmentObjects(environment({ type: 'public' }), DEFAULT_RENDER_SETTINGS);
    expect(rendered.find((o) => o.metadata.name === 'local-internal')).to.equal(undefined);
    const gateway = byKindAndName(rendered, 'Deployment', 'service-local-function-service-gateway');
    expect(gateway.spec.template.spec.containers[0].env).to.deep.include({ name: 'DAS_UPSTREAM_URL', value: 'http://local-api.team-a.svc:80' });
  });

  it('function gateway accessKeys: DAS_ACCESS_KEYS without any secret, each Secret key mounted read-only below DAS_SECRETS_DIR, fsGroup to read it', () => {
    const accessKeys = [
      { name: 'etl-job', accessKeyId: 'AKIDETL0000000000001', secretRef: { name: 'lambda-keys', key: 'etl' } },
      { name: 'etl-job', accessKeyId: 'AKIDETL0000000000002', secretRef: { name: 'lambda-keys', key: 'etl-next' } },
      { name: 'reporting', accessKeyId: 'AKIDREPORTING0000001', secretRef: { name: 'reporting-key', key: 'secret' } },
    ];
    const rendered = renderEnvironmentObjects(environment({ functionGateway: { accessKeys } }), DEFAULT_RENDER_SETTINGS);
    const pod = byKindAndName(rendered, 'Deployment', 'service-local-function-service-gateway').spec.template.spec;
    const container = pod.containers[0];
    expect(container.env).to.deep.include({ name: 'DAS_ACCESS_KEYS', value: JSON.stringify(accessKeys) });
    expect(container.env).to.deep.include({ name: 'DAS_SECRETS_DIR', value: SECRETS_MOUNT_ROOT });
    expect(pod.securityContext.fsGroup).to.equal(10001);
    expect(pod.volumes.find((v: { name: string }) => v.name === secretVolumeName('lambda-keys')).secret).to.deep.equal({
      secretName: 'lambda-keys',
      items: [{ key: 'etl', path: 'etl' }, { key: 'etl-next', path: 'etl-next' }],
      defaultMode: 0o440,
      optional: false,
    });
    expect(pod.volumes.find((v: { name: string }) => v.name === secretVolumeName('reporting-key')).secret.items).to.deep.equal([{ key: 'secret', path: 'secret' }]);
    expect(container.volumeMounts).to.deep.include({ name: secretVolumeName('lambda-keys'), mountPath: `${SECRETS_MOUNT_ROOT}/lambda-keys`, readOnly: true });
    expect(container.volumeMounts).to.deep.include({ name: secretVolumeName('reporting-key'), mountPath: `${SECRETS_MOUNT_ROOT}/reporting-key`, readOnly: true });
    // Without keys the gateway's pod is as before (no rollout of existing gateways).
    const plain = byKindAndName(objects, 'Deployment', 'service-local-function-service-gateway').spec.template.spec;
    expect(plain.containers[0].env.map((e: { name: string }) => e.name)).to.not.include.members(['DAS_ACCESS_KEYS', 'DAS_SECRETS_DIR']);
    expect(plain.securityContext.fsGroup).to.equal(undefined);
    expect(plain.volumes.map((v: { name: string }) => v.name)).to.deep.equal(['tmp']);
  });

  it('functionGateway.enabled: false renders no function gateway and no ingress rule for it', () => {
    const rendered = renderEnvironmentObjects(environment({ functionGateway: { enabled: false } }), DEFAULT_RENDER_SETTINGS);
    expect(rendered.filter((o) => o.metadata.name.startsWith('service-'))).to.deep.equal([]);
    const policy = byKindAndName(rendered, 'NetworkPolicy', 'local-firewall');
    expect(policy.spec.ingress).to.have.length(1);
    expect(JSON.parse(byKindAndName(rendered, 'ConfigMap', 'local-dataplane').data['environment.json']).functionGateway.enabled).to.equal(false);
  });

  it('a firewall that admits no address and no function gateway renders no ingress rule at all (not an empty from)', () => {
    const rendered = renderEnvironmentObjects(
      environment({ functionGateway: { enabled: false }, gateways: { api: { firewall: { ipAddresses: { allowed: ['10.1.0.0/16'], blocked: ['10.0.0.0/8'] } } } } }),
      DEFAULT_RENDER_SETTINGS,
    );
    expect(byKindAndName(rendered, 'NetworkPolicy', 'local-firewall').spec.ingress).to.deep.equal([]);
  });

  it('images and replicas come from the Environment when set, else from the operator settings', () => {
    const rendered = renderEnvironmentObjects(
      environment({ dataplane: { image: 'registry.example/dp:2', replicas: 5 }, functionGateway: { image: 'registry.example/fg:2' } }),
      { ...DEFAULT_RENDER_SETTINGS, dataplaneImage: 'unused' },
    );
    const dataplane = byKindAndName(rendered, 'Deployment', 'local-dataplane');
    expect(dataplane.spec.replicas).to.equal(5);
    expect(dataplane.spec.template.spec.containers[0].image).to.equal('registry.example/dp:2');
    expect(byKindAndName(rendered, 'Deployment', 'service-local-function-service-gateway').spec.template.spec.containers[0].image).to.equal('registry.example/fg:2');
  });

  it('by default the data plane and the function gateway run the service\'s one image, as its entry point (no command)', () => {
    const gateway = byKindAndName(objects, 'Deployment', 'service-local-function-service-gateway').spec.template.spec.containers[0];
    const dataplane = byKindAndName(objects, 'Deployment', 'local-dataplane').spec.template.spec.containers[0];
    expect([dataplane.image, gateway.image]).to.deep.equal([DEFAULT_IMAGE, DEFAULT_IMAGE]);
    expect([dataplane.command, dataplane.args, gateway.command, gateway.args]).to.deep.equal([undefined, undefined, undefined, undefined]);
    expect(gateway.env).to.deep.include({ name: 'DAS_MODE', value: 'function-gateway' });
  });

  it('is a pure function: rendering twice gives identical objects', () => {
    const again = renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS);
    expect(canonicalJson(again)).to.equal(canonicalJson(objects));
  });

  describe('connection Secrets of its Datasets', () => {
    const withRef = (name: string, key: string) => ({ spec: { location: { connectionSecretRef: { name, key } } } });
    const render = (datasets: WithConnectionSecret[]) =>
      byKindAndName(renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS, datasetSecretRefs(datasets)), 'Deployment', 'local-dataplane');
    const podOf = (deployment: any) => deployment.spec.template.spec;
    const secretVolumesOf = (deployment: any) => podOf(deployment).volumes.filter((v: any) => v.secret);
    const secretMountsOf = (deployment: any) => podOf(deployment).containers[0].volumeMounts.filter((m: any) => m.mountPath.startsWith(`${SECRETS_MOUNT_ROOT}/`));
    /** `mountPath <- secretName: key,key` per mount, joined through the volume name. */
    const mounted = (deployment: any) =>
      secretMountsOf(deployment).map((m: any) => {
        const volume = podOf(deployment).volumes.find((v: any) => v.name === m.name);
        return `${m.mountPath} <- ${volume.secret.secretName}: ${volume.secret.items.map((i: any) => i.key).join(',')}`;
      });

    it('no refs: no secret volume or mount, and a Dataset without a ref adds none; the mount root is always set', () => {
      const plain = byKindAndName(objects, 'Deployment', 'local-dataplane');
      expect(secretVolumesOf(plain)).to.deep.equal([]);
      expect(secretMountsOf(plain)).to.deep.equal([]);
      expect(render([{ spec: { location: {} } }, {}])).to.deep.equal(plain);
      expect(podOf(plain).containers[0].env).to.deep.include({ name: 'DAS_SECRETS_DIR', value: '/var/run/dataaccess/secrets' });
      expect(podOf(plain).containers[0].env.filter((e: { name: string }) => e.name.startsWith('DAS_SECRET_'))).to.deep.equal([]);
    });

    it('a ref becomes a read-only secret volume of only its key, mounted at the root/<secret name>; no value and no secretKeyRef in the Deployment', () => {
      const deployment = render([withRef('orders-db', 'url')]);
      const volumeName = secretVolumeName('orders-db');
      expect(volumeName).to.match(/^secret-[0-9a-f]{16}$/);
      expect(secretVolumesOf(deployment)).to.deep.equal([
        { name: volumeName, secret: { secretName: 'orders-db', items: [{ key: 'url', path: 'url' }], defaultMode: 0o440, optional: false } },
      ]);
      expect(secretMountsOf(deployment)).to.deep.equal([{ name: volumeName, mountPath: '/var/run/dataaccess/secrets/orders-db', readOnly: true }]);
      expect(JSON.stringify(podOf(deployment).containers[0].env)).not.to.contain('secretKeyRef');
    });

    it('the non-root data plane can read the files through the pod fsGroup (0440: owner root, group fsGroup); nobody else can', () => {
      const deployment = render([withRef('orders-db', 'url')]);
      expect(podOf(deployment).securityContext).to.include({ runAsNonRoot: true, fsGroup: 10001 });
      expect(secretVolumesOf(deployment)[0].secret.defaultMode & 0o007).to.equal(0);
    });

    it('the order of the Datasets changes nothing: volumes sorted by Secret name, keys sorted within', () => {
      const a = withRef('zeta-db', 'url');
      const b = withRef('alpha-db', 'conn.string');
      const c = withRef('alpha-db', 'admin');
      const forward = render([a, b, c]);
      expect(render([c, b, a])).to.deep.equal(forward);
      expect(mounted(forward)).to.deep.equal([
        '/var/run/dataaccess/secrets/alpha-db <- alpha-db: admin,conn.string',
        '/var/run/dataaccess/secrets/zeta-db <- zeta-db: url',
      ]);
    });

    it('a ref named by several Datasets is mounted once', () => {
      const deployment = render([withRef('shared-db', 'url'), withRef('other-db', 'url'), withRef('shared-db', 'url')]);
      expect(mounted(deployment)).to.deep.equal(['/var/run/dataaccess/secrets/other-db <- other-db: url', '/var/run/dataaccess/secrets/shared-db <- shared-db: url']);
    });

    it('refs that differ only in where name ends and key begins, or in case, get files of their own', () => {
      const deployment = render([withRef('a-b', 'c'), withRef('a', 'b-c'), withRef('a', 'B-c')]);
      expect(mounted(deployment)).to.deep.equal(['/var/run/dataaccess/secrets/a <- a: B-c,b-c', '/var/run/dataaccess/secrets/a-b <- a-b: c']);
      const names = secretVolumesOf(deployment).map((v: any) => v.name);
      expect(new Set(names).size).to.equal(2);
    });

    it('volume names are DNS labels of at most 63 characters, even for a 253-character Secret name, and distinct per Secret', () => {
      const long = `${'a'.repeat(251)}-b`;
      const longer = `${'a'.repeat(251)}-c`;
      const deployment = render([withRef(long, 'url'), withRef(longer, 'url')]);
      const names: string[] = secretVolumesOf(deployment).map((v: any) => v.name);
      expect(names).to.have.length(2);
      for (const name of names) expect(name).to.match(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
      expect(names[0]).not.to.equal(names[1]);
      expect(secretVolumeName(long)).to.equal(names[0]); // deterministic: from the name alone
    });

    it('a key or name no Secret can have is left out (the API server would refuse the whole Deployment)', () => {
      const deployment = render([withRef('db', 'a/b'), withRef('db', '..'), withRef('db', '.'), withRef('db', '..x'), withRef('Bad_Name', 'url'), withRef('../etc', 'url'), withRef('db', 'url')]);
      expect(mounted(deployment)).to.deep.equal(['/var/run/dataaccess/secrets/db <- db: url']);
    });

    it('no Secret access for the data plane: its Role is unchanged', () => {
      const rendered = renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS, [{ name: 'orders-db', key: 'url' }]);
      expect(byKindAndName(rendered, 'Role', 'local-dataplane')).to.deep.equal(byKindAndName(objects, 'Role', 'local-dataplane'));
    });
  });

  it('refuses an Environment without a uid (it must come from the API server)', () => {
    const env = environment();
    delete env.metadata.uid;
    expect(() => renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS)).to.throw(/no uid/);
  });
});

describe('operator: rendering a Dataset', () => {
  function dataset(name: string): DatasetResource {
    const base = examples.datasets.find((d) => d.metadata.name === name)!;
    return { ...base, metadata: { ...base.metadata, namespace: 'team-a', uid: `ds-uid-${name}`, generation: 4 } };
  }

  it('renders ConfigMap E-dataset-D with dataset.json, owned by the Dataset', () => {
    const [configMap] = renderDatasetObjects(dataset('demo')) as any[];
    expect(configMap.metadata.name).to.equal('local-dataset-demo');
    expect(configMap.metadata.labels).to.deep.equal({
      'app.kubernetes.io/managed-by': 'data-access-operator',
      'dataaccess.dev/environment': 'local',
      'dataaccess.dev/config': 'dataset',
      'dataaccess.dev/dataset': 'demo',
    });
    expect(configMap.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', name: 'demo', uid: 'ds-uid-demo', controller: true, blockOwnerDeletion: true },
    ]);
    const config = JSON.parse(configMap.data['dataset.json']);
    expect(config).to.include({ id: 'demo', environment: 'local', generation: 4, deletionPolicy: 'Retain' });
    expect(config.auth.iam.rawSqlEndpointEnabled).to.equal(true);
    expect(Object.keys(config.schemas)).to.have.members(['demo.Company', 'demo.Person']);
  });

  it('carries rawSqlEndpointEnabled: false too (the data plane refuses raw SQL then)', () => {
    const [configMap] = renderDatasetObjects(dataset('sealed')) as any[];
    expect(JSON.parse(configMap.data['dataset.json']).auth.iam.rawSqlEndpointEnabled).to.equal(false);
  });

  it('renders the same text whatever the key order of the spec (no write for a reordered spec)', () => {
    const original = dataset('demo');
    const reversed = JSON.parse(JSON.stringify(original), (_key, value) =>
      value && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).reverse()) : value,
    ) as DatasetResource;
    expect(Object.keys(reversed.spec)[0]).to.not.equal(Object.keys(original.spec)[0]);
    expect((renderDatasetObjects(reversed)[0] as any).data).to.deep.equal((renderDatasetObjects(original)[0] as any).data);
  });

  it('holds no credentials: the connection is a Secret reference', () => {
    const withSecret = dataset('demo');
    withSecret.spec = { ...withSecret.spec, location: { ...withSecret.spec.location, connectionSecretRef: { name: 'demo-db', key: 'url' } } };
    const config = JSON.parse((renderDatasetObjects(withSecret)[0] as any).data['dataset.json']);
    expect(config.location.connectionSecretRef).to.deep.equal({ name: 'demo-db', key: 'url' });
  });
});
