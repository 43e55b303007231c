/** The admin API's endpoint rule (admin-checks.ts): public addresses only, unless the origin is allowed. */
import { expect } from 'chai';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';
import type { LookupAddress } from 'node:dns';
import type { LocationSpec } from '../../../model/types.js';
import { ApiError } from '../engine/errors.js';
import { checkEndpoints, servedOrigins } from './admin-checks.js';

const dynamo = (endpoint: string): LocationSpec => ({ kind: 'dynamodb', endpoint });
/** A resolver answering from a table, as DNS would. */
const resolver = (table: Record<string, string[]>) =>
  (async (host: string) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as LookupAddress);
  }) as never;

async function refusal(location: LocationSpec, allowed: string[] = [], table: Record<string, string[]> = {}): Promise<ApiError | undefined> {
  try {
    await checkEndpoints(location, new Set(allowed), resolver(table));
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe('admin API: endpoints a Dataset names', () => {
  it('refuses metadata, link-local, private and loopback addresses, literal or resolved, naming the field', async () => {
    for (const url of ['http://169.254.169.254/', 'http://[fd00:ec2::254]', 'http://10.1.2.3:8000', 'http://127.0.0.1:8000', 'http://[::1]:8000', 'http://[::ffff:192.168.0.1]', 'http://0.0.0.0']) {
      const err = await refusal(dynamo(url));
      expect(err?.status, url).to.equal(400);
      expect(err?.code).to.equal('ENDPOINT_FORBIDDEN');
      expect(err?.details[0]).to.include({ path: '$.spec.location.endpoint' });
    }
    // A name that resolves to a private address (or to one public and one private) is refused too.
    expect((await refusal(dynamo('https://db.internal.example'), [], { 'db.internal.example': ['10.0.0.9'] }))?.message).to.contain('10.0.0.9');
    expect(await refusal(dynamo('https://mixed.example'), [], { 'mixed.example': ['203.0.113.9', '8.8.8.8', '172.20.0.1'] })).to.not.equal(undefined);
    expect((await refusal(dynamo('https://nowhere.example')))?.message).to.contain('does not resolve');
    const warehouse = await refusal({ kind: 'snowflake', accessUrl: 'http://169.254.170.2' });
    expect(warehouse?.details[0]).to.include({ path: '$.spec.location.accessUrl' });
    expect((await refusal(dynamo('https://user:pw@dynamodb.example')))?.message).to.contain('credentials');
  });

  it('accepts public addresses, and an allowed origin whatever its address', async () => {
    expect(await refusal(dynamo('https://dynamodb.eu-west-1.amazonaws.com'), [], { 'dynamodb.eu-west-1.amazonaws.com': ['52.94.0.1'] })).to.equal(undefined);
    expect(await refusal(dynamo('http://127.0.0.1:8000'), dataPlaneSettings({ DAS_ADMIN_ALLOWED_ENDPOINTS: 'http://127.0.0.1:8000, http://peer:8085' }).DAS_ADMIN_ALLOWED_ENDPOINTS)).to.equal(undefined);
    // The origin is scheme, host and port: another port of an allowed host is not allowed.
    expect(await refusal(dynamo('http://127.0.0.1:8001'), ['http://127.0.0.1:8000'])).to.not.equal(undefined);
    expect(await refusal(dynamo('http://127.0.0.1:8000/'), servedOrigins([{ kind: 'dynamodb', endpoint: 'http://127.0.0.1:8000' }]))).to.equal(undefined);
    expect(await refusal({ kind: 'postgres', databaseSchema: 'x' })).to.equal(undefined);
  });

  it('DAS_ADMIN_ALLOWED_ENDPOINTS must list origins', () => {
    expect(dataPlaneSettings({}).DAS_ADMIN_ALLOWED_ENDPOINTS).to.deep.equal([]);
    expect(() => dataPlaneSettings({ DAS_ADMIN_ALLOWED_ENDPOINTS: 'not a url' })).to.throw(/DAS_ADMIN_ALLOWED_ENDPOINTS="not a url" is not allowed: comma-separated URL origins/);
  });
});
