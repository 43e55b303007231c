import { expect } from 'chai';
import { checkEnvironmentSpec } from './validate.js';
import { canonicalQuantity, quantityValue } from './workloads.js';

const problems = (spec: object) => checkEnvironmentSpec({ type: 'internal', ...spec });
const paths = (spec: object) => problems(spec).map((p) => p.path);

describe('model: workload sizing (replicas, resources, autoscaling)', () => {
  it('accepts replicas, resources and autoscaling on both workloads', () => {
    expect(
      problems({
        dataplane: { replicas: 3, resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } }, autoscaling: { minReplicas: 2, maxReplicas: 8, targetCPUUtilizationPercentage: 60, targetMemoryUtilizationPercentage: 80 } },
        functionGateway: { replicas: 2, autoscaling: { maxReplicas: 3 } },
        monitoring: { podMonitor: false },
      }),
    ).to.deep.equal([]);
  });

  it('refuses what the schema can say: negative replicas, percentages outside 1–100, no maxReplicas, a malformed quantity', () => {
    expect(paths({ dataplane: { replicas: -1 } })).to.deep.equal(['$.spec.dataplane.replicas']);
    expect(paths({ dataplane: { autoscaling: { maxReplicas: 3, targetCPUUtilizationPercentage: 0 } } })).to.deep.equal(['$.spec.dataplane.autoscaling.targetCPUUtilizationPercentage']);
    expect(paths({ functionGateway: { autoscaling: { maxReplicas: 3, targetMemoryUtilizationPercentage: 101 } } })).to.deep.equal(['$.spec.functionGateway.autoscaling.targetMemoryUtilizationPercentage']);
    expect(paths({ dataplane: { autoscaling: { minReplicas: 2 } } })).to.deep.equal(['$.spec.dataplane.autoscaling']);
    expect(paths({ dataplane: { resources: { limits: { memory: '512 MB' } } } }).join()).to.contain('$.spec.dataplane.resources.limits');
  });

  it('refuses what only the operator can check: minReplicas above maxReplicas, a target without its request, a request above its limit', () => {
    expect(problems({ dataplane: { autoscaling: { minReplicas: 5, maxReplicas: 3 } } })).to.deep.equal([
      { path: '$.spec.dataplane.autoscaling.minReplicas', message: 'minReplicas (5) must not exceed maxReplicas (3)' },
    ]);
    expect(paths({ dataplane: { resources: { requests: { memory: '1Gi' } }, autoscaling: { maxReplicas: 3 } } })).to.deep.equal(['$.spec.dataplane.autoscaling.targetCPUUtilizationPercentage']);
    // A limit alone is the request too (the API server's defaulting).
    expect(paths({ dataplane: { resources: { limits: { cpu: '1', memory: '1Gi' } }, autoscaling: { maxReplicas: 3, targetMemoryUtilizationPercentage: 70 } } })).to.deep.equal([]);
    expect(paths({ dataplane: { resources: { requests: { cpu: '250m' } }, autoscaling: { maxReplicas: 3, targetMemoryUtilizationPercentage: 70 } } })).to.deep.equal(['$.spec.dataplane.autoscaling.targetMemoryUtilizationPercentage']);
    expect(problems({ functionGateway: { resources: { requests: { memory: '2Gi' }, limits: { memory: '1536Mi' } } } })).to.deep.equal([
      { path: '$.spec.functionGateway.resources.requests.memory', message: 'request 2Gi is above the limit 1536Mi' },
    ]);
  });

  it('quantities: their value, and the canonical form the API server stores', () => {
    expect(quantityValue('512Mi')).to.equal(512 * 2 ** 20);
    expect(quantityValue('250m')).to.equal(0.25);
    expect(quantityValue('1e3')).to.equal(1000);
    expect(quantityValue('12 Mi')).to.equal(undefined);
    const cases: [string | number, string][] = [
      ['1024Mi', '1Gi'], ['512Mi', '512Mi'], ['1.5Gi', '1536Mi'], ['0.5Ki', '512'], ['2048Ki', '2Mi'], ['1000Ki', '1000Ki'],
      ['100m', '100m'], ['1000m', '1'], ['0.5', '500m'], ['.5', '500m'], ['2000', '2k'], ['1000M', '1G'], ['1500m', '1500m'], [2, '2'], ['0', '0'],
      ['1e3', '1e3'], ['12e2', '1200'],
    ];
    for (const [input, canonical] of cases) expect(canonicalQuantity(input), String(input)).to.equal(canonical);
  });
});
