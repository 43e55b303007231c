/**
 * boto3's Lambda client against the function gateway process (main.ts, DAS_MODE=function-gateway),
 * which reads its access keys from the Environment in DAS_MANIFESTS (files mode) and the secret
 * access key from DAS_SECRETS_DIR/<name>/<key>. boto3 lives in the Python peers' venv
 * (DAS_PYTHON_PEERS, default ~/.cache/data-access-python).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { freePort } from '../src/db/embedded.js';
import { EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';
import { startMain, stopMain, waitReady, type MainProcess } from '../test-support/main-process.js';

const FUNCTION = 'service-local-function-service-gateway';
const KEY = { accessKeyId: 'AKIDBOTOADMIN0000001', secretAccessKey: 'boto-secret/key+1' };
const PYTHON = join(process.env.DAS_PYTHON_PEERS || join(homedir(), '.cache', 'data-access-python'), 'bin', 'python');
const SCRIPT = resolve(import.meta.dirname, '../test-support/lambda-boto3.py');

describe('Lambda Invoke API with boto3 (function gateway process, keys from DAS_MANIFESTS)', function () {
  this.timeout(90000);
  let dp: TestDataPlane;
  let gateway: MainProcess | undefined;
  let url: string;

  before(async function () {
    if (!existsSync(PYTHON)) {
      // eslint-disable-next-line no-console
      console.warn(`SKIPPED: boto3's Python (${PYTHON}) is missing; create it with scripts/python-peers/install.sh or set DAS_PYTHON_PEERS`);
      this.skip();
    }
    const manifests = mkdtempSync(join(tmpdir(), 'das-lambda-manifests-'));
    const environment = parse(readFileSync(join(EXAMPLES_DIR, 'environment.yaml'), 'utf8'));
    environment.spec.functionGateway = { enabled: true, accessKeys: [{ name: 'demo-admin', accessKeyId: KEY.accessKeyId, secretRef: { name: 'lambda-keys', key: 'demo-admin' } }] };
    writeFileSync(join(manifests, 'environment.yaml'), stringify(environment));
    const secrets = mkdtempSync(join(tmpdir(), 'das-lambda-secrets-'));
    mkdirSync(join(secrets, 'lambda-keys'));
    writeFileSync(join(secrets, 'lambda-keys', 'demo-admin'), `${KEY.secretAccessKey}\n`);
    dp = await startTestDataPlane();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    gateway = startMain({ DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: dp.url, DAS_FUNCTION_NAME: FUNCTION, DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secrets, PORT: String(port), HOST: '127.0.0.1' });
    await waitReady(url, gateway);
  });
  after(async () => {
    await stopMain(gateway);
    await dp?.stop();
  });

  it('create, read by ARN, Event, DryRun, a wrong key and an unknown function, as boto3 sees them', async () => {
    const { stdout } = await promisify(execFile)(PYTHON, [SCRIPT, url, FUNCTION, KEY.accessKeyId, KEY.secretAccessKey], { timeout: 60000 });
    const out = JSON.parse(stdout);
    expect(out.create).to.deep.equal({ status: 200, executed: '$LATEST', functionError: null, payload: { data: { id: 'boto-co', version: 1, name: 'Boto Co' }, status: { code: 201 } } });
    expect(out.read).to.deep.equal({ status: 200, executed: '$LATEST', functionError: null, payload: { data: { id: 'boto-co', version: 1, name: 'Boto Co' }, status: { code: 200 } } });
    expect(out.event).to.include({ status: 202, payload: null });
    expect(out.dryRun).to.include({ status: 204, payload: null });
    expect(out.wrongKey).to.include({ error: 'InvalidSignatureException', http: 403 });
    expect(out.unknownFunction).to.include({ error: 'ResourceNotFoundException', http: 404, message: `Function not found: no-such-function (this gateway serves ${FUNCTION})` });

    // Through the gateway's own endpoint: the Event's record arrives, the dry run's never does.
    const get = (id: string) => call(url, { path: '/', body: { operation: 'get', dataset: { id: 'demo' }, schema: 'demo.Company', id } });
    let event = await get('boto-event-co');
    while (event.json.status.code === 404) {
      await new Promise((r) => setTimeout(r, 20));
      event = await get('boto-event-co');
    }
    expect(event.json).to.deep.equal({ data: { id: 'boto-event-co', version: 1, name: 'Event Co' }, status: { code: 200 } });
    expect((await get('boto-dry-co')).json.status.code).to.equal(404);
  });
});
