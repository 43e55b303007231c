import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { BodyBudget, jsonDepth, readRawBody } from './body.js';
import type { ApiError } from '../engine/errors.js';

/** The definition, one character at a time: a backslash inside a string escapes the next character. */
function depthByCharacter(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ']' || c === '}') depth--;
  }
  return max;
}

describe('JSON nesting depth (http/body.ts jsonDepth)', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(jsonDepth('{"a": [1, {"b": [[]]}]}')).to.equal(5);
    expect(jsonDepth('{"query": "{ a { b { c { d } } } }", "variables": {"x": "[[[["}}')).to.equal(2);
    expect(jsonDepth('"[{[{"')).to.equal(0);
    expect(jsonDepth('[]')).to.equal(1);
  });

  it('ends a string only at a quote not escaped by an odd run of backslashes', () => {
    expect(jsonDepth('["\\"[[[", []]')).to.equal(2); // \" inside: the string goes on past it
    expect(jsonDepth('["a\\\\", [[]]]')).to.equal(3); // \\ then the closing quote
    expect(jsonDepth('["\\\\\\"[[", [[]]]')).to.equal(3); // \\\" : still inside
    expect(jsonDepth('["\\\\\\\\", [[]]]')).to.equal(3); // \\\\ then the closing quote
  });

  it('treats an unterminated string as running to the end', () => {
    expect(jsonDepth('[["abc [[[[')).to.equal(2);
    expect(jsonDepth('[["abc\\"')).to.equal(2);
    expect(jsonDepth('[["abc\\')).to.equal(2);
  });

  it('stops once past the limit', () => {
    expect(jsonDepth('['.repeat(100_000), 64)).to.equal(65);
    expect(jsonDepth(`{"a": "${'['.repeat(1000)}"}`, 64)).to.equal(1);
  });

  it('agrees with the character-by-character definition on generated texts', () => {
    const alphabet = ['"', '\\', '[', ']', '{', '}', 'a', ',', ':', ' '];
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 20_000; round++) {
      let text = '';
      const length = random(40);
      for (let i = 0; i < length; i++) text += alphabet[random(alphabet.length)];
      expect(jsonDepth(text), text).to.equal(depthByCharacter(text));
    }
  });
});

/**
 * readRawBody against real sockets: a body that arrives with its headers is taken whole from the
 * stream's buffer; one that arrives later, in pieces or pipelined is collected from the events.
 * Both must give the same bytes, the same refusals, and leave the budget as they found it.
 */
