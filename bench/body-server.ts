/**
 * A bare node:http server that reads each POST body with the data plane's `readRawBody` (http/body.ts,
 * from the checkout given as BODY_ROOT, default this one) and answers its length: the body path
 * alone, for bench/body-read.ts.
 */
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.env.BODY_ROOT ?? resolve(import.meta.dirname, '..');
const { readRawBody, BodyBudget } = await import(pathToFileURL(resolve(root, 'dataplane/src/http/body.ts')).href);
const options = { limit: 1024 * 1024, budget: new BodyBudget() };

const server = createServer((req, res) => {
  new Promise<Buffer>((r) => r(readRawBody(req, options))).then(
    (body) => res.end(String(body.length)),
    (err: { status?: number }) => res.writeHead(err.status ?? 500).end(),
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
