/**
 * Compressed CSV and NDJSON from an https:// source: a TLS server on 127.0.0.1 with a self-signed
 * certificate for files.test (trusted by this process's https agent; the location check that
 * refuses loopback addresses is locations.test.ts's), its body decompressed as it arrives.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { globalAgent, createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compress } from '../../test-support/compressed.js';
import { DEFAULT_FILE_LIMITS, DEFAULT_SOURCE_LIMITS } from './limits.js';
import { FormatError, readChunks, type Format } from './readers.js';
import { httpsSource } from './sources.js';

describe('bulk-load sources: compressed files over https', () => {
  let server: Server;
  let port: number;
  const bodies = new Map<string, Buffer>();
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `h${i}`, name: `name, "${i}" ü` }));
  const csv = (n: number) => `id,name\n${rows(n).map((r) => `${r.id},"${r.name.replace(/"/g, '""')}"`).join('\n')}\n`;
  const ndjson = (n: number) => rows(n).map((r) => JSON.stringify(r)).join('\n');
  const read = async (path: string, format: Format) => {
    const file = await httpsSource(new URL(`https://files.test:${port}${path}`), '127.0.0.1', 4, DEFAULT_SOURCE_LIMITS);
    const out = [];
    let bytes = 0;
    for await (const chunk of readChunks(file, format, 0, 500, DEFAULT_FILE_LIMITS)) {
      out.push(...chunk.rows);
      bytes += chunk.bytes;
    }
    return { rows: out, bytes, size: file.size };
  };

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-https-'));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=files.test', '-addext', 'subjectAltName=DNS:files.test'], { stdio: 'ignore' });
    globalAgent.options.ca = readFileSync(cert, 'utf8');
    bodies.set('/items.csv.gz', compress(csv(3000), 'gzip'));
    bodies.set('/items.ndjson', compress(ndjson(3000), 'zstd'));
    const cut = compress(ndjson(20_000), 'zstd');
    bodies.set('/cut.ndjson.zst', cut.subarray(0, cut.length >> 1));
    server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      const body = bodies.get(req.url ?? '');
      if (!body) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length });
      if (req.method === 'HEAD') return void res.end();
      // Sent in pieces of 1000 bytes: a body arrives a piece at a time.
      let at = 0;
      const next = () => {
        if (at >= body.length) return void res.end();
        res.write(body.subarray(at, (at += 1000)), next);
      };
      next();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    delete globalAgent.options.ca;
    globalAgent.destroy();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('a gzip CSV and a zstd NDJSON (no extension says so) read every row; bytes are the compressed size', async () => {
    for (const [path, format] of [
      ['/items.csv.gz', 'CSV'],
      ['/items.ndjson', 'NDJSON'],
    ] as const) {
      const { rows: read_, bytes, size } = await read(path, format);
      expect(read_.map((r) => r.value), path).to.deep.equal(rows(3000));
      expect(bytes, path).to.equal(size);
      expect(size).to.equal(bodies.get(path)!.length);
    }
  });

  it('a body cut short FAILs naming the URL', async () => {
    const err = await read('/cut.ndjson.zst', 'NDJSON').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(FormatError);
    expect((err as Error).message).to.equal(`https://files.test:${port}/cut.ndjson.zst: the zstd stream is not valid (it ends in the middle of a frame: the file is truncated)`);
  });
});