describe('request bodies (http/body.ts readRawBody)', () => {
  const budget = new BodyBudget(1024 * 1024);
  const options = { limit: 64 * 1024, budget };
  let server: Server;
  let port: number;
  /** Resolved for each request the server sees, in order (a test waits for it before sending more). */
  let arrived: Array<() => void> = [];
  /** Every readRawBody's settling, and the codes of its refusals. */
  let outcomes: Promise<unknown>[] = [];
  let codes: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      arrived.shift()?.();
      // As app.ts calls it (inside an async function): a synchronous refusal becomes a rejection.
      const outcome = new Promise<Buffer>((resolve) => resolve(readRawBody(req, options))).then(
        (body) => res.end(JSON.stringify({ length: body.length, text: body.toString('utf8') })),
        (err: ApiError) => {
          codes.push(err.code);
          res.writeHead(err.status ?? 500).end(JSON.stringify({ code: err.code }));
        },
      );
      outcomes.push(outcome);
      // The request destroyed right after the body's reading began, before the collector starts
      // (its aborted and close events fire before then).
      if (req.headers['x-test-reset'] !== undefined) req.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    arrived = [];
    outcomes = [];
    codes = [];
  });
  afterEach(async () => {
    await Promise.all(outcomes);
    expect(budget.inUse, 'budget released').to.equal(0);
  });

  /** Writes the given pieces in order, each after `waitFor(i)` resolves; gives back everything the server answered. */
  async function exchange(pieces: string[], waitBefore: (i: number) => Promise<void> = async () => {}): Promise<string> {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8').on('data', (d: string) => (answer += d));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    for (const [i, piece] of pieces.entries()) {
      await waitBefore(i);
      socket.write(piece);
    }
    socket.end();
    await closed;
    return answer;
  }
  const post = (body: string, headers = '') => `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;
  const bodiesIn = (answer: string) => [...answer.matchAll(/\{"length":\d+,"text":.*?\}(?=HTTP|$)/g)].map((m) => JSON.parse(m[0]) as { length: number; text: string });
  const seen = () => new Promise<void>((resolve) => arrived.push(resolve));

  it('reads a body sent in the same packet as its headers', async () => {
    const body = JSON.stringify({ read: { schema: 'demo.Person', id: 'p1' }, text: 'é✓' });
    const answer = await exchange([post(body)]);
    expect(bodiesIn(answer)).to.deep.equal([{ length: Buffer.byteLength(body), text: body }]);
  });

  it('reads a body that arrives after the request has been seen, in pieces', async () => {
    const body = JSON.stringify({ a: 'x'.repeat(3000) });
    const head = post(body).slice(0, -body.length);
    const handled = seen();
    const answer = await exchange([head, body.slice(0, 1000), body.slice(1000)], async (i) => {
      if (i === 1) await handled;
    });
    expect(bodiesIn(answer)).to.deep.equal([{ length: body.length, text: body }]);
  });

  it('reads each of several pipelined bodies sent in one packet', async () => {
    const bodies = ['{"n":1}', '{"n":22}', '{"n":333}'];
    const answer = await exchange([bodies.map((b) => post(b)).join('')]);
    expect(bodiesIn(answer).map((b) => b.text)).to.deep.equal(bodies);
  });

  it('refuses a body cut short of its Content-Length, as before', async () => {
    const cut = post('{"a":1}').replace('Content-Length: 7', 'Content-Length: 20');
    await exchange([cut]);
    await Promise.all(outcomes);
    // The client ended the connection: the body can never be complete.
    expect(codes).to.deep.equal(['REQUEST_ABORTED']);
  });

  it('refuses, and releases the budget of, bodies whose connection is reset right after their first bytes', async () => {
    // The reset may reach the server before the collector starts (it starts once node is done
    // with the packet): its aborted and close events have fired by then, and it must still settle.
    const resets = Array.from({ length: 20 }, async () => {
      const socket = connect(port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.on('error', () => undefined);
      socket.write(post('{"a":1}').replace('Content-Length: 7', 'Content-Length: 60000'));
      socket.resetAndDestroy();
      await closed;
    });
    await Promise.all(resets);
    // Once the server has closed every connection, each request that reached it has had its events;
    // a collector that missed them would leave its promise pending (and this test timing out).
    while ((await new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))) > 0) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    await Promise.all(outcomes);
    expect(outcomes.length, 'requests that reached the server').to.be.greaterThan(0);
    expect(codes).to.deep.equal(Array(outcomes.length).fill('REQUEST_ABORTED'));
  });

  it('refuses, and releases the budget of, a body whose request is destroyed before the collector starts', async () => {
    for (const body of ['{"a":1}', '']) {
      const head = post(body).replace(`Content-Length: ${body.length}`, 'Content-Length: 500').replace('\r\n\r\n', '\r\nx-test-reset: 1\r\n\r\n');
      await exchange([head]).catch(() => undefined);
    }
    await Promise.all(outcomes);
    expect(codes).to.deep.equal(['REQUEST_ABORTED', 'REQUEST_ABORTED']);
  });

  it('refuses a declared length above the limit before reading, whether or not the body came with it', async () => {
    const big = '"' + 'x'.repeat(70 * 1024) + '"';
    const answer = await exchange([post(big)]);
    expect(answer).to.match(/^HTTP\/1.1 413/);
    expect(answer).to.include('"code":"BODY_TOO_LARGE"');
  });
});
