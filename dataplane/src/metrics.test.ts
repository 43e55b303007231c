import { expect } from 'chai';
import { Registry } from 'prom-client';
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
});
