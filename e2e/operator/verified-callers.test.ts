/**
 * Verified callers (spec.gateways.iam.trust: verified) against a real kube-apiserver (with
 * kube-controller-manager): the chart's operator as its own ServiceAccount renders the
 * system:auth-delegator and system:service-account-issuer-discovery ClusterRoleBindings (the
 * cluster's default binding of issuer discovery to every ServiceAccount is deleted first, so the
 * operator's bindings are what the data plane reads the issuer keys with), the function gateway's ServiceAccount, projected token
 * and NetworkPolicy; the data plane and the function gateway run as local processes with the
 * config the operator rendered and the KUBECONFIG of their own ServiceAccounts (so every
 * TokenReview passes exactly the RBAC the operator granted). Tokens come from the TokenRequest
 * API (`kubectl create token`): the right audience, a wrong one, a tampered one, one whose
 * ServiceAccount is then deleted; an expired one is signed with the peer's issuer key, because
 * the API server refuses TokenRequests shorter than 10 minutes. The API server is cut off (a TCP
 * proxy in front of it) mid-run: 503 with Retry-After, cached verdicts keep serving, recovery.
 * Forged tokens (another key, a wrong audience, expired) are refused locally: 2,000 of them cost
 * at most 20 TokenReviews as the API server itself counts them (apiserver_request_total), the
 * expired ones none; a token bound to a Pod stops working once the Pod is deleted.
 * Deleting the Environment removes the ClusterRoleBindings (its finalizer). The data plane exports
 * traces to an OTLP receiver in the test: a TokenReview is a CLIENT span of the request.
 */
import { expect } from 'chai';
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'graphql-ws';
import { decodeProtectedHeader, SignJWT } from 'jose';
import WebSocket from 'ws';
import { parse, stringify } from 'yaml';
import { freshDatabase } from '../../dataplane/test-support/postgres.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../dataplane/test-support/otlp-receiver.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { CuttableProxy } from './tcp-proxy.js';
import {
  apply,
  callJson,
  createNamespace,
  freePort,
  getObject,
  httpGet,
  kubectl,
  serviceAccountKubeconfig,
  startChartOperator,
  startClusterDataPlane,
  startDataPlane,
  waitFor,
  type ManagedProcess,
  type OperatorProcess,
} from './harness.js';

const RELEASE = 'ver';
const ENV = 'vfy';
const GATEWAY = `service-${ENV}-function-service-gateway`;
/** How long the data plane reuses a verdict here (production: up to 5 minutes). */
const CACHE_MS = 3_000;

/** One request on the iam gateway (host iam.localhost unless `headers` names another). */
const call = (port: number, method: string, path: string, headers: Record<string, string>, body?: unknown, localAddress?: string) =>
  callJson(port, method, path, { host: 'iam.localhost', ...headers }, body, localAddress);

