import { expect } from 'chai';
import { Counter, Histogram, Registry } from 'prom-client';
import { requestMetrics } from './metrics.js';

describe('request metrics (label values from bounded sets only)', () => {
  it('keeps served datasets, iam/public and the HTTP methods; anything else is "-" or "other"', async () => {
    const registry = new Registry();
    const metrics = requestMetrics(registry, (id) => id === 'demo');
    metrics.observe({ dataset: 'demo', gateway: 'public', method: 'GET', status: 200, seconds: 0.002 });
    metrics.observe({ dataset: 'evil"} 1\nx{', gateway: 'forged', method: 'BREW', status: 418, seconds: 0.001 });
    metrics.observe({ status: 400, seconds: 0.001 });
    const text = await registry.metrics();
    expect(text).to.include('das_http_requests_total{dataset="demo",gateway="public",method="GET",status="200"} 1');
    expect(text).to.include('das_http_requests_total{dataset="-",gateway="-",method="other",status="418"} 1');
    expect(text).to.include('das_http_requests_total{dataset="-",gateway="-",method="other",status="400"} 1');
    expect(text).not.to.include('evil');
    expect(text).to.include('das_http_request_duration_seconds_bucket{le="0.0025",dataset="demo",gateway="public",method="GET"} 1');
  });

  it("exposes exactly what prom-client's own Counter and Histogram would for the same requests", async () => {
    const samples = [
      { dataset: 'demo', gateway: 'iam', method: 'GET', status: 200, seconds: 0.0004 },
      { dataset: 'demo', gateway: 'iam', method: 'GET', status: 200, seconds: 0.003 },
      { dataset: 'demo', gateway: 'iam', method: 'GET', status: 404, seconds: 0.02 },
      { dataset: 'demo', gateway: 'public', method: 'POST', status: 201, seconds: 12 },
      { dataset: 'other', gateway: 'iam', method: 'DELETE', status: 500, seconds: 0.75 },
    ];
    const registry = new Registry();
    const metrics = requestMetrics(registry, (id) => id === 'demo');
    const reference = new Registry();
    const total = new Counter({ name: 'das_http_requests_total', help: 'HTTP requests answered, by dataset, gateway, method and status code', labelNames: ['dataset', 'gateway', 'method', 'status'], registers: [reference] });
    const latency = new Histogram({
      name: 'das_http_request_duration_seconds',
      help: 'Time from a request arriving to its response finishing, by dataset, gateway and method',
      labelNames: ['dataset', 'gateway', 'method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [reference],
    });
    const observeBoth = (s: (typeof samples)[number]) => {
      metrics.observe(s);
      const dataset = s.dataset === 'demo' ? 'demo' : '-';
      total.inc({ dataset, gateway: s.gateway, method: s.method, status: String(s.status) });
      latency.observe({ dataset, gateway: s.gateway, method: s.method }, s.seconds);
    };
    samples.forEach(observeBoth);
    expect(await registry.metrics()).to.equal(await reference.metrics());
    // A second scrape after more requests adds to the figures, as prom-client's own would.
    samples.slice(0, 2).forEach(observeBoth);
    expect(await registry.metrics()).to.equal(await reference.metrics());
  });
});
