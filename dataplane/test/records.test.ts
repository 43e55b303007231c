/** The record API over a real PostgreSQL, through the iam gateway, as an application team uses it. */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { client } from '../test-support/http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('record API over PostgreSQL', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof client>;
  let post: (body: unknown, headers?: Record<string, string>) => ReturnType<typeof api>;

  before(async () => {
    dp = await startTestDataPlane();
    api = client(dp.url, { host: 'iam.example.test', headers: { authorization: 'Proxy demo-admin' } });
    post = (body, headers) => api({ method: 'POST', path: '/demo', body, headers });
  });
  after(async () => dp?.stop());

  const person = (over: Record<string, unknown> = {}) => ({
    name: 'Ada',
    email: 'ada@example.com',
    age: 36,
    address: { street: '1 Analytical Way', postcode: 'N1 9GU' },
    ...over,
  });

  describe('create and read', () => {
    it('creates with a caller-chosen id at version 1 and reads it back by GET and by POST read', async () => {
      const created = await post({ create: { schema: 'demo.Person', id: 'ada', data: person() } });
      expect(created.status).to.equal(201);
      expect(created.json).to.include({ id: 'ada', version: 1, name: 'Ada', age: 36 });
      const got = await api({ path: '/demo/demo.Person/ada' });
      expect(got.status).to.equal(200);
      expect(got.json).to.deep.equal({ id: 'ada', version: 1, ...person() });
      const read = await post({ read: { schema: 'demo.Person', id: 'ada' } });
      expect(read.json).to.deep.equal(got.json);
    });

    it('generates a UUID id when none is given', async () => {
      const created = await post({ create: { schema: 'demo.Company', data: { name: 'Acme' } } });
      expect(created.status).to.equal(201);
      expect(created.json.id).to.match(UUID);
      expect(created.json.version).to.equal(1);
    });

    it('addresses the dataset by host label too, with POST / and GET /{schema}/{id}', async () => {
      const hosted = client(dp.url, { host: 'demo.iam.example.test', headers: { authorization: 'Proxy demo-admin' } });
      const created = await hosted({ method: 'POST', path: '/', body: { create: { schema: 'demo.Company', id: 'hosted', data: { name: 'Hosted' } } } });
      expect(created.status).to.equal(201);
      const got = await hosted({ path: '/demo.Company/hosted' });
      expect(got.json).to.deep.equal({ id: 'hosted', version: 1, name: 'Hosted' });
    });

    it('stores nested properties in flattened columns and links in *_id columns', async () => {
      await post({ create: { schema: 'demo.Company', id: 'flat-co', data: { name: 'Flat' } } });
      await post({ create: { schema: 'demo.Person', id: 'flat', data: person({ employer: { id: 'flat-co' } }) } });
      const db = new pg.Client(dp.databaseUrl);
      await db.connect();
      try {
        const row = (await db.query('SELECT address_street, address_postcode, employer_id, version FROM demo.demo_person WHERE id = $1', ['flat'])).rows[0];
        expect(row).to.deep.equal({ address_street: '1 Analytical Way', address_postcode: 'N1 9GU', employer_id: 'flat-co', version: 1 });
      } finally {
        await db.end();
      }
    });
  });

  describe('update and versions', () => {
    it('increments version on each update and reads version 1 after two updates', async () => {
      await post({ create: { schema: 'demo.Person', id: 'v', data: person({ name: 'First' }) } });
      const u1 = await post({ update: { schema: 'demo.Person', id: 'v', data: person({ name: 'Second' }) } });
      expect(u1.status).to.equal(200);
      expect(u1.json).to.include({ id: 'v', version: 2, name: 'Second' });
      const u2 = await post({ update: { schema: 'demo.Person', id: 'v', data: person({ name: 'Third' }) } });
      expect(u2.json.version).to.equal(3);
      const v1 = await post({ read: { schema: 'demo.Person', id: 'v', version: 1 } });
      expect(v1.status).to.equal(200);
      expect(v1.json).to.include({ version: 1, name: 'First' });
      const v2 = await api({ path: '/demo/demo.Person/v?version=2' });
      expect(v2.json).to.include({ version: 2, name: 'Second' });
      const current = await api({ path: '/demo/demo.Person/v' });
      expect(current.json).to.include({ version: 3, name: 'Third' });
      const missing = await post({ read: { schema: 'demo.Person', id: 'v', version: 9 } });
      expect(missing.status).to.equal(404);
      expect(missing.json.error.code).to.equal('RECORD_NOT_FOUND');
    });

    it('replaces the whole record by default: properties left out become null', async () => {
      await post({ create: { schema: 'demo.Person', id: 'r', data: person() } });
      const replaced = await post({ update: { schema: 'demo.Person', id: 'r', data: { name: 'Only name' } } });
      expect(replaced.json).to.deep.equal({ id: 'r', version: 2, name: 'Only name' });
    });

    it('merges only the given properties with mode "merge", nested ones included', async () => {
      await post({ create: { schema: 'demo.Person', id: 'm', data: person() } });
      const merged = await post({ update: { schema: 'demo.Person', id: 'm', mode: 'merge', data: { age: 37, address: { postcode: 'EC1' } } } });
      expect(merged.status).to.equal(200);
      expect(merged.json).to.deep.equal({ id: 'm', version: 2, ...person({ age: 37, address: { street: '1 Analytical Way', postcode: 'EC1' } }) });
      const cleared = await post({ update: { schema: 'demo.Person', id: 'm', mode: 'merge', data: { email: null } } });
      expect(cleared.json).to.not.have.property('email');
      expect(cleared.json.name).to.equal('Ada');
    });

    it('answers 404 for an update of a missing record', async () => {
      const res = await post({ update: { schema: 'demo.Person', id: 'nobody', data: person() } });
      expect(res.status).to.equal(404);
      expect(res.json.error.code).to.equal('RECORD_NOT_FOUND');
    });
  });

  describe('expand', () => {
    before(async () => {
      await post({ create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme Ltd' } } });
      await post({ create: { schema: 'demo.Person', id: 'emp', data: person({ employer: { id: 'acme' } }) } });
    });

    it('keeps a link as {id} unless expanded', async () => {
      const res = await api({ path: '/demo/demo.Person/emp' });
      expect(res.json.employer).to.deep.equal({ id: 'acme' });
    });

    it('embeds the linked record in place of {id} with ?expand=', async () => {
      const res = await api({ path: '/demo/demo.Person/emp?expand=employer' });
      expect(res.status).to.equal(200);
      expect(res.json.employer).to.deep.equal({ id: 'acme', version: 1, name: 'Acme Ltd' });
    });

    it('expands in a POST read and in a create response', async () => {
      const read = await post({ read: { schema: 'demo.Person', id: 'emp', expand: ['employer'] } });
      expect(read.json.employer.name).to.equal('Acme Ltd');
      const created = await post({ create: { schema: 'demo.Person', id: 'emp2', data: person({ employer: { id: 'acme' } }), expand: ['employer'] } });
      expect(created.json.employer).to.deep.equal({ id: 'acme', version: 1, name: 'Acme Ltd' });
    });

    it('answers 400 naming an expand that is not a link', async () => {
      const res = await api({ path: '/demo/demo.Person/emp?expand=name' });
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_EXPAND');
      expect(res.json.error.message).to.contain('"name"');
    });
  });

  describe('delete', () => {
    it('deletes a record (a tombstone version); reading it then is a 404, and deleting again is a 404', async () => {
      await post({ create: { schema: 'demo.Company', id: 'gone', data: { name: 'Gone' } } });
      const del = await post({ delete: { schema: 'demo.Company', id: 'gone' } });
      expect(del.status).to.equal(200);
      expect(del.json).to.deep.equal({ id: 'gone', version: 2, deleted: true });
      expect((await api({ path: '/demo/demo.Company/gone' })).status).to.equal(404);
      expect((await post({ delete: { schema: 'demo.Company', id: 'gone' } })).status).to.equal(404);
    });

    it('keeps the history: earlier versions read with version, the tombstone is a 404 saying so, a new create continues the versions', async () => {
      await post({ create: { schema: 'demo.Company', id: 'kept', data: { name: 'Kept' } } });
      expect((await post({ delete: { schema: 'demo.Company', id: 'kept' } })).json.version).to.equal(2);
      const first = await api({ path: '/demo/demo.Company/kept?version=1' });
      expect([first.status, first.json]).to.deep.equal([200, { id: 'kept', version: 1, name: 'Kept' }]);
      const tombstone = await post({ read: { schema: 'demo.Company', id: 'kept', version: 2 } });
      expect(tombstone.status).to.equal(404);
      expect(tombstone.json.error.code).to.equal('RECORD_NOT_FOUND');
      expect(tombstone.json.error.message).to.contain('was deleted at version 2');
      const again = await post({ create: { schema: 'demo.Company', id: 'kept', data: { name: 'Back' } } });
      expect([again.status, again.json]).to.deep.equal([201, { id: 'kept', version: 3, name: 'Back' }]);
      expect((await api({ path: '/demo/demo.Company/kept?version=1' })).json.name).to.equal('Kept');
      const db = new pg.Client(dp.databaseUrl);
      await db.connect();
      try {
        const rows = (await db.query('SELECT version, name, deleted_at IS NOT NULL AS tombstone FROM demo.demo_company_history WHERE id = $1 ORDER BY version', ['kept'])).rows;
        expect(rows).to.deep.equal([
          { version: 1, name: 'Kept', tombstone: false },
          { version: 2, name: null, tombstone: true },
          { version: 3, name: 'Back', tombstone: false },
        ]);
      } finally {
        await db.end();
      }
    });
  });

  describe('batch and consistency', () => {
    const count = async (ids: string[]) => {
      const db = new pg.Client(dp.databaseUrl);
      await db.connect();
      try {
        return Number((await db.query('SELECT count(*) FROM demo.demo_company WHERE id = ANY($1)', [ids])).rows[0].count);
      } finally {
        await db.end();
      }
    };

    it('answers every action name, also names of Object properties such as __proto__', async () => {
      // Sent as text: a JavaScript object literal would turn "__proto__" into a prototype.
      const res = await post('{"batch": {"actions": {"__proto__": {"create": {"schema": "demo.Company", "id": "b-proto", "data": {"name": "P"}}}, "constructor": {"create": {"schema": "demo.Company", "id": "b-ctor", "data": {"name": "C"}}}}}}');
      expect(res.status, res.text).to.equal(200);
      expect(JSON.parse(res.text)).to.have.all.keys('__proto__', 'constructor');
      expect(res.text).to.contain('"__proto__":{"id":"b-proto","version":1,"name":"P"}');
      expect(res.json.constructor).to.deep.equal({ id: 'b-ctor', version: 1, name: 'C' });
    });

    it('maps each caller-chosen action name to its result', async () => {
      const res = await post({
        batch: {
          actions: {
            company: { create: { schema: 'demo.Company', id: 'b-co', data: { name: 'Batch Co' } } },
            worker: { create: { schema: 'demo.Person', id: 'b-p', data: person({ employer: { id: 'b-co' } }) } },
          },
        },
      });
      expect(res.status).to.equal(200);
      expect(Object.keys(res.json)).to.deep.equal(['company', 'worker']);
      expect(res.json.company).to.include({ id: 'b-co', version: 1 });
      expect(res.json.worker).to.include({ id: 'b-p', version: 1 });
    });

    for (const consistency of [undefined, 'ATOMIC', 'ATOMIC_ALL']) {
      it(`writes nothing when one action fails under ${consistency ?? 'the PostgreSQL default (ATOMIC)'}`, async () => {
        await post({ create: { schema: 'demo.Company', id: `taken-${consistency}`, data: { name: 'Taken' } } });
        const c = consistency ? { consistency } : {};
        const res = await post({
          batch: {
            actions: {
              first: { create: { schema: 'demo.Company', id: `new-${consistency}`, data: { name: 'New' }, ...c } },
              clash: { create: { schema: 'demo.Company', id: `taken-${consistency}`, data: { name: 'Clash' }, ...c } },
            },
          },
        });
        expect(res.status).to.equal(409);
        expect(res.json.error.code).to.equal('RECORD_EXISTS');
        expect(res.json.error.details[0]).to.include({ action: 'clash' });
        expect(await count([`new-${consistency}`])).to.equal(0);
      });
    }

    for (const consistency of ['EVENTUAL', 'QUORUM']) {
      it(`commits the other actions under ${consistency} and reports each outcome`, async () => {
        await post({ create: { schema: 'demo.Company', id: `taken-${consistency}`, data: { name: 'Taken' } } });
        const res = await post({
          batch: {
            actions: {
              ok: { create: { schema: 'demo.Company', id: `ok-${consistency}`, data: { name: 'Ok' }, consistency } },
              clash: { create: { schema: 'demo.Company', id: `taken-${consistency}`, data: { name: 'Clash' }, consistency } },
            },
          },
        });
        expect(res.status).to.equal(207);
        expect(res.json.ok).to.include({ id: `ok-${consistency}`, version: 1 });
        expect(res.json.clash.status).to.equal(409);
        expect(res.json.clash.error.code).to.equal('RECORD_EXISTS');
        expect(await count([`ok-${consistency}`])).to.equal(1);
      });
    }

    it('commits at the weakest level asked for: one EVENTUAL action makes the batch non-atomic', async () => {
      await post({ create: { schema: 'demo.Company', id: 'taken-mixed', data: { name: 'Taken' } } });
      const res = await post({
        batch: {
          actions: {
            a: { create: { schema: 'demo.Company', id: 'mixed-a', data: { name: 'A' }, consistency: 'ATOMIC' } },
            b: { create: { schema: 'demo.Company', id: 'taken-mixed', data: { name: 'B' }, consistency: 'EVENTUAL' } },
          },
        },
      });
      expect(res.status).to.equal(207);
      expect(await count(['mixed-a'])).to.equal(1);
    });

    it('answers 202 for ASYNC and writes in the background', async () => {
      const res = await post({ create: { schema: 'demo.Company', id: 'async-co', data: { name: 'Later' }, consistency: 'ASYNC' } });
      expect(res.status).to.equal(202);
      expect(res.json).to.include({ accepted: true, id: 'async-co' });
      await dp.dataPlane.engine.drain();
      const got = await api({ path: '/demo/demo.Company/async-co' });
      expect(got.json).to.deep.equal({ id: 'async-co', version: 1, name: 'Later' });
    });

    it('answers 400 for an unknown consistency value, naming where it is', async () => {
      const res = await post({ create: { schema: 'demo.Company', data: { name: 'X' }, consistency: 'SOMETIMES' } });
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_CONSISTENCY');
      expect(res.json.error.details[0].path).to.equal('$.create.consistency');
    });
  });

  describe('errors', () => {
    const expectError = (res: { status: number; json: any; headers: Record<string, unknown>; text: string }, status: number, code: string) => {
      expect(res.status, res.text).to.equal(status);
      expect(res.json.error.code).to.equal(code);
      expect(res.json.error.message).to.be.a('string').and.not.empty;
      expect(res.json.requestId).to.match(UUID);
      expect(res.headers['x-request-id']).to.equal(res.json.requestId);
      expect(res.text).to.not.match(/at .*\.(ts|js):\d+/); // no stack trace
    };

    it('400 for malformed JSON', async () => {
      expectError(await post('{"create": {'), 400, 'MALFORMED_JSON');
    });
    it('400 for a body without exactly one known wrapper key', async () => {
      expectError(await post({}), 400, 'INVALID_BODY');
      expectError(await post({ read: { schema: 'demo.Person', id: 'x' }, delete: { schema: 'demo.Person', id: 'x' } }), 400, 'INVALID_BODY');
      expectError(await post({ upsert: {} }), 400, 'INVALID_BODY');
      expectError(await post([1, 2]), 400, 'INVALID_BODY');
      expectError(await post('null'), 400, 'INVALID_BODY');
    });
    it('400 naming a missing or unknown action field', async () => {
      const missing = await post({ create: { schema: 'demo.Person' } });
      expectError(missing, 400, 'MISSING_FIELD');
      expect(missing.json.error.details[0].path).to.equal('$.create.data');
      expectError(await post({ create: { schema: 'demo.Person', data: {}, colour: 'red' } }), 400, 'UNKNOWN_FIELD');
    });
    it('400 naming the property for a type error', async () => {
      const res = await post({ create: { schema: 'demo.Person', data: person({ age: 'thirty' }) } });
      expectError(res, 400, 'INVALID_RECORD');
      expect(res.json.error.details[0].path).to.equal('$.create.data.age');
      const nested = await post({ create: { schema: 'demo.Person', data: person({ address: { postcode: 12 } }) } });
      expect(nested.json.error.details[0].path).to.equal('$.create.data.address.postcode');
      const unknown = await post({ create: { schema: 'demo.Person', data: person({ shoeSize: 9 }) } });
      expectError(unknown, 400, 'INVALID_RECORD');
      expect(unknown.json.error.message).to.contain('shoeSize');
      const link = await post({ create: { schema: 'demo.Person', data: person({ employer: 'acme' }) } });
      expect(link.json.error.details[0].path).to.equal('$.create.data.employer');
    });
    it('400 for an integer beyond the exact range', async () => {
      expectError(await post({ create: { schema: 'demo.Person', data: person({ age: 2 ** 60 }) } }), 400, 'INVALID_RECORD');
    });
    it('404 for an unknown dataset, schema or record', async () => {
      expectError(await api({ path: '/nope/demo.Person/x' }), 404, 'DATASET_NOT_FOUND');
      expectError(await api({ path: '/demo/demo.Nope/x' }), 404, 'SCHEMA_NOT_FOUND');
      expectError(await post({ create: { schema: 'demo.Nope', data: {} } }), 404, 'SCHEMA_NOT_FOUND');
      expectError(await api({ path: '/demo/demo.Person/nobody-here' }), 404, 'RECORD_NOT_FOUND');
      // Names of Object's own properties are schemas like any other: unknown here.
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        expectError(await api({ path: `/demo/${name}/x` }), 404, 'SCHEMA_NOT_FOUND');
        expectError(await post({ read: { schema: name, id: 'x' } }), 404, 'SCHEMA_NOT_FOUND');
        expectError(await post({ create: { schema: name, data: {} } }), 404, 'SCHEMA_NOT_FOUND');
      }
    });
    it('409 for a create with an existing id', async () => {
      await post({ create: { schema: 'demo.Company', id: 'dup', data: { name: 'One' } } });
      expectError(await post({ create: { schema: 'demo.Company', id: 'dup', data: { name: 'Two' } } }), 409, 'RECORD_EXISTS');
    });
    it('413 for a body that is too large', async () => {
      const big = { create: { schema: 'demo.Company', data: { name: 'x'.repeat(2 * 1024 * 1024) } } };
      expectError(await post(big), 413, 'BODY_TOO_LARGE');
    });
    it('415 for a body that is not JSON', async () => {
      expectError(await post('name=x', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectError(await post('{}', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    });
    it('405 for a method an endpoint does not take', async () => {
      const res = await api({ method: 'DELETE', path: '/demo/demo.Person/x' });
      expectError(res, 405, 'METHOD_NOT_ALLOWED');
      expect(res.headers.allow).to.equal('GET,HEAD');
    });
    it('400 for an unknown query parameter or a bad version', async () => {
      expectError(await api({ path: '/demo/demo.Person/x?expnad=employer' }), 400, 'UNKNOWN_PARAMETER');
      expectError(await api({ path: '/demo/demo.Person/x?version=0' }), 400, 'INVALID_PARAMETER');
      // Versions are 32-bit: one past the largest is refused by the API, not by the database.
      expectError(await api({ path: `/demo/demo.Person/x?version=${2 ** 31}` }), 400, 'INVALID_PARAMETER');
      expectError(await api({ path: '/demo/demo.Person/x?version=9999999999' }), 400, 'INVALID_PARAMETER');
      expectError(await api({ path: `/demo/demo.Person/x?version=${2 ** 31 - 1}` }), 404, 'RECORD_NOT_FOUND');
      const tooHigh = await post({ read: { schema: 'demo.Person', id: 'x', version: 2 ** 31 } });
      expectError(tooHigh, 400, 'INVALID_FIELD');
      expect(tooHigh.json.error.details[0].path).to.equal('$.read.version');
      expectError(await post({ read: { schema: 'demo.Person', id: 'x', version: 1.5 } }), 400, 'INVALID_FIELD');
      expectError(await post({ read: { schema: 'demo.Person', id: 'x', version: 2 ** 31 - 1 } }), 404, 'RECORD_NOT_FOUND');
      // A read's consistency is one of the levels (PostgreSQL reads the latest commit at every level).
      const badLevel = await api({ path: '/demo/demo.Person/x?consistency=SOMETIMES' });
      expectError(badLevel, 400, 'INVALID_CONSISTENCY');
      expect(badLevel.json.error.details[0].path).to.equal('query:consistency');
      expectError(await api({ path: '/demo/demo.Person/x?consistency=EVENTUAL' }), 404, 'RECORD_NOT_FOUND');
    });
    it('400 for an id holding a NUL character, on reads and writes alike', async () => {
      const read = await post({ read: { schema: 'demo.Person', id: 'a\u0000b' } });
      expectError(read, 400, 'INVALID_FIELD');
      expect(read.json.error.details[0].path).to.equal('$.read.id');
      expectError(await post({ create: { schema: 'demo.Company', id: 'a\u0000b', data: { name: 'N' } } }), 400, 'INVALID_FIELD');
      expectError(await post({ delete: { schema: 'demo.Company', id: '\u0000' } }), 400, 'INVALID_FIELD');
      const batch = await post({ batch: { actions: { ok: { create: { schema: 'demo.Company', id: 'nul-ok', data: { name: 'N' } } }, bad: { create: { schema: 'demo.Company', id: 'x\u0000', data: { name: 'N' } } } } } });
      expect(batch.status).to.equal(400);
      expectError(await api({ path: '/demo/demo.Company/nul-ok' }), 404, 'RECORD_NOT_FOUND');
    });
    it('401 without credentials and 403 for a principal the dataset does not allow', async () => {
      const anon = client(dp.url, { host: 'iam.example.test' });
      expectError(await anon({ path: '/demo/demo.Person/x' }), 401, 'MISSING_CREDENTIALS');
      const stranger = client(dp.url, { host: 'iam.example.test', headers: { authorization: 'Proxy someone-else' } });
      expectError(await stranger({ path: '/demo/demo.Person/x' }), 403, 'PRINCIPAL_NOT_ALLOWED');
    });
  });

  describe('operations basics', () => {
    it('puts x-request-id on every response and keeps a caller-supplied UUID', async () => {
      const own = '3f0c2d5e-8a4b-4c1d-9e2f-0a1b2c3d4e5f';
      const res = await api({ path: '/demo/demo.Person/ada', headers: { 'x-request-id': own } });
      expect(res.headers['x-request-id']).to.equal(own);
      const health = await api({ path: '/healthz' });
      expect(health.headers['x-request-id']).to.match(UUID);
      const notUuid = await api({ path: '/healthz', headers: { 'x-request-id': 'not-a-uuid' } });
      expect(notUuid.headers['x-request-id']).to.match(UUID);
    });

    it('reports liveness and readiness with each dataset state', async () => {
      expect((await api({ path: '/healthz' })).json).to.deep.equal({ status: 'ok' });
      const ready = await api({ path: '/readyz' });
      expect(ready.status).to.equal(200);
      expect(ready.json.datasets.demo.status).to.equal('ready');
    });
  });

  describe("a dataset's default consistency (spec.location.defaultConsistency)", () => {
    let eventual: TestDataPlane;
    let eventualPost: (body: unknown) => ReturnType<typeof api>;

    before(async () => {
      const manifests = mkdtempSync(join(tmpdir(), 'das-eventual-'));
      cpSync(resolve(import.meta.dirname, '../../examples'), manifests, { recursive: true });
      const demo = join(manifests, 'dataset-demo.yaml');
      writeFileSync(demo, readFileSync(demo, 'utf8').replace(/^  location:\n/m, '  location:\n    defaultConsistency: EVENTUAL\n'));
      eventual = await startTestDataPlane({ manifests });
      const eventualApi = client(eventual.url, { host: 'iam.example.test', headers: { authorization: 'Proxy demo-admin' } });
      eventualPost = (body) => eventualApi({ method: 'POST', path: '/demo', body });
    });
    after(async () => eventual?.stop());

    it('applies to batch actions that name none: under EVENTUAL the others commit and each outcome is reported', async () => {
      expect((await eventualPost({ create: { schema: 'demo.Company', id: 'dc-taken', data: { name: 'Taken' } } })).status).to.equal(201);
      const res = await eventualPost({
        batch: {
          actions: {
            ok: { create: { schema: 'demo.Company', id: 'dc-ok', data: { name: 'Ok' } } },
            clash: { create: { schema: 'demo.Company', id: 'dc-taken', data: { name: 'Clash' } } },
          },
        },
      });
      expect(res.status).to.equal(207);
      expect(res.json.clash.error.code).to.equal('RECORD_EXISTS');
      expect((await eventualPost({ read: { schema: 'demo.Company', id: 'dc-ok' } })).json).to.deep.equal({ id: 'dc-ok', version: 1, name: 'Ok' });
    });

    it('is only a default: an action that asks for ATOMIC still gets all or nothing', async () => {
      const res = await eventualPost({
        batch: {
          actions: {
            fresh: { create: { schema: 'demo.Company', id: 'dc-fresh', data: { name: 'Fresh' }, consistency: 'ATOMIC' } },
            clash: { create: { schema: 'demo.Company', id: 'dc-taken', data: { name: 'Clash' }, consistency: 'ATOMIC' } },
          },
        },
      });
      expect(res.status).to.equal(409);
      expect((await eventualPost({ read: { schema: 'demo.Company', id: 'dc-fresh' } })).status).to.equal(404);
    });
  });
});
