import { expect } from "chai";
import { findKubeBinaries, startKubeCluster, type KubeCluster } from "./cluster.js";

// setup-envtest's KUBEBUILDER_ASSETS has no kube-controller-manager: then (and only
// then) the tests that need controllers are skipped. Without KUBEBUILDER_ASSETS a
// missing controller-manager is an error (run scripts/kube-peer/build.sh).
function controllersAvailable(): boolean {
  if (!process.env.KUBEBUILDER_ASSETS) return true;
  try {
    return findKubeBinaries().controllerManager !== undefined;
  } catch {
    return true; // let startKubeCluster report what is missing
  }
}

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.kube-peer.test
spec:
  group: smoke.kube-peer.test
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer, minimum: 1 }
                labels:
                  type: object
                  additionalProperties: { type: string }
              required: [size]
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`;

const WIDGET = `
apiVersion: smoke.kube-peer.test/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: 3
  labels: { team: data }
`;

async function poll<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("kube test peer (etcd + kube-apiserver + kube-controller-manager)", function () {
  this.timeout(180_000);
  let kube: KubeCluster;
  let withControllers = true;

  before(async function () {
    withControllers = controllersAvailable();
    kube = await startKubeCluster({ controllerManager: withControllers });
  });

  after(async function () {
    await kube?.stop();
  });

  it("answers kubectl version", async function () {
    const r = await kube.kubectl(["version", "-o", "json"], { check: true });
    const v = JSON.parse(r.stdout) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
    expect(v.serverVersion.gitVersion).to.equal(kube.serverVersion);
    expect(v.clientVersion.gitVersion).to.match(/^v1\.\d+/);
  });

  it("applies a CustomResourceDefinition and a custom resource of it", async function () {
    await kube.kubectl(["apply", "-f", "-"], { input: CRD, check: true });
    await kube.kubectl(
      ["wait", "--for=condition=Established", "--timeout=60s", "crd/widgets.smoke.kube-peer.test"],
      { check: true },
    );
    // Creating and reading a custom resource is where the old reflect2 would panic.
    await kube.kubectl(["apply", "-f", "-"], { input: WIDGET, check: true });
    const got = JSON.parse((await kube.kubectl(["get", "widget", "w1", "-o", "json"], { check: true })).stdout);
    expect(got.spec).to.deep.equal({ size: 3, labels: { team: "data" } });

    // Schema validation is enforced by the real server.
    const bad = await kube.kubectl(["apply", "-f", "-"], { input: WIDGET.replace("size: 3", "size: 0") });
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/size/);

    // Status subresource works.
    await kube.kubectl(
      ["patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Ready"}}'],
      { check: true },
    );
    const st = JSON.parse((await kube.kubectl(["get", "widget", "w1", "-o", "json"], { check: true })).stdout);
    expect(st.status).to.deep.equal({ phase: "Ready" });
  });

  it("garbage-collects a dependent when its owner is deleted", async function () {
    if (!withControllers) this.skip();
    await kube.kubectl(["create", "configmap", "owner", "--from-literal=a=1"], { check: true });
    const uid = (await kube.kubectl(["get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"], { check: true }))
      .stdout.trim();
    expect(uid).to.match(/^[0-9a-f-]{36}$/);
    const dependent = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "dependent",
        namespace: "default",
        ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid }],
      },
      data: { b: "2" },
    };
    await kube.kubectl(["apply", "-f", "-"], { input: JSON.stringify(dependent), check: true });
    await kube.kubectl(["get", "configmap", "dependent"], { check: true });

    await kube.kubectl(["delete", "configmap", "owner", "--wait=true"], { check: true });
    await poll("the garbage collector to delete configmap/dependent", 90_000, async () => {
      const r = await kube.kubectl(["get", "configmap", "dependent", "--ignore-not-found", "-o", "name"]);
      expect(r.code, r.stderr).to.equal(0);
      return r.stdout.trim() === "" ? true : undefined;
    });
  });

  it("turns a Deployment into a ReplicaSet and Pods (which stay Pending)", async function () {
    if (!withControllers) this.skip();
    await kube.kubectl(["create", "deployment", "web", "--image=example.invalid/web:1", "--replicas=2"], {
      check: true,
    });
    const pods = await poll("pods of deployment web", 60_000, async () => {
      const r = await kube.kubectl(["get", "pods", "-l", "app=web", "-o", "json"], { check: true });
      const items = (JSON.parse(r.stdout) as { items: { status: { phase: string } }[] }).items;
      return items.length === 2 ? items : undefined;
    });
    expect(pods.map((p) => p.status.phase)).to.deep.equal(["Pending", "Pending"]);
  });

  it("runs helm", async function () {
    const r = await kube.helm(["version", "--short"], { check: true });
    expect(r.stdout).to.match(/^v\d+\./);
  });
});
