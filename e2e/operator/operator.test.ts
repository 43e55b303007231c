/**
 * The operator end to end, against a real etcd + kube-apiserver + kube-controller-manager:
 * the chart installs CRDs and RBAC; the operator runs as a local process with the chart's
 * ServiceAccount (its Pod never runs: no kubelet), so every request it makes passes the chart's
 * least-privilege RBAC; the examples are applied with kubectl as a user would.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { DEFAULT_IMAGE } from '../../operator/src/render/types.js';
import { secretVolumeName } from '../../model/secrets.js';
import {
  CHART,
  REPO_ROOT,
  apiServerWrites,
  apply,
  condition,
  createNamespace,
  getObject,
  httpGet,
  httpRequest,
  kubectl,
  kubectlJson,
  quiescentApiServerWrites,
  resyncAndCountWrites,
  serviceAccountKubeconfig,
  startClusterDataPlane,
  startOperator,
  waitFor,
  waitForCondition,
  type OperatorProcess,
} from './harness.js';

const RELEASE = 'dao';
const RELEASE_NAMESPACE = 'dao-system';
const FULLNAME = `${RELEASE}-data-access-operator`;
const EXAMPLES = join(REPO_ROOT, 'examples');
const FINALIZER = 'dataaccess.dev/finalizer';
const MANAGED = 'app.kubernetes.io/managed-by=data-access-operator';

describe('operator e2e (kube-apiserver, controller-manager, helm chart)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let operatorKubeconfig: string;
  let operator: OperatorProcess;

  const startChartOperator = () =>
    startOperator(operatorKubeconfig, { LEASE_NAMESPACE: RELEASE_NAMESPACE, LEASE_NAME: FULLNAME, RESYNC_PERIOD_SECONDS: '0', POD_NAME: `e2e-${process.pid}` });

  async function applyExamples(prefix: string): Promise<string> {
    const namespace = await createNamespace(cluster, prefix);
    await kubectl(cluster, ['-n', namespace, 'apply', '-f', EXAMPLES]);
    await waitForCondition(cluster, namespace, 'dataset', 'demo', 'Ready', 'True');
    await waitForCondition(cluster, namespace, 'dataset', 'sealed', 'Ready', 'True');
    await waitForCondition(cluster, namespace, 'environment', 'local', 'Reconciled', 'True');
    return namespace;
  }

  before(async () => {
    cluster = await startKubeCluster({ controllerManager: true });
    const install = await cluster.helm(['install', RELEASE, CHART, '--namespace', RELEASE_NAMESPACE, '--create-namespace']);
    expect(install.code, install.stderr).to.equal(0);
    operatorKubeconfig = await serviceAccountKubeconfig(cluster, RELEASE_NAMESPACE, FULLNAME);
    operator = await startChartOperator();
  });

  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('helm install: CRDs from the chart, least-privilege RBAC, and the operator Deployment (Pending: no kubelet here)', async () => {
    for (const crd of ['environments.dataaccess.dev', 'datasets.dataaccess.dev']) {
      const installed = await kubectlJson(cluster, ['get', 'crd', crd]);
      const file = readFileSync(join(REPO_ROOT, 'crds', `dataaccess.dev_${crd.split('.')[0]}.yaml`), 'utf8');
      const expected = parseAllDocuments(file)[0].toJS();
      expect(installed.spec.versions[0].schema).to.deep.equal(expected.spec.versions[0].schema);
    }
    const role = await kubectlJson(cluster, ['get', 'clusterrole', FULLNAME]);
    expect(role.rules.flatMap((r: { resources: string[] }) => r.resources)).to.not.include('secrets');
    const deployment = await kubectlJson(cluster, ['-n', RELEASE_NAMESPACE, 'get', 'deployment', FULLNAME]);
    expect(deployment.spec.template.spec.serviceAccountName).to.equal(FULLNAME);
    // One image for everything: the operator runs it with a command override and, by default,
    // names the same image for the data plane and the function gateway (the operator's own default).
    const operatorContainer = deployment.spec.template.spec.containers[0];
    expect(operatorContainer.image).to.equal(DEFAULT_IMAGE);
    expect(operatorContainer.command).to.deep.equal(['node', 'dist/operator/src/main.js']);
    const operatorEnv = Object.fromEntries(operatorContainer.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(operatorEnv).to.include({ DATAPLANE_IMAGE: DEFAULT_IMAGE, FUNCTION_GATEWAY_IMAGE: DEFAULT_IMAGE });
    // A small young generation: the operator's resident memory stays well under its budget (values.yaml).
    expect(operatorEnv).to.include({ NODE_OPTIONS: '--max-semi-space-size=2' });
    // The local operator runs as the chart's ServiceAccount: it cannot read Secrets.
    const canI = await cluster.kubectl(['auth', 'can-i', 'get', 'secrets', '--kubeconfig', operatorKubeconfig, '-n', 'default']);
    expect(canI.stdout.trim()).to.equal('no');
  });

  it('helm lint is clean, and helm template renders what the API server accepts (cluster-wide and one-namespace RBAC)', async () => {
    const lint = await cluster.helm(['lint', '--strict', CHART]);
    expect(lint.code, lint.stdout + lint.stderr).to.equal(0);
    expect(lint.stdout).to.not.match(/\[(WARNING|ERROR)\]/);
    for (const values of [[], ['--set', `watchNamespace=${RELEASE_NAMESPACE}`, '--set', 'replicas=2']]) {
      const rendered = await cluster.helm(['template', 'probe', CHART, '--namespace', RELEASE_NAMESPACE, ...values]);
      expect(rendered.code, rendered.stderr).to.equal(0);
      const dryRun = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: rendered.stdout });
      expect(dryRun.code, dryRun.stderr).to.equal(0);
    }
    const refused = await cluster.helm(['template', 'probe', CHART, '--set', 'leaderElection.renewDeadline=30']);
    expect(refused.stderr).to.contain('leaderElection.renewDeadline must be below leaderElection.leaseDuration');
  });

  it('kubectl apply -f examples/: every rendered object is there, as specified', async () => {
    const ns = await applyExamples('examples');
    const get = (resource: string, name: string) => getObject(cluster, ns, resource, name);

    const internal = await get('service', 'local-internal');
    expect(internal.spec.type).to.equal('LoadBalancer');
    expect(internal.spec.ports.map((p: { port: number; targetPort: string }) => [p.port, p.targetPort])).to.deep.equal([[80, 'http']]);
    expect(internal.metadata.annotations).to.include({
      'service.beta.kubernetes.io/aws-load-balancer-internal': 'true',
      'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal',
      'networking.gke.io/load-balancer-type': 'Internal',
      'service.beta.kubernetes.io/azure-load-balancer-internal': 'true',
    });
    expect((await get('service', 'local-api')).spec.externalTrafficPolicy).to.equal('Local');

    const dataplane = await get('deployment', 'local-dataplane');
    const container = dataplane.spec.template.spec.containers[0];
    expect(container.ports[0].containerPort).to.equal(8080);
    // The image's own entry point (the data plane): no command override.
    expect(container.image).to.equal(DEFAULT_IMAGE);
    expect(container.command).to.equal(undefined);
    expect(container.env).to.deep.include.members([
      { name: 'DAS_CONFIG_SOURCE', value: 'kubernetes' },
      { name: 'DAS_NAMESPACE', value: ns },
      { name: 'DAS_ENVIRONMENT', value: 'local' },
    ]);
    expect(container.readinessProbe.httpGet.path).to.equal('/readyz');
    expect(container.livenessProbe.httpGet.path).to.equal('/healthz');
    expect(await get('serviceaccount', 'local-dataplane')).to.not.equal(undefined);

    const policy = await get('networkpolicy', 'local-firewall');
    expect(policy.spec.policyTypes).to.deep.equal(['Ingress']);
    expect(policy.spec.ingress[0].from.map((f: { ipBlock: { cidr: string } }) => f.ipBlock.cidr)).to.deep.equal(['127.0.0.0/8', '::1/128']);

    const gateway = (await get('deployment', 'service-local-function-service-gateway')).spec.template.spec.containers[0];
    expect(gateway.image).to.equal(DEFAULT_IMAGE);
    expect(gateway.env).to.deep.include({ name: 'DAS_MODE', value: 'function-gateway' });
    expect((await get('service', 'service-local-function-service-gateway')).spec.ports[0].port).to.equal(80);

    const envConfig = JSON.parse((await get('configmap', 'local-dataplane')).data['environment.json']);
    expect(envConfig.functionGateway).to.deep.equal({ enabled: true, name: 'service-local-function-service-gateway', invokers: [] });
    const demo = JSON.parse((await get('configmap', 'local-dataset-demo')).data['dataset.json']);
    expect(demo.auth.iam.rawSqlEndpointEnabled).to.equal(true);
    expect(JSON.parse((await get('configmap', 'local-dataset-sealed')).data['dataset.json']).auth.iam.rawSqlEndpointEnabled).to.equal(false);

    const env = await get('environment', 'local');
    for (const [resource, name] of [
      ['deployment', 'local-dataplane'],
      ['service', 'local-internal'],
      ['service', 'local-api'],
      ['networkpolicy', 'local-firewall'],
      ['networkpolicy', 'service-local-function-service-gateway'],
      ['configmap', 'local-dataplane'],
      ['serviceaccount', 'local-dataplane'],
      ['role', 'local-dataplane'],
      ['rolebinding', 'local-dataplane'],
      ['deployment', 'service-local-function-service-gateway'],
      ['service', 'service-local-function-service-gateway'],
    ]) {
      const object = await get(resource, name);
      expect(object.metadata.labels, `${resource}/${name}`).to.include({ 'app.kubernetes.io/managed-by': 'data-access-operator', 'dataaccess.dev/environment': 'local' });
      expect(object.metadata.ownerReferences, `${resource}/${name}`).to.deep.equal([
        { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', name: 'local', uid: env.metadata.uid, controller: true, blockOwnerDeletion: true },
      ]);
    }
    const dataset = await get('dataset', 'demo');
    expect((await get('configmap', 'local-dataset-demo')).metadata.ownerReferences[0]).to.include({ kind: 'Dataset', uid: dataset.metadata.uid, controller: true });
    expect(dataset.metadata.finalizers).to.deep.equal([FINALIZER]);

    expect(env.status.datasets).to.equal(2);
    expect(condition(env, 'Ready')).to.include({ status: 'False', reason: 'DataPlaneUnavailable' }); // its Pods never run here

    const events = await kubectlJson(cluster, ['-n', ns, 'get', 'events', '--field-selector', 'involvedObject.name=local,involvedObject.kind=Environment']);
    const messages = events.items.map((e: { message: string }) => e.message);
    expect(messages).to.include('Created NetworkPolicy local-firewall');
    expect(messages).to.include('Created Deployment local-dataplane');
  });

  it('a full resync with nothing changed makes zero API write requests', async () => {
    await applyExamples('resync');
    const before = await quiescentApiServerWrites(cluster);
    expect(before, 'the API server counted the creates of the apply').to.be.greaterThan(0);
    const { writes, reconciles } = await resyncAndCountWrites(operator);
    expect(reconciles).to.be.greaterThanOrEqual(3);
    expect(writes).to.equal(0);
    // The API server's own count agrees: nobody wrote the operator's kinds during the resync.
    expect(await apiServerWrites(cluster)).to.equal(before);
  });

  it('a firewall edit updates the NetworkPolicy', async () => {
    const ns = await applyExamples('firewall');
    const patch = { spec: { gateways: { api: { firewall: { ipAddresses: { allowed: ['10.0.0.0/8', '2001:db8::/32'], blocked: ['10.1.0.0/16', '192.168.0.0/16', '2001:db8:bad::/48'] } } } } } };
    await kubectl(cluster, ['-n', ns, 'patch', 'environment', 'local', '--type', 'merge', '-p', JSON.stringify(patch)]);
    const policy = await waitFor('the NetworkPolicy to follow the firewall', async () => {
      const p = await getObject(cluster, ns, 'networkpolicy', 'local-firewall');
      return p.spec.ingress[0].from[0].ipBlock.cidr === '10.0.0.0/8' ? p : undefined;
    });
    expect(policy.spec.ingress[0].from).to.deep.equal([
      { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } },
      { ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8:bad::/48'] } },
    ]);
    const envConfig = JSON.parse((await getObject(cluster, ns, 'configmap', 'local-dataplane')).data['environment.json']);
    expect(envConfig.gateways.api.firewall.ipAddresses.blocked).to.include('192.168.0.0/16');

    // No allowed list: everything but the blocked ranges, per family.
    await kubectl(cluster, ['-n', ns, 'patch', 'environment', 'local', '--type', 'json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/gateways/api/firewall/ipAddresses/allowed' }])]);
    const open = await waitFor('the NetworkPolicy to allow all but the blocked ranges', async () => {
      const p = await getObject(cluster, ns, 'networkpolicy', 'local-firewall');
      return p.spec.ingress[0].from[0].ipBlock.cidr === '0.0.0.0/0' ? p : undefined;
    });
    expect(open.spec.ingress[0].from).to.deep.equal([
      { ipBlock: { cidr: '0.0.0.0/0', except: ['10.1.0.0/16', '192.168.0.0/16'] } },
      { ipBlock: { cidr: '::/0', except: ['2001:db8:bad::/48'] } },
    ]);
  });

  it('a Dataset\'s connection Secret is mounted into the data-plane Deployment (a read-only secret volume), and unmounted when the Dataset goes', async () => {
    const ns = await applyExamples('secrets');
    await kubectl(cluster, ['-n', ns, 'create', 'secret', 'generic', 'orders-db', '--from-literal=url=postgres://orders@db.invalid:5432/orders']);
    const orders = {
      apiVersion: 'dataaccess.dev/v1alpha1',
      kind: 'Dataset',
      metadata: { name: 'orders' },
      spec: {
        environment: 'local',
        location: { kind: 'postgres', databaseSchema: 'orders', connectionSecretRef: { name: 'orders-db', key: 'url' } },
        schemas: { 'orders.Order': { properties: { total: { type: 'number' } } } },
      },
    };
    await apply(cluster, ns, JSON.stringify(orders));
    const pod = async () => (await getObject(cluster, ns, 'deployment', 'local-dataplane')).spec.template.spec;
    const secretVolumes = async () => ((await pod()).volumes as { secret?: unknown }[]).filter((v) => v.secret);
    const volumes = await waitFor('the data-plane Deployment to mount the Secret', async () => {
      const found = await secretVolumes();
      return found.length ? found : undefined;
    });
    // As the API server stores it (defaults filled in): only the referenced key, read-only, 0440 for the pod's fsGroup.
    expect(volumes).to.deep.equal([
      { name: secretVolumeName('orders-db'), secret: { secretName: 'orders-db', items: [{ key: 'url', path: 'url' }], defaultMode: 0o440, optional: false } },
    ]);
    const spec = await pod();
    expect(spec.securityContext.fsGroup).to.equal(10001);
    const container = spec.containers[0];
    expect(container.volumeMounts.filter((m: { name: string }) => m.name === secretVolumeName('orders-db'))).to.deep.equal([
      { name: secretVolumeName('orders-db'), mountPath: '/var/run/dataaccess/secrets/orders-db', readOnly: true },
    ]);
    expect(container.env).to.deep.include({ name: 'DAS_SECRETS_DIR', value: '/var/run/dataaccess/secrets' });
    expect(JSON.stringify(container.env)).not.to.contain('secretKeyRef');
    await waitFor('the Environment to count three Datasets', async () => (await getObject(cluster, ns, 'environment', 'local')).status.datasets === 3);
    // What the API server stores matches what the operator renders: no rewrite on a resync.
    expect((await resyncAndCountWrites(operator)).writes).to.equal(0);

    await kubectl(cluster, ['-n', ns, 'delete', 'dataset', 'orders', '--wait=true']);
    await waitFor('the Deployment to drop the Secret', async () => (await secretVolumes()).length === 0);
    expect((await pod()).containers[0].volumeMounts.filter((m: { mountPath: string }) => m.mountPath.startsWith('/var/run/dataaccess/secrets/'))).to.deep.equal([]);
    await kubectl(cluster, ['-n', ns, 'delete', 'secret', 'orders-db']);
  });

  it('a Dataset edit updates its ConfigMap and the running data plane serves the new schema without a restart', async function () {
    const ns = await applyExamples('dataplane');
    // The data plane runs as its own ServiceAccount: the Role the operator made must suffice.
    const { dataplane, port } = await startClusterDataPlane(cluster, ns);
    try {
      let readiness = 'no answer yet';
      await waitFor('the data plane to be ready', async () => {
        if (dataplane.child.exitCode !== null) throw new Error(`data plane exited: ${dataplane.output()}`);
        const res = await httpGet(port, '/readyz').catch((err: Error) => ({ status: 0, body: err.message }));
        readiness = `${res.status} ${res.body.slice(0, 500)}`;
        return res.status === 200;
      }, 120_000).catch((err: Error) => {
        // What /readyz last said and what the process logged: enough to tell a slow start from a stuck one.
        throw new Error(`${err.message}\n/readyz: ${readiness}\ndata plane output (tail):\n${dataplane.output().slice(-4000)}`);
      });
      const createPet = () =>
        httpRequest(port, 'POST', '/demo', { host: 'iam.localhost', authorization: 'Proxy demo-admin', 'content-type': 'application/json' }, JSON.stringify({ create: { schema: 'demo.Pet', id: 'rex', data: { name: 'Rex' } } }));
      const before = await createPet();
      expect(before.status, before.body).to.equal(404);
      expect(before.body).to.contain('SCHEMA_NOT_FOUND');

      await kubectl(cluster, ['-n', ns, 'patch', 'dataset', 'demo', '--type', 'merge', '-p', JSON.stringify({ spec: { schemas: { 'demo.Pet': { properties: { name: { type: 'string' } } } } } })]);
      await waitFor('the dataset ConfigMap to carry demo.Pet', async () => {
        const cm = await getObject(cluster, ns, 'configmap', 'local-dataset-demo');
        return 'demo.Pet' in JSON.parse(cm.data['dataset.json']).schemas;
      });
      const created = await waitFor('the data plane to serve demo.Pet', async () => {
        const res = await createPet();
        return res.status === 201 ? res : undefined;
      });
      expect(JSON.parse(created.body)).to.include({ id: 'rex' });
      expect(dataplane.child.exitCode).to.equal(null); // same process: no restart
    } finally {
      await dataplane.stop();
    }
  });

  it('an invalid Dataset is reported in status (JSON path) and left unapplied; fixing it applies it', async () => {
    const ns = await applyExamples('invalid');
    const published = (await getObject(cluster, ns, 'configmap', 'local-dataset-demo')).data;
    await kubectl(cluster, ['-n', ns, 'patch', 'dataset', 'demo', '--type', 'merge', '-p', JSON.stringify({ spec: { schemas: { 'demo.Person': { properties: { employer: { type: 'link', schema: 'demo.Employer' } } } } } })]);
    const dataset = await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'False', 'InvalidSpec');
    expect(condition(dataset, 'Degraded')).to.include({ status: 'True', reason: 'InvalidSpec' });
    expect(condition(dataset, 'Degraded')!.message).to.contain('$.spec.schemas["demo.Person"].properties.employer.schema: link target "demo.Employer" is not a schema of this dataset');
    expect((await getObject(cluster, ns, 'configmap', 'local-dataset-demo')).data).to.deep.equal(published);
    const warnings = await kubectlJson(cluster, ['-n', ns, 'get', 'events', '--field-selector', 'involvedObject.name=demo,type=Warning']);
    expect(warnings.items.map((e: { reason: string }) => e.reason)).to.include('InvalidSpec');

    await kubectl(cluster, ['-n', ns, 'patch', 'dataset', 'demo', '--type', 'merge', '-p', JSON.stringify({ spec: { schemas: { 'demo.Person': { properties: { employer: { type: 'link', schema: 'demo.Company' } } } } } })]);
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'True');
  });

  it('a Dataset on another Dataset\'s schema is Degraded (StorageInUse) naming it and gets no ConfigMap; published once the holder is gone', async () => {
    const ns = await applyExamples('storage');
    const demo = await getObject(cluster, ns, 'dataset', 'demo');
    const thief = { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', metadata: { name: 'thief' }, spec: { ...demo.spec, auth: { iam: { principals: ['mallory'] } } } };
    await cluster.kubectl(['-n', ns, 'apply', '-f', '-'], { input: JSON.stringify(thief) });
    const refused = await waitForCondition(cluster, ns, 'dataset', 'thief', 'Ready', 'False', 'StorageInUse');
    expect(condition(refused, 'Degraded')).to.include({ status: 'True', reason: 'StorageInUse' });
    expect(condition(refused, 'Degraded')!.message).to.contain('belongs to Dataset "demo"').and.contain('PostgreSQL schema "demo"');
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-thief')).to.equal(undefined);
    expect(condition(await getObject(cluster, ns, 'dataset', 'demo'), 'Degraded')!.status).to.equal('False');
    // The holder goes: the refused Dataset is looked at again and published.
    await kubectl(cluster, ['-n', ns, 'delete', 'dataset', 'demo', '--wait=true']);
    await waitForCondition(cluster, ns, 'dataset', 'thief', 'Ready', 'True');
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-thief')).to.not.equal(undefined);
  });

  it('a Dataset naming a missing Environment waits unapplied, and reconciles when the Environment appears', async () => {
    const ns = await createNamespace(cluster, 'waiting');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', join(EXAMPLES, 'dataset-demo.yaml')]);
    const waiting = await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'False', 'EnvironmentNotFound');
    expect(condition(waiting, 'Ready')!.message).to.contain(`Environment "local" does not exist in namespace "${ns}"`);
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-demo')).to.equal(undefined);
    await kubectl(cluster, ['-n', ns, 'apply', '-f', join(EXAMPLES, 'environment.yaml')]);
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'True');
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-demo')).to.not.equal(undefined);
  });

  it('the API server refuses an invalid manifest with the schema\'s message', async () => {
    const ns = await createNamespace(cluster, 'refused');
    const refused = async (manifest: string) => {
      const result = await cluster.kubectl(['-n', ns, 'apply', '-f', '-'], { input: manifest });
      expect(result.code).to.not.equal(0);
      return result.stderr;
    };
    const env = (name: string, spec: string) => `apiVersion: dataaccess.dev/v1alpha1\nkind: Environment\nmetadata: {name: ${name}}\nspec: ${spec}\n`;
    expect(await refused(env('e1', '{type: hybrid}'))).to.match(/spec\.type: Unsupported value: "hybrid": supported values: "internal", "public"/);
    expect(await refused(env('e2', '{type: internal, gateways: {api: {firewall: {ipAddresses: {allowed: ["10.0.0.0/33"]}}}}}'))).to.contain('must be of type cidr');
    expect(await refused(env('9lives', '{type: internal}'))).to.contain('metadata.name');
    // kubectl checks against the published schema first; either way the message is the schema's.
    expect(await refused(env('e3', '{}'))).to.match(/missing required field "type"|spec\.type: Required value/);
    const dataset = `apiVersion: dataaccess.dev/v1alpha1\nkind: Dataset\nmetadata: {name: d1}\nspec: {environment: local, location: {kind: oracle}, schemas: {demo.A: {properties: {}}}}\n`;
    expect(await refused(dataset)).to.contain('spec.location.kind: Unsupported value: "oracle"');
  });

  it('deleting a Dataset runs its finalizer: the ConfigMap goes first, then the Dataset', async () => {
    const ns = await applyExamples('finalizer');
    await kubectl(cluster, ['-n', ns, 'delete', 'dataset', 'demo', '--wait=true']);
    expect(await getObject(cluster, ns, 'dataset', 'demo')).to.equal(undefined);
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-demo')).to.equal(undefined);
    const events = await kubectlJson(cluster, ['-n', ns, 'get', 'events', '--field-selector', 'involvedObject.name=demo,reason=Deleted']);
    expect(events.items.map((e: { message: string }) => e.message)).to.include('Deleted ConfigMap local-dataset-demo; stored data is kept (deletionPolicy Retain)');
    await waitFor('the Environment to count one Dataset', async () => (await getObject(cluster, ns, 'environment', 'local')).status.datasets === 1);
  });

  it('deleting the Environment removes everything it owned (garbage collection)', async () => {
    const ns = await applyExamples('gc');
    await kubectl(cluster, ['-n', ns, 'delete', 'environment', 'local', '--wait=true']);
    await waitFor('every object the Environment owned to be gone', async () => {
      const left = await kubectl(cluster, ['-n', ns, 'get', 'deployments,services,networkpolicies,serviceaccounts,roles,rolebindings,configmaps', '-l', `${MANAGED},dataaccess.dev/config!=dataset`, '-o', 'name']);
      return left.trim() === '' ? true : undefined;
    });
    // Datasets outlive their Environment; they say so and wait.
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'False', 'EnvironmentNotFound');
  });

  it('an operator restarted mid-way converges without duplicates', async () => {
    await operator.stop();
    const ns = await createNamespace(cluster, 'restart');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', EXAMPLES]);
    operator = await startChartOperator();
    // Kill it hard as soon as it has created something, before it could finish.
    await waitFor('the first objects', async () => (await kubectl(cluster, ['-n', ns, 'get', 'serviceaccounts,configmaps', '-l', MANAGED, '-o', 'name'])).trim() !== '');
    await operator.stop('SIGKILL');
    operator = await startChartOperator();
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'True');
    await waitForCondition(cluster, ns, 'dataset', 'sealed', 'Ready', 'True');
    await waitForCondition(cluster, ns, 'environment', 'local', 'Reconciled', 'True');

    const names = (await kubectl(cluster, ['-n', ns, 'get', 'deployments,services,networkpolicies,serviceaccounts,roles,rolebindings,configmaps', '-l', MANAGED, '-o', 'name'])).trim().split('\n').sort();
    expect(names).to.deep.equal(
      [
        'configmap/local-dataplane',
        'configmap/local-dataset-demo',
        'configmap/local-dataset-sealed',
        'deployment.apps/local-dataplane',
        'deployment.apps/service-local-function-service-gateway',
        'networkpolicy.networking.k8s.io/local-firewall',
        'networkpolicy.networking.k8s.io/service-local-function-service-gateway',
        'role.rbac.authorization.k8s.io/local-dataplane',
        'rolebinding.rbac.authorization.k8s.io/local-dataplane',
        'service/local-api',
        'service/local-internal',
        'service/service-local-function-service-gateway',
        'serviceaccount/local-dataplane',
      ].sort(),
    );
    const replicaSets = await kubectlJson(cluster, ['-n', ns, 'get', 'replicasets', '-l', 'dataaccess.dev/environment=local,app.kubernetes.io/component=dataplane']);
    expect(replicaSets.items).to.have.length(1); // the Deployment was never rewritten with a different template
    for (const name of ['demo', 'sealed']) expect((await getObject(cluster, ns, 'dataset', name)).metadata.finalizers).to.deep.equal([FINALIZER]);
    const { writes } = await resyncAndCountWrites(operator);
    expect(writes).to.equal(0);
  });

  it('helm uninstall leaves nothing behind but the CRDs (Helm keeps crds/) and what the deletion policy keeps', async () => {
    // Custom resources go first, while the operator runs their finalizers.
    const namespaces = (await kubectlJson(cluster, ['get', 'datasets,environments', '-A'])).items.map((i: { metadata: { namespace: string } }) => i.metadata.namespace);
    for (const ns of new Set<string>(namespaces)) await kubectl(cluster, ['-n', ns, 'delete', 'datasets,environments', '--all', '--wait=true']);
    await operator.stop();
    const uninstall = await cluster.helm(['uninstall', RELEASE, '--namespace', RELEASE_NAMESPACE, '--wait']);
    expect(uninstall.code, uninstall.stderr).to.equal(0);

    await waitFor('garbage collection of every operator-managed object', async () => {
      const left = await kubectl(cluster, ['get', 'deployments,services,networkpolicies,serviceaccounts,roles,rolebindings,configmaps', '-A', '-l', MANAGED, '-o', 'name']);
      return left.trim() === '' ? true : undefined;
    });
    const chartLeft = await kubectl(cluster, ['get', 'clusterroles,clusterrolebindings', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name']);
    expect(chartLeft.trim()).to.equal('');
    const inRelease = await kubectl(cluster, ['-n', RELEASE_NAMESPACE, 'get', 'deployments,serviceaccounts,roles,rolebindings,services', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name']);
    expect(inRelease.trim()).to.equal('');
    // Documented: Helm never deletes CRDs it installed from crds/.
    expect(await kubectl(cluster, ['get', 'crd', 'environments.dataaccess.dev', '-o', 'name'])).to.contain('environments.dataaccess.dev');
  });
});