/** A kubeconfig of `base` (a ServiceAccount's) whose server is `server`. */
function withServer(base: string, server: string): string {
  const config = parse(readFileSync(base, 'utf8'));
  config.clusters[0].cluster.server = server;
  const path = join(mkdtempSync(join(tmpdir(), 'vfy-kubeconfig-')), 'kubeconfig');
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

/** `apiserver_request_total` of TokenReviews, as the API server itself counts them. */
async function tokenReviews(cluster: KubeCluster): Promise<number> {
  let total = 0;
  for (const line of (await kubectl(cluster, ['get', '--raw', '/metrics'])).split('\n')) {
    if (line.startsWith('apiserver_request_total{') && line.includes('resource="tokenreviews"')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

describe('verified callers e2e (kube-apiserver TokenReview, operator, data plane and function gateway processes)', function () {
  this.timeout(240_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;
  let dataplane: ManagedProcess | undefined;
  let gateway: ManagedProcess | undefined;
  let apiProxy: CuttableProxy;
  let ns: string;
  let port: number;
  let gatewayPort: number;
  const audience = () => `dataaccess.dev/${ns}/${ENV}`;
  /** A TokenRequest. Tokens are deterministic (RS256): the same claims in the same second give the same token, so `seconds` tells them apart. */
  const token = async (serviceAccount: string, aud = audience(), seconds = 600) =>
    (await kubectl(cluster, ['-n', ns, 'create', 'token', serviceAccount, '--audience', aud, '--duration', `${seconds}s`])).trim();
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  let receiver: OtlpReceiver;

  before(async () => {
    receiver = await startOtlpReceiver();
    cluster = await startKubeCluster({ controllerManager: true });
    // Without the cluster's default grant to every ServiceAccount, only the operator's bindings let the data plane read the issuer keys.
    await kubectl(cluster, ['delete', 'clusterrolebinding', 'system:service-account-issuer-discovery']);
    // The operator with exactly the chart's RBAC: binding system:auth-delegator must be allowed by it.
    operator = await startChartOperator(cluster, RELEASE, `e2e-verified-${process.pid}`);

    ns = await createNamespace(cluster, 'verified');
    for (const sa of ['reader', 'stranger', 'admin', 'invoker', 'temp', 'podbound']) await kubectl(cluster, ['-n', ns, 'create', 'serviceaccount', sa]);
    await apply(
      cluster,
      ns,
      `apiVersion: dataaccess.dev/v1alpha1
kind: Environment
metadata: {name: ${ENV}}
spec:
  type: internal
  gateways:
    iam: {trust: verified, proxyFrom: ["127.0.0.1/32"]}
  functionGateway:
    invokers: ["system:serviceaccount:${ns}:invoker"]
  admin:
    principals: ["system:serviceaccount:${ns}:admin"]
---
apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata: {name: vds}
spec:
  environment: ${ENV}
  location: {kind: postgres, databaseSchema: vds}
  auth:
    iam:
      principals: ["system:serviceaccount:${ns}:reader", "system:serviceaccount:${ns}:temp", "system:serviceaccount:${ns}:podbound", "${GATEWAY}", "front-proxied"]
      rawSqlEndpointEnabled: true
  schemas:
    demo.Item:
      properties:
        name: {type: string}
`,
    );

    // The API server behind a proxy the test can cut; the data plane reaches it only through that.
    apiProxy = new CuttableProxy('127.0.0.1', Number(new URL(cluster.server).port));
    await apiProxy.start();
    const dataplaneKubeconfig = await waitFor('the operator to create the data plane ServiceAccount', async () =>
      (await getObject(cluster, ns, 'serviceaccount', `${ENV}-dataplane`)) ? serviceAccountKubeconfig(cluster, ns, `${ENV}-dataplane`) : undefined,
    );
    await waitFor('the environment ConfigMap', () => getObject(cluster, ns, 'configmap', `${ENV}-dataplane`));
    ({ dataplane, port } = await startClusterDataPlane(cluster, ns, {
      environment: ENV,
      dataDirPrefix: 'verified',
      env: {
        KUBECONFIG: withServer(dataplaneKubeconfig, `https://127.0.0.1:${apiProxy.port}`),
        DATABASE_URL: await freshDatabase(),
        DAS_TOKEN_REVIEW_CACHE_MS: String(CACHE_MS),
        DAS_SUBSCRIPTION_REVERIFY_MS: '1000',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    }));
    await waitFor('the data plane to serve dataset vds', async () => {
      if (dataplane!.child.exitCode !== null) throw new Error(`data plane exited: ${dataplane!.output()}`);
      return (await httpGet(port, '/readyz').catch(() => ({ status: 0 }))).status === 200;
    }, 90_000);
  });

  after(async () => {
    await gateway?.stop();
    await dataplane?.stop();
    await apiProxy?.stop();
    await operator?.stop();
    await cluster?.stop();
    await receiver?.close();
  });

  it('the operator renders the auth-delegator and issuer-discovery ClusterRoleBindings, the function gateway\'s ServiceAccount, projected token and NetworkPolicy', async () => {
    for (const sa of [`${ENV}-dataplane`, GATEWAY]) {
      for (const [infix, role] of [['auth-delegator', 'system:auth-delegator'], ['issuer-discovery', 'system:service-account-issuer-discovery']]) {
        const binding = await waitFor(`ClusterRoleBinding ${infix} for ${sa}`, async () => {
          const found = await cluster.kubectl(['get', 'clusterrolebinding', `dataaccess.dev:${infix}:${ns}:${sa}`, '-o', 'json', '--ignore-not-found']);
          return found.stdout.trim() ? JSON.parse(found.stdout) : undefined;
        });
        expect(binding.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role });
        expect(binding.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: sa, namespace: ns }]);
      }
    }
    const environment = await getObject(cluster, ns, 'environment', ENV);
    expect(environment.metadata.finalizers).to.include('dataaccess.dev/cluster-bindings');
    const pod = (await waitFor('the function gateway Deployment', () => getObject<any>(cluster, ns, 'deployment', GATEWAY))).spec.template.spec;
    expect(pod.serviceAccountName).to.equal(GATEWAY);
    const projected = pod.volumes.find((v: any) => v.projected).projected.sources[0].serviceAccountToken;
    expect(projected).to.deep.equal({ audience: audience(), expirationSeconds: 600, path: 'token' });
    expect(await getObject(cluster, ns, 'serviceaccount', GATEWAY)).to.not.equal(undefined);
    const policy = await getObject(cluster, ns, 'networkpolicy', GATEWAY);
    expect(policy.spec.podSelector.matchLabels).to.deep.equal({ 'dataaccess.dev/environment': ENV, 'app.kubernetes.io/component': 'function-gateway' });
  });

  it('a ServiceAccount token with the right audience is served on every iam surface, as system:serviceaccount:<ns>:<name>', async () => {
    const reader = bearer(await token('reader'));
    expect((await call(port, 'POST', '/vds', reader, { create: { schema: 'demo.Item', id: 'i1', data: { name: 'one' } } })).status).to.equal(201);
    const read = await call(port, 'GET', '/vds/demo.Item/i1', reader);
    expect(read.status).to.equal(200);
    expect(read.json).to.include({ id: 'i1', name: 'one' });
    const echo = await call(port, 'GET', '/vds/echo', reader);
    expect(echo.json.caller).to.include({ schema: 'iam', id: `system:serviceaccount:${ns}:reader`, anon: false });
    const sql = await call(port, 'POST', '/vds/raw-query', reader, { sql: 'SELECT @{i.name} AS name FROM @{i}', using: { i: 'demo.Item' } });
    expect(sql.status, JSON.stringify(sql.json)).to.equal(200);
    // No gateway in the host: the token itself routes to the iam gateway.
    expect((await call(port, 'GET', '/vds/demo.Item/i1', { ...reader, host: `${ENV}-internal.${ns}.svc` })).status).to.equal(200);
    // The administrative API: admin principals only.
    expect((await call(port, 'GET', '/_admin/datasets', bearer(await token('admin')))).status).to.equal(200);
    const notAdmin = await call(port, 'GET', '/_admin/datasets', reader);
    expect([notAdmin.status, notAdmin.json.error.code]).to.deep.equal([403, 'NOT_AN_ADMIN']);
  });

  it('a TokenReview is a CLIENT span of the request that needed it (OTLP receiver)', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    // A token of its own (another duration): no verdict of an earlier test is remembered for it.
    const traced = { ...bearer(await token('reader', audience(), 601)), traceparent: `00-${traceId}-${parentId}-01` };
    expect((await call(port, 'GET', '/vds/demo.Item/i1', traced)).status).to.equal(200);
    const trace = (await receiver.waitFor((all) => all.some((s) => s.traceId === traceId && s.kind === 3 && s.name.includes('tokenreviews')))).filter((s) => s.traceId === traceId);
    const server = trace.find((s) => s.kind === 2)!;
    expect(server).to.include({ name: 'GET /{dataset}/{schema}/{id}', parentSpanId: parentId });
    const review = trace.find((s) => s.name.includes('tokenreviews'))!;
    expect(review).to.include({ name: 'POST /apis/authentication.k8s.io/v1/tokenreviews', kind: 3, parentSpanId: server.spanId });
    expect(review.attributes).to.include({ 'http.request.method': 'POST', 'server.address': '127.0.0.1' });
    expect(JSON.stringify(review)).not.to.contain(traced.authorization.slice(7, 40));
  });

  it('refuses with the reason: wrong audience, another ServiceAccount, a tampered or expired token, no credentials', async () => {
    const wrongAudience = await call(port, 'GET', '/vds/demo.Item/i1', bearer(await token('reader', 'https://kubernetes.default.svc.cluster.local')));
    expect([wrongAudience.status, wrongAudience.json.error.code]).to.deep.equal([401, 'WRONG_AUDIENCE']);
    expect(wrongAudience.json.error.message).to.include(audience());
    expect(wrongAudience.headers['www-authenticate']).to.equal('Bearer realm="iam"');

    const stranger = await call(port, 'GET', '/vds/demo.Item/i1', bearer(await token('stranger')));
    expect([stranger.status, stranger.json.error.code]).to.deep.equal([403, 'PRINCIPAL_NOT_ALLOWED']);
    expect(stranger.json.error.message).to.include(`system:serviceaccount:${ns}:stranger`);

    // Right claims, wrong signature: the issuer's keys tell, without asking the API server.
    const genuine = await token('reader');
    const tampered = `${genuine.slice(0, -6)}${genuine.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;
    const forged = await call(port, 'GET', '/vds/demo.Item/i1', bearer(tampered));
    expect([forged.status, forged.json.error.code]).to.deep.equal([401, 'BAD_SIGNATURE']);

    // Signed by the cluster's own issuer key, an hour old.
    const key = createPrivateKey(readFileSync(join(cluster.workDir, 'pki', 'sa.key')));
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ 'kubernetes.io': { namespace: ns, serviceaccount: { name: 'reader', uid: 'x' } } })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer('https://kubernetes.default.svc.cluster.local')
      .setSubject(`system:serviceaccount:${ns}:reader`)
      .setAudience(audience())
      .setIssuedAt(now - 3600)
      .setExpirationTime(now - 3000)
      .sign(key);
    const old = await call(port, 'GET', '/vds/demo.Item/i1', bearer(expired));
    expect([old.status, old.json.error.code]).to.deep.equal([401, 'TOKEN_EXPIRED']);

    const none = await call(port, 'GET', '/vds/demo.Item/i1', {});
    expect([none.status, none.json.error.code]).to.deep.equal([401, 'MISSING_CREDENTIALS']);
    const garbage = await call(port, 'GET', '/vds/demo.Item/i1', bearer('not-a-token'));
    expect([garbage.status, garbage.json.error.code]).to.deep.equal([401, 'MALFORMED_TOKEN']);
  });

  it('a Proxy assertion is believed from a proxyFrom address only', async () => {
    const proxied = { authorization: 'Proxy front-proxied' };
    expect((await call(port, 'GET', '/vds/demo.Item/i1', proxied, undefined, '127.0.0.1')).status).to.equal(200);
    const elsewhere = await call(port, 'GET', '/vds/demo.Item/i1', proxied, undefined, '127.0.0.2');
    expect([elsewhere.status, elsewhere.json.error.code]).to.deep.equal([401, 'PROXY_NOT_TRUSTED']);
    expect(elsewhere.json.error.message).to.include('spec.gateways.iam.proxyFrom').and.include('127.0.0.1/32').and.include('127.0.0.2');
    const admin = await call(port, 'GET', '/_admin/datasets', { authorization: `Proxy system:serviceaccount:${ns}:admin` }, undefined, '127.0.0.2');
    expect([admin.status, admin.json.error.code]).to.deep.equal([401, 'PROXY_NOT_TRUSTED']);
  });

  it('verdicts are cached: repeated requests with one token cause (almost) no TokenReviews', async () => {
    const reader = bearer(await token('reader'));
    expect((await call(port, 'GET', '/vds/demo.Item/i1', reader)).status).to.equal(200);
    const before = await tokenReviews(cluster);
    for (let i = 0; i < 20; i++) expect((await call(port, 'GET', '/vds/demo.Item/i1', reader)).status).to.equal(200);
    // At most one more review (should the cache bound have passed meanwhile), not twenty.
    expect((await tokenReviews(cluster)) - before).to.be.at.most(1);
  });

  it('WebSocket: a token in connection_init opens a subscription; a wrong-audience token is refused (4401)', async () => {
    const url = `ws://127.0.0.1:${port}/vds/graphql`;
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${await token('reader')}` }, retryAttempts: 0, lazy: false, onNonLazyError: () => undefined });
    try {
      const events = client.iterate({ query: 'subscription { demo_Item { op record { id name } } }' });
      const first = events.next();
      // Written until the subscription (registered asynchronously) sees one.
      let n = 0;
      const writer = setInterval(() => void call(port, 'POST', '/vds', { authorization: 'Proxy front-proxied' }, { create: { schema: 'demo.Item', id: `ws${n++}`, data: { name: 'ws' } } }), 300);
      const event = (await first) as IteratorResult<{ data?: { demo_Item: { op: string; record: { name: string } } } }>;
      clearInterval(writer);
      expect(event.value.data?.demo_Item.record.name).to.equal('ws');
    } finally {
      await client.dispose();
    }
    const wrong = await token('reader', 'elsewhere');
    const refused = await new Promise<number>((resolve) => {
      const bad = createClient({
        url,
        webSocketImpl: WebSocket,
        connectionParams: { Authorization: `Bearer ${wrong}` },
        retryAttempts: 0,
        lazy: false,
        onNonLazyError: () => undefined,
        on: { closed: (e) => resolve((e as { code: number }).code) },
      });
      setTimeout(() => void bad.dispose(), 20_000).unref();
    });
    expect(refused).to.equal(4401);
  });

  it('a token whose ServiceAccount is deleted is refused within the cache bound, and its open subscription ends (4403)', async () => {
    const raw = await token('temp');
    const temp = bearer(raw);
    expect((await call(port, 'GET', '/vds/demo.Item/i1', temp)).status).to.equal(200);
    let closed: number | undefined;
    let connected = false;
    const subscriber = createClient({
      url: `ws://127.0.0.1:${port}/vds/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${raw}` },
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => undefined,
      on: { connected: () => (connected = true), closed: (e) => (closed = (e as { code: number }).code) },
    });
    try {
      const events = subscriber.iterate({ query: 'subscription { demo_Item { op } }' });
      void events.next().catch(() => undefined);
      await waitFor('the subscriber to be connected', async () => connected);
      await kubectl(cluster, ['-n', ns, 'delete', 'serviceaccount', 'temp']);
      const refused = await waitFor('the deleted ServiceAccount\'s token to be refused', async () => {
        const answer = await call(port, 'GET', '/vds/demo.Item/i1', temp);
        return answer.status === 401 ? answer : undefined;
      }, CACHE_MS + 20_000);
      expect(refused.json.error.code).to.equal('TOKEN_NOT_AUTHENTICATED');
      await waitFor('the subscription to end', async () => closed !== undefined, 20_000);
      expect(closed).to.equal(4403);
    } finally {
      await subscriber.dispose();
    }
  });

  it('the function gateway admits its invokers only and calls the data plane with its own token', async () => {
    const pod = (await getObject(cluster, ns, 'deployment', GATEWAY)).spec.template.spec;
    const rendered = Object.fromEntries(pod.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));
    // The projected token the kubelet would write: the gateway's ServiceAccount, the data plane's audience.
    const tokenDir = mkdtempSync(join(tmpdir(), 'vfy-token-'));
    writeFileSync(join(tokenDir, 'token'), await token(GATEWAY, projectedAudience(pod)));
    gatewayPort = await freePort();
    gateway = startDataPlane({
      ...rendered,
      DAS_UPSTREAM_URL: `http://127.0.0.1:${port}`,
      DAS_UPSTREAM_TOKEN_FILE: join(tokenDir, 'token'),
      KUBECONFIG: await serviceAccountKubeconfig(cluster, ns, GATEWAY),
      PORT: String(gatewayPort),
      HOST: '127.0.0.1',
    });
    await waitFor('the function gateway', async () => {
      if (gateway!.child.exitCode !== null) throw new Error(`function gateway exited: ${gateway!.output()}`);
      return (await httpGet(gatewayPort, '/healthz').catch(() => ({ status: 0 }))).status === 200;
    });
    const payload = { operation: 'get', dataset: { id: 'vds' }, schema: 'demo.Item', id: 'i1' };
    const invoked = await call(gatewayPort, 'POST', '/', bearer(await token('invoker', `${audience()}/function-gateway`)), payload);
    expect(invoked.status).to.equal(200);
    expect(invoked.json.status.code, JSON.stringify(invoked.json)).to.equal(200);
    expect(invoked.json.data).to.include({ id: 'i1', name: 'one' });

    const notInvoker = await call(gatewayPort, 'POST', '/', bearer(await token('reader', `${audience()}/function-gateway`)), payload);
    expect([notInvoker.status, notInvoker.json.data.code]).to.deep.equal([403, 'INVOKER_NOT_ALLOWED']);
    expect(notInvoker.json.status.message).to.include('spec.functionGateway.invokers');
    const dataPlaneAudience = await call(gatewayPort, 'POST', '/', bearer(await token('invoker')), payload);
    expect([dataPlaneAudience.status, dataPlaneAudience.json.data.code]).to.deep.equal([401, 'WRONG_AUDIENCE']);
    const anonymous = await call(gatewayPort, 'POST', '/', {}, payload);
    expect([anonymous.status, anonymous.json.data.code]).to.deep.equal([401, 'MISSING_CREDENTIALS']);
  });

  it('2,000 forged tokens (another key, a wrong audience, expired) cost at most 20 TokenReviews, the expired ones none', async () => {
    const issuerKey = createPrivateKey(readFileSync(join(cluster.workDir, 'pki', 'sa.key')));
    const { privateKey: strangerKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const kid = decodeProtectedHeader(await token('reader')).kid!;
    const now = Math.floor(Date.now() / 1000);
    const forge = (key: KeyObject, i: number, claims: { aud?: string; exp?: number; kid?: string } = {}) =>
      new SignJWT({ 'kubernetes.io': { namespace: ns, serviceaccount: { name: 'reader', uid: 'x' } } })
        .setProtectedHeader({ alg: 'RS256', kid: claims.kid ?? kid })
        .setIssuer('https://kubernetes.default.svc.cluster.local')
        .setSubject(`system:serviceaccount:${ns}:reader`)
        .setAudience(claims.aud ?? audience())
        .setJti(`forged-${i}`)
        .setIssuedAt(now - 60)
        .setExpirationTime(claims.exp ?? now + 3600)
        .sign(key);
    /** Sends every token (a few at a time) and returns the refusal codes seen, with how many TokenReviews they cost. */
    const send = async (tokens: string[]) => {
      const before = await tokenReviews(cluster);
      const codes = new Map<string, number>();
      for (let i = 0; i < tokens.length; i += 25) {
        const answers = await Promise.all(tokens.slice(i, i + 25).map((t) => call(port, 'GET', '/vds/demo.Item/i1', bearer(t))));
        for (const a of answers) codes.set(`${a.status} ${a.json.error?.code}`, (codes.get(`${a.status} ${a.json.error?.code}`) ?? 0) + 1);
      }
      return { codes: Object.fromEntries(codes), reviews: (await tokenReviews(cluster)) - before };
    };

    // Signed by the cluster's own issuer key, expired an hour ago.
    const expired = await Promise.all(Array.from({ length: 500 }, (_, i) => forge(issuerKey, i, { exp: now - 3600 })));
    const expiredRun = await send(expired);
    expect(expiredRun.codes).to.deep.equal({ '401 TOKEN_EXPIRED': 500 });
    expect(expiredRun.reviews).to.equal(0);

    const forged = [
      ...(await Promise.all(Array.from({ length: 500 }, (_, i) => forge(strangerKey, 1000 + i)))), // another key, the cluster's kid
      ...(await Promise.all(Array.from({ length: 500 }, (_, i) => forge(strangerKey, 2000 + i, { kid: `invented-${i}` })))), // another key, an unknown kid
      ...(await Promise.all(Array.from({ length: 500 }, (_, i) => forge(issuerKey, 3000 + i, { aud: 'https://kubernetes.default.svc.cluster.local' })))), // genuine, another audience
    ];
    const run = await send(forged);
    expect(run.codes).to.deep.equal({ '401 BAD_SIGNATURE': 500, '401 UNKNOWN_KEY': 500, '401 WRONG_AUDIENCE': 500 });
    expect(run.reviews, `TokenReviews for 1,500 forged tokens: ${run.reviews}`).to.be.at.most(20);
    // A real token still works.
    expect((await call(port, 'GET', '/vds/demo.Item/i1', bearer(await token('reader', audience(), 900)))).status).to.equal(200);
  });

  it('a token bound to a Pod stops working within the verdict cache bound once the Pod is deleted', async () => {
    await apply(cluster, ns, `apiVersion: v1
kind: Pod
metadata: {name: bound-holder}
spec:
  serviceAccountName: podbound
  automountServiceAccountToken: false
  containers: [{name: c, image: example.invalid/none}]
`);
    const uid = (await getObject(cluster, ns, 'pod', 'bound-holder')).metadata.uid as string;
    const raw = (
      await kubectl(cluster, ['-n', ns, 'create', 'token', 'podbound', '--audience', audience(), '--bound-object-kind', 'Pod', '--bound-object-name', 'bound-holder', '--bound-object-uid', uid])
    ).trim();
    const bound = bearer(raw);
    const echo = await call(port, 'GET', '/vds/echo', bound);
    expect([echo.status, echo.json.caller?.id]).to.deep.equal([200, `system:serviceaccount:${ns}:podbound`]);
    await kubectl(cluster, ['-n', ns, 'delete', 'pod', 'bound-holder', '--grace-period=0', '--force']);
    const refused = await waitFor('the deleted Pod\'s token to be refused', async () => {
      const answer = await call(port, 'GET', '/vds/demo.Item/i1', bound);
      return answer.status === 401 ? answer : undefined;
    }, CACHE_MS + 20_000);
    expect(refused.json.error.code).to.equal('TOKEN_NOT_AUTHENTICATED');
    // Remembered: asking again costs no further TokenReview.
    const before = await tokenReviews(cluster);
    for (let i = 0; i < 10; i++) expect((await call(port, 'GET', '/vds/demo.Item/i1', bound)).status).to.equal(401);
    expect((await tokenReviews(cluster)) - before).to.be.at.most(1);
  });

  it('the API server unreachable: 503 with Retry-After for a token without a verdict, cached verdicts keep serving, then recovery', async () => {
    const known = bearer(await token('reader'));
    const fresh = bearer(await token('reader', audience(), 700));
    expect((await call(port, 'GET', '/vds/demo.Item/i1', known)).status).to.equal(200);
    apiProxy.sever();
    try {
      expect((await call(port, 'GET', '/vds/demo.Item/i1', known)).status).to.equal(200);
      const unavailable = await call(port, 'GET', '/vds/demo.Item/i1', fresh);
      expect([unavailable.status, unavailable.json.error?.code], JSON.stringify(unavailable.json)).to.deep.equal([503, 'TOKEN_REVIEW_UNAVAILABLE']);
      expect(unavailable.headers['retry-after']).to.match(/^\d+$/);
      expect(unavailable.json.requestId).to.be.a('string');
      // No internal address for the caller (the cause is in the data plane's log).
      expect(unavailable.json.error.message).to.not.include('127.0.0.1').and.not.include(String(apiProxy.port)).and.not.include('ECONNREFUSED');
    } finally {
      apiProxy.restore();
    }
    await waitFor('the fresh token to be served after the API server is back', async () => (await call(port, 'GET', '/vds/demo.Item/i1', fresh)).status === 200);
  });

  it('deleting the Environment removes its ClusterRoleBindings (finalizer), then the Environment goes', async () => {
    await kubectl(cluster, ['-n', ns, 'delete', 'environment', ENV, '--wait=false']);
    await waitFor('the Environment to be gone', async () => (await getObject(cluster, ns, 'environment', ENV)) === undefined, 60_000);
    const left = await kubectl(cluster, ['get', 'clusterrolebindings', '-l', `dataaccess.dev/namespace=${ns}`, '-o', 'name']);
    expect(left.trim()).to.equal('');
  });
});

function projectedAudience(pod: any): string {
  return pod.volumes.find((v: any) => v.projected).projected.sources[0].serviceAccountToken.audience;
}
