import { expect } from 'chai';
import { loadConfig } from './config.js';
import { DEFAULT_IMAGE } from './render/types.js';

describe('operator: configuration from the environment', () => {
  it('defaults: all namespaces, metrics on 9090, leader election with client-go timings', () => {
    const config = loadConfig({});
    expect(config.watchNamespace).to.equal(undefined);
    expect(config.metricsPort).to.equal(9090);
    expect(config.leaderElection).to.include({ enabled: true, name: 'data-access-operator', namespace: 'default', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(config.resyncPeriodMs).to.equal(600_000);
    expect(DEFAULT_IMAGE).to.equal('ghcr.io/data-access-service/data-access:0.1.0');
    expect(config.render).to.deep.equal({ dataplaneImage: DEFAULT_IMAGE, functionGatewayImage: DEFAULT_IMAGE, imagePullPolicy: 'IfNotPresent' });
  });

  it('the function gateway image follows DATAPLANE_IMAGE unless FUNCTION_GATEWAY_IMAGE names its own', () => {
    expect(loadConfig({ DATAPLANE_IMAGE: 'registry.example/dp:1', FUNCTION_GATEWAY_IMAGE: 'registry.example/fg:1' }).render).to.include({
      dataplaneImage: 'registry.example/dp:1',
      functionGatewayImage: 'registry.example/fg:1',
    });
    expect(loadConfig({ FUNCTION_GATEWAY_IMAGE: 'registry.example/fg:1' }).render).to.include({ dataplaneImage: DEFAULT_IMAGE, functionGatewayImage: 'registry.example/fg:1' });
  });

  it('OTEL_* settings are handed on to the rendered workloads only with an endpoint (each names its own service)', () => {
    const traced = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'operator-x', OTEL_TRACES_SAMPLER_ARG: '0.5' });
    expect(traced.render.telemetryEnv).to.deep.equal([
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://collector:4318' },
      { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', value: 'http/json' },
      { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_always_on' },
      { name: 'OTEL_TRACES_SAMPLER_ARG', value: '0.5' },
    ]);
    expect(loadConfig({ OTEL_SERVICE_NAME: 'operator-x' }).render).not.to.have.property('telemetryEnv');
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '256' }).render.telemetryEnv).to.deep.include({ name: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', value: '256' });
  });

  it('reads the chart\'s variables', () => {
    const config = loadConfig({
      WATCH_NAMESPACE: 'team-a',
      METRICS_PORT: '19090',
      LEADER_ELECTION: 'false',
      LEASE_DURATION_SECONDS: '4',
      LEASE_RENEW_DEADLINE_SECONDS: '3',
      LEASE_RETRY_PERIOD_SECONDS: '0.5',
      POD_NAME: 'operator-abc',
      POD_NAMESPACE: 'ops',
      DATAPLANE_IMAGE: 'registry.example/dp:1',
    });
    expect(config.watchNamespace).to.equal('team-a');
    expect(config.metricsPort).to.equal(19090);
    expect(config.leaderElection).to.include({ enabled: false, identity: 'operator-abc', namespace: 'ops', leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 });
    expect(config.render).to.include({ dataplaneImage: 'registry.example/dp:1', functionGatewayImage: 'registry.example/dp:1' });
  });

  it('refuses settings that would let two leaders overlap, or nonsense, with a message naming the variable', () => {
    expect(() => loadConfig({ LEASE_DURATION_SECONDS: '10', LEASE_RENEW_DEADLINE_SECONDS: '10' })).to.throw(/LEASE_RENEW_DEADLINE_SECONDS must be shorter/);
    expect(() => loadConfig({ METRICS_PORT: 'http' })).to.throw(/METRICS_PORT/);
    expect(() => loadConfig({ LEADER_ELECTION: 'yes' })).to.throw(/LEADER_ELECTION/);
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).to.throw(/LOG_LEVEL/);
  });
});
