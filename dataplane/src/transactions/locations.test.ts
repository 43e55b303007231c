/** Which locations a bulk load may read: the import root (no escape by `..` or symlink) and public https addresses only. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkLocation, LocationError } from './locations.js';
import { isPublicAddress } from '../front-door/addresses.js';

const refused = async (uri: string, root: string, lookup?: Parameters<typeof checkLocation>[2]) => {
  try {
    await checkLocation(uri, root, lookup);
  } catch (err) {
    expect(err).to.be.instanceOf(LocationError);
    return (err as LocationError).code;
  }
  throw new Error(`${uri} was accepted`);
};

describe('bulk-load locations', () => {
  it('classifies addresses: only globally routable unicast is public', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '151.101.1.69', '2606:4700::1111', '2a00:1450:4009:81f::200e']) expect(isPublicAddress(a), a).to.equal(true);
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', 'ff02::1', 'not-an-ip']) {
      expect(isPublicAddress(a), a).to.equal(false);
    }
  });

  it('refuses https hosts that resolve to a private or metadata address, without connecting', async () => {
    expect(await refused('https://169.254.169.254/latest/meta-data/', '/x')).to.equal('LOCATION_FORBIDDEN');
    expect(await refused('https://[fd00:ec2::254]/', '/x')).to.equal('LOCATION_FORBIDDEN');
    // A name is resolved (here by a stand-in resolver) and every address it has must be public.
    const lookup = (async () => [{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.7', family: 4 }]) as unknown as Parameters<typeof checkLocation>[2];
    expect(await refused('https://files.example/x.parquet', '/x', lookup)).to.equal('LOCATION_FORBIDDEN');
    const publicOnly = (async () => [{ address: '93.184.216.34', family: 4 }]) as unknown as Parameters<typeof checkLocation>[2];
    const ok = await checkLocation('https://files.example/x.parquet', '/x', publicOnly);
    expect(ok).to.deep.include({ scheme: 'https', address: '93.184.216.34' });
    expect(await refused('https://user:pw@files.example/x', '/x', publicOnly)).to.equal('INVALID_LOCATION');
  });

  it('keeps file:// under the import root: .. and symlinks out are refused, links inside are fine', async () => {
    const root = mkdtempSync(join(tmpdir(), 'das-root-'));
    const outside = mkdtempSync(join(tmpdir(), 'das-out-'));
    mkdirSync(join(root, 'sub'));
    writeFileSync(join(root, 'sub', 'a.csv'), 'id\n1\n');
    writeFileSync(join(outside, 'b.csv'), 'id\n1\n');
    symlinkSync(join(outside, 'b.csv'), join(root, 'out.csv'));
    symlinkSync(outside, join(root, 'outdir'));
    symlinkSync(join(root, 'sub', 'a.csv'), join(root, 'in.csv'));
    expect(await checkLocation(pathToFileURL(join(root, 'sub', 'a.csv')).href, root)).to.deep.equal({ scheme: 'file', path: join(root, 'sub', 'a.csv') });
    expect(await checkLocation(pathToFileURL(join(root, 'in.csv')).href, root)).to.deep.equal({ scheme: 'file', path: join(root, 'sub', 'a.csv') });
    expect(await refused(pathToFileURL(join(outside, 'b.csv')).href, root)).to.equal('LOCATION_FORBIDDEN');
    expect(await refused(`file://${root}/sub/../../${outside.split('/').pop()}/b.csv`, root)).to.equal('LOCATION_FORBIDDEN');
    expect(await refused(pathToFileURL(join(root, 'out.csv')).href, root)).to.equal('LOCATION_FORBIDDEN');
    expect(await refused(pathToFileURL(join(root, 'outdir', 'b.csv')).href, root)).to.equal('LOCATION_FORBIDDEN');
    expect(await refused('file://otherhost/x.csv', root)).to.equal('INVALID_LOCATION');
  });

  it('decodes the IPv4 inside IPv6 forms: 6to4, Teredo (client XOR-ed), NAT64, mapped and compatible; 192.88.99.0/24 is not public', () => {
    const notPublic = [
      '2002:7f00:1::1', // 6to4 of 127.0.0.1
      '2002:a9fe:a9fe::', // 6to4 of 169.254.169.254
      '2002:c0a8:101:0:0:0:0:1', // 6to4 of 192.168.1.1, spelled out
      '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo, client 127.0.0.1 (7f00:0001 XOR ffff:ffff)
      '2001:0:a00:1:8000:63bf:3fff:fdd2', // Teredo, server 10.0.0.1
      '64:ff9b::808:808', // NAT64, even of a public IPv4: it reaches whatever the gateway reaches
      '64:ff9b:1::a00:1',
      '::ffff:7f00:1', // IPv4-mapped in hex words
      '0:0:0:0:0:ffff:169.254.169.254',
      '::8.8.8.8', // IPv4-compatible (deprecated)
      '192.88.99.1',
      '2001:db8::1',
      '100::1',
    ];
    for (const a of notPublic) expect(isPublicAddress(a), a).to.equal(false);
    const publicToo = ['2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7' /* Teredo, server 65.54.227.120, client 8.8.8.8 */, '::ffff:8.8.8.8'];
    for (const a of publicToo) expect(isPublicAddress(a), a).to.equal(true);
  });

  it('refuses S3 keys with dot segments, encoded or not, so ".." never reaches the S3 API', async () => {
    for (const uri of ['s3://bucket/loads/%2E%2E%2Fother%2Fsecret.ndjson', 's3://bucket/loads/%2e%2e/x', 's3://bucket/a/./b', 's3://bucket/%2E%2E', 's3://bucket/a/%E0%A4%A']) {
      expect(await refused(uri, '/x'), uri).to.equal('INVALID_LOCATION');
    }
    expect(await checkLocation('s3://bucket/loads/a..b/x.parquet', '/x')).to.deep.equal({ scheme: 's3', bucket: 'bucket', key: 'loads/a..b/x.parquet' });
  });

  it('a forbidden file:// location names the path as given, never the import root', async () => {
    const root = mkdtempSync(join(tmpdir(), 'das-secret-root-'));
    try {
      await checkLocation('file:///etc/passwd', root);
      throw new Error('accepted');
    } catch (err) {
      expect((err as Error).message).to.equal('file:// loads only from under the import root; "/etc/passwd" is outside the import root');
      expect((err as Error).message).to.not.include(root);
    }
  });
});
