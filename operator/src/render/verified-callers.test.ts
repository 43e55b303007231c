import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { checkEnvironmentSpec } from '../../../model/validate.js';
import type { EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { renderEnvironmentObjects } from './environment.js';
import { DEFAULT_RENDER_SETTINGS, type DesiredObject } from './types.js';
import { possibleBindingNames, renderVerifyingBindings } from './verified-callers.js';

const examples = loadManifests('examples');

function environment(spec: Partial<EnvironmentSpec> = {}): EnvironmentResource {
  const base = examples.environments.find((e) => e.metadata.name === 'local')!;
  return { ...base, metadata: { ...base.metadata, name: 'local', namespace: 'team-a', uid: 'env-uid-1', generation: 3 }, spec: { ...base.spec, ...spec } };
}

const find = (objects: DesiredObject[], kind: string, name: string): any => objects.find((o) => o.kind === kind && o.metadata.name === name);
const envOf = (container: { env: { name: string; value: string }[] }) => Object.fromEntries(container.env.map((e) => [e.name, e.value]));
const verified = (extra: Partial<EnvironmentSpec> = {}) =>
  environment({ gateways: { iam: { trust: 'verified' } }, functionGateway: { invokers: ['system:serviceaccount:team-b:*'] }, ...extra });

describe('operator: rendering verified callers (trust verified)', () => {
  it('network (the default): no bindings, no function gateway ServiceAccount, no token; the pods listen on 0.0.0.0', () => {
    const env = environment();
    const objects = renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS);
    expect(renderVerifyingBindings(env, 'team-a')).to.deep.equal([]);
    expect(find(objects, 'ServiceAccount', 'service-local-function-service-gateway')).to.equal(undefined);
    const gateway = find(objects, 'Deployment', 'service-local-function-service-gateway').spec.template.spec;
    expect(gateway.automountServiceAccountToken).to.equal(false);
    expect(gateway.serviceAccountName).to.equal(undefined);
    expect(envOf(gateway.containers[0])).to.include({ HOST: '0.0.0.0' }).and.not.have.property('DAS_TRUST');
    expect(envOf(find(objects, 'Deployment', 'local-dataplane').spec.template.spec.containers[0])).to.include({ HOST: '0.0.0.0' });
  });

  it('verified: per verifying ServiceAccount a ClusterRoleBinding to system:auth-delegator and one to system:service-account-issuer-discovery, named after namespace and ServiceAccount, unowned', () => {
    const bindings = renderVerifyingBindings(verified(), 'team-a');
    expect(bindings.map((b) => [b.metadata.name, b.roleRef])).to.deep.equal([
      ['dataaccess.dev:auth-delegator:team-a:local-dataplane', { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' }],
      ['dataaccess.dev:auth-delegator:team-a:service-local-function-service-gateway', { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' }],
      ['dataaccess.dev:issuer-discovery:team-a:local-dataplane', { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:service-account-issuer-discovery' }],
      [
        'dataaccess.dev:issuer-discovery:team-a:service-local-function-service-gateway',
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:service-account-issuer-discovery' },
      ],
    ]);
    for (const binding of bindings) {
      expect(binding.metadata).to.not.have.property('ownerReferences');
      expect(binding.metadata).to.not.have.property('namespace');
      expect(binding.metadata.labels).to.include({ 'dataaccess.dev/environment': 'local', 'dataaccess.dev/namespace': 'team-a' });
    }
    expect((bindings[1].subjects as unknown[])[0]).to.deep.equal({ kind: 'ServiceAccount', name: 'service-local-function-service-gateway', namespace: 'team-a' });
    expect((bindings[2].subjects as unknown[])[0]).to.deep.equal({ kind: 'ServiceAccount', name: 'local-dataplane', namespace: 'team-a' });
    expect(renderVerifyingBindings(verified({ functionGateway: { enabled: false } }), 'team-a').map((b) => b.metadata.name)).to.deep.equal([
      'dataaccess.dev:auth-delegator:team-a:local-dataplane',
      'dataaccess.dev:issuer-discovery:team-a:local-dataplane',
    ]);
    // The finalizer deletes every one of them, whatever the spec says now.
    expect(possibleBindingNames(environment(), 'team-a')).to.have.members(bindings.map((b) => b.metadata.name));
  });

  it('verified: the function gateway runs as its own ServiceAccount with a short-lived projected token for the data plane\'s audience', () => {
    const objects = renderEnvironmentObjects(verified(), DEFAULT_RENDER_SETTINGS);
    const account = find(objects, 'ServiceAccount', 'service-local-function-service-gateway');
    expect(account.automountServiceAccountToken).to.equal(false);
    const pod = find(objects, 'Deployment', 'service-local-function-service-gateway').spec.template.spec;
    expect(pod.serviceAccountName).to.equal('service-local-function-service-gateway');
    expect(pod.automountServiceAccountToken).to.equal(true);
    expect(pod.volumes).to.deep.include({
      name: 'dataaccess-token',
      projected: { sources: [{ serviceAccountToken: { audience: 'dataaccess.dev/team-a/local', expirationSeconds: 600, path: 'token' } }] },
    });
    expect(pod.containers[0].volumeMounts).to.deep.include({ name: 'dataaccess-token', mountPath: '/var/run/secrets/dataaccess.dev/token', readOnly: true });
    expect(envOf(pod.containers[0])).to.include({
      DAS_TRUST: 'verified',
      DAS_TOKEN_AUDIENCE: 'dataaccess.dev/team-a/local/function-gateway',
      DAS_INVOKERS: '["system:serviceaccount:team-b:*"]',
      DAS_UPSTREAM_TOKEN_FILE: '/var/run/secrets/dataaccess.dev/token/token',
    });
    const custom = renderEnvironmentObjects(verified({ gateways: { iam: { trust: 'verified', audiences: ['api.example', 'other'] } } }), DEFAULT_RENDER_SETTINGS);
    const source = find(custom, 'Deployment', 'service-local-function-service-gateway').spec.template.spec.volumes.find((v: any) => v.projected).projected.sources[0];
    expect(source.serviceAccountToken.audience).to.equal('api.example');
  });

  it('the function gateway\'s pods get a NetworkPolicy with the firewall\'s address rules', () => {
    const env = environment({ gateways: { api: { firewall: { ipAddresses: { allowed: ['10.0.0.0/8'], blocked: ['10.66.0.0/16'] } } } } });
    const objects = renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS);
    const policy = find(objects, 'NetworkPolicy', 'service-local-function-service-gateway');
    expect(policy.spec.podSelector).to.deep.equal({ matchLabels: { 'dataaccess.dev/environment': 'local', 'app.kubernetes.io/component': 'function-gateway' } });
    expect(policy.spec.policyTypes).to.deep.equal(['Ingress']);
    expect(policy.spec.ingress).to.deep.equal([{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.66.0.0/16'] } }], ports: [{ protocol: 'TCP', port: 8080 }] }]);
    expect(policy.spec.ingress[0].from).to.deep.equal(find(objects, 'NetworkPolicy', 'local-firewall').spec.ingress[0].from);
  });
});

describe('model: verified callers settings', () => {
  it('the cluster example (examples/cluster/) is a valid verified Environment and renders its bindings', () => {
    const cluster = loadManifests('examples/cluster');
    const prod = cluster.environments[0];
    expect(checkEnvironmentSpec(prod.spec)).to.deep.equal([]);
    expect(prod.spec.gateways?.iam?.trust).to.equal('verified');
    expect(renderVerifyingBindings({ ...prod, metadata: { ...prod.metadata, uid: 'u' } }, 'data')).to.have.length(4);
    expect(cluster.datasets.map((d) => d.metadata.name)).to.deep.equal(['orders']);
  });

  it('accepts trust verified with audiences, proxyFrom and invokers', () => {
    expect(checkEnvironmentSpec(verified({ gateways: { iam: { trust: 'verified', audiences: ['a'], proxyFrom: ['10.1.0.0/16', 'fd00::/8'] } } }).spec)).to.deep.equal([]);
  });

  it('refuses proxyFrom and invokers without trust verified, naming the field, and a malformed CIDR or trust', () => {
    expect(checkEnvironmentSpec(environment({ gateways: { iam: { proxyFrom: ['10.0.0.0/8'] } } }).spec).map((p) => p.path)).to.deep.equal(['$.spec.gateways.iam.proxyFrom']);
    expect(checkEnvironmentSpec(environment({ functionGateway: { invokers: ['system:serviceaccount:a:*'] } }).spec).map((p) => p.path)).to.deep.equal([
      '$.spec.functionGateway.invokers',
    ]);
    expect(checkEnvironmentSpec(verified({ gateways: { iam: { trust: 'verified', proxyFrom: ['10.0.0.0/33'] } } }).spec).map((p) => p.path)).to.deep.equal([
      '$.spec.gateways.iam.proxyFrom[0]',
    ]);
    expect(checkEnvironmentSpec(environment({ gateways: { iam: { trust: 'trusted' as never } } }).spec).map((p) => p.path)).to.deep.equal(['$.spec.gateways.iam.trust']);
    expect(checkEnvironmentSpec(verified({ gateways: { iam: { trust: 'verified', audiences: [] } } }).spec).map((p) => p.path)).to.deep.equal(['$.spec.gateways.iam.audiences']);
  });
});
